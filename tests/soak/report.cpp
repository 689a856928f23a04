#include "soak/report.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>

namespace modelproxy::soak {

namespace {

void note(RecordCheck& c, const std::string& problem) {
    if (++c.problems <= 5) c.first_problems += "      " + problem + "\n";
}

double mib(std::int64_t kib) { return static_cast<double>(kib) / 1024.0; }

}  // namespace

RecordCheck check_records(const std::filesystem::path& log, std::uint64_t turns_issued,
                          std::vector<std::uint64_t> successes, std::vector<std::uint64_t> wrong,
                          std::vector<ResumeTurn> resumes) {
    RecordCheck c;
    std::ifstream in(log);
    if (!in) return c;
    c.readable = true;
    std::sort(successes.begin(), successes.end());
    std::sort(wrong.begin(), wrong.end());
    std::sort(resumes.begin(), resumes.end());
    const auto is_wrong = [&](std::uint64_t turn) { return std::binary_search(wrong.begin(), wrong.end(), turn); };
    // The resume a turn's records must show (none for most turns).
    const auto predicted = [&](std::uint64_t turn) {
        const auto it = std::lower_bound(resumes.begin(), resumes.end(), ResumeTurn{turn, 0, -1});
        return it != resumes.end() && it->turn == turn ? *it : ResumeTurn{turn, 0, -1};
    };
    const auto integer = [](const boost::json::object& o, std::string_view key) -> std::optional<std::int64_t> {
        const auto* v = o.if_contains(key);
        if (!v || !v->is_int64()) return std::nullopt;
        return v->as_int64();
    };
    std::vector<std::uint8_t> resume_attempts(turns_issued + 1, 0);
    std::vector<bool> seen(turns_issued + 1, false);
    std::string line;
    while (std::getline(in, line)) {
        boost::json::error_code ec;
        const boost::json::value doc = boost::json::parse(line, ec);
        if (ec || !doc.is_object()) {
            note(c, "unparseable record line: " + line.substr(0, 200));
            continue;
        }
        const auto& o = doc.as_object();
        const auto* event = o.if_contains("event");
        if (event && *event == "attempt") {
            ++c.attempt_records;
            const auto* id = o.if_contains("request_id");
            std::uint64_t turn = 0;
            if (!id || !id->is_string() || !parse_turn_id(id->as_string(), turn) || turn == 0 || turn > turns_issued ||
                is_wrong(turn))
                continue;
            const ResumeTurn want = predicted(turn);
            const auto* decision = o.if_contains("decision");
            if (decision && *decision == "resume") {
                ++c.resume_attempts;
                if (resume_attempts[turn] < 255) ++resume_attempts[turn];
            }
            // Every attempt of a turn whose cut a resume took over carries
            // the offset; no attempt of another turn has one.
            const auto offset = integer(o, "resume_offset");
            if (offset.has_value() != (want.offset >= 0) || (offset && *offset != want.offset))
                note(c, turn_id(turn) + " attempt with resume_offset " +
                            (offset ? std::to_string(*offset) : std::string("null")) + ", want " +
                            (want.offset >= 0 ? std::to_string(want.offset) : std::string("null")) + ": " +
                            line.substr(0, 300));
            continue;
        }
        if (!event || *event != "turn") continue;
        ++c.turn_records;
        const auto* id = o.if_contains("request_id");
        std::uint64_t turn = 0;
        if (!id || !id->is_string() || !parse_turn_id(id->as_string(), turn) || turn == 0 || turn > turns_issued) {
            note(c, "turn record of no issued turn: " + line.substr(0, 200));
            continue;
        }
        if (seen[turn]) note(c, "a second turn record for " + turn_id(turn));
        seen[turn] = true;
        const auto* outcome = o.if_contains("outcome");
        const bool ok = outcome && *outcome == "ok";
        const bool success = std::binary_search(successes.begin(), successes.end(), turn);
        if (ok != success && !is_wrong(turn))
            note(c, turn_id(turn) + (success ? " was answered with its success bytes but recorded "
                                             : " failed but is recorded ") + line.substr(0, 300));
        const auto resumed = integer(o, "resumed");
        if (resumed.value_or(0) > 0) ++c.resumed_turns;
        if (!is_wrong(turn) && resumed != predicted(turn).resumed)
            note(c, turn_id(turn) + " recorded resumed " + (resumed ? std::to_string(*resumed) : "(absent)") +
                        ", want " + std::to_string(predicted(turn).resumed) + ": " + line.substr(0, 300));
    }
    // One attempt with decision `resume` for each turn whose cut a resume took over.
    for (const ResumeTurn& r : resumes) {
        if (r.turn > turns_issued || is_wrong(r.turn)) continue;
        const int want = r.offset >= 0 ? 1 : 0;
        if (resume_attempts[r.turn] != want)
            note(c, turn_id(r.turn) + " has " + std::to_string(resume_attempts[r.turn]) +
                        " attempt records with decision resume, want " + std::to_string(want));
    }
    for (std::uint64_t turn = 1; turn <= turns_issued; ++turn)
        if (resume_attempts[turn] > 0 && predicted(turn).offset < 0 && !is_wrong(turn))
            note(c, turn_id(turn) + " has an attempt record with decision resume, but no resume was predicted");
    if (c.turn_records != turns_issued)
        note(c, std::to_string(c.turn_records) + " turn records for " + std::to_string(turns_issued) + " turns");
    return c;
}

bool print_summary(const Summary& s) {
    const ClientStats& st = s.stats;
    bool pass = true;
    std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%MZ", std::gmtime(&now));
    std::printf("modelproxy soak, %s, seed %llu%s\n", date, static_cast<unsigned long long>(s.seed),
                s.self_test ? ", SELF-TEST: one turn is answered with another turn's bytes" : "");
    std::printf("  load             %.1f min after a %.0f s warm-up; %d clients, fault rate %.0f %%, proxy workers %d\n",
                s.load_s / 60.0, s.warmup_s, s.clients, s.fault_rate * 100.0, s.workers);
    std::printf("  turns            %llu (stream %llu, plain %llu), %.1f turns/s\n",
                static_cast<unsigned long long>(st.turns), static_cast<unsigned long long>(st.stream_turns),
                static_cast<unsigned long long>(st.turns - st.stream_turns),
                s.active_s > 0 ? static_cast<double>(st.turns) / s.active_s : 0.0);
    std::printf("  turn duration    p50 %.2f ms, p99 %.2f ms (client side, faults included)\n",
                st.durations.quantile_ms(0.50), st.durations.quantile_ms(0.99));
    std::printf("  outcomes, as the clients saw them:\n");
    std::vector<std::pair<std::string, std::uint64_t>> outcomes(st.outcomes.begin(), st.outcomes.end());
    std::stable_sort(outcomes.begin(), outcomes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [label, n] : outcomes) std::printf("    %9llu  %s\n", static_cast<unsigned long long>(n), label.c_str());
    std::printf("  fault scripts drawn (turns per case):\n");
    for (const auto& [name, n] : s.per_case) {
        std::printf("    %9llu  %s\n", static_cast<unsigned long long>(n), name.c_str());
    }

    const auto verdict = [&](bool ok) {
        pass = pass && ok;
        return ok ? "ok" : "FAIL";
    };
    std::printf("  wrong outcomes   %llu  %s\n", static_cast<unsigned long long>(st.wrong), verdict(st.wrong == 0));
    for (const auto& w : st.first_wrong) std::printf("    - %s\n", w.what.c_str());
    std::printf("  cross-talk       %llu turns held another turn's id  %s\n",
                static_cast<unsigned long long>(st.crosstalk), verdict(st.crosstalk == 0));
    std::printf("  orphan requests  %llu upstream requests for no open turn  %s\n",
                static_cast<unsigned long long>(s.orphans), verdict(s.orphans == 0));
    std::printf("  free resends     %llu faults before a response byte on a reused upstream connection, re-sent at once "
                "and not counted as attempts (docs/behaviour.md section 4)\n",
                static_cast<unsigned long long>(s.free_resends));
    const RecordCheck& rc = s.records;
    const bool attempts_match = rc.attempt_records == st.attempts;
    std::printf("  records          %llu turn records for %llu turns, %llu attempt records for %llu attempts told, "
                "outcome ok iff success, %llu resume attempts and %llu resumed turns where predicted: %llu problems  %s\n",
                static_cast<unsigned long long>(rc.turn_records), static_cast<unsigned long long>(st.turns),
                static_cast<unsigned long long>(rc.attempt_records), static_cast<unsigned long long>(st.attempts),
                static_cast<unsigned long long>(rc.resume_attempts), static_cast<unsigned long long>(rc.resumed_turns),
                static_cast<unsigned long long>(rc.problems),
                verdict(rc.readable && rc.problems == 0 && (attempts_match || st.wrong > 0)));
    if (!rc.readable) std::printf("      the records log could not be read\n");
    std::printf("%s", rc.first_problems.c_str());

    // Section 16: what the proxy counted of each resume result against the
    // turns of the cases that predict it (read while the proxy still runs).
    if (s.ran_through) {
        std::printf("  resumes          modelproxy_resumes_total{route=\"%s\"} by result, each must equal its case's "
                    "turns (and 0 on the other routes):%s\n",
                    std::string(resume_route).c_str(), s.metrics_read ? "" : " /metrics could not be read  FAIL");
        pass = pass && s.metrics_read;
        for (const ResumeCount& r : s.resumes) {
            const bool ok = r.counted && *r.counted == static_cast<double>(r.turns) && r.elsewhere == 0;
            const std::string counted = r.counted ? std::to_string(static_cast<long long>(*r.counted)) : "(absent)";
            const std::string elsewhere =
                r.elsewhere == 0 ? "" : ", other routes " + std::to_string(static_cast<long long>(r.elsewhere));
            std::printf("    %9s  %-9s  %s %llu turns%s  %s\n", counted.c_str(), r.result.c_str(),
                        (r.cases.empty() ? std::string("(no case)") : r.cases).c_str(),
                        static_cast<unsigned long long>(r.turns), elsewhere.c_str(), verdict(ok));
        }
    }

    // fds: every fd the proxy holds besides its upstream connections (the
    // listener, event loops, the log, ...) must be back to the baseline
    // exactly; the idle upstream pool is bounded by the clients that could
    // have used it at once on each worker.
    const int base_own = s.baseline.fds - s.baseline.upstream;
    const int end_own = s.end.fds - s.end.upstream;
    const bool fds_ok = s.baseline.fds >= 0 && end_own == base_own && s.end.upstream <= s.clients * s.workers;
    std::printf("  open fds         start %d, baseline %d (%d upstream conns), end %d (%d upstream conns); "
                "without upstream conns %d -> %d, must be equal; pool <= %d  %s\n",
                s.cold.fds, s.baseline.fds, s.baseline.upstream, s.end.fds, s.end.upstream, base_own, end_own,
                s.clients * s.workers, verdict(fds_ok));
    // RSS: glibc keeps freed memory in per-thread arenas, so RSS does not
    // return byte for byte; a leak does not stop growing, though. Tolerance:
    // +max(4 MiB, 10 % of the baseline), i.e. a leak of more than
    // tolerance / turns bytes per turn fails.
    const std::int64_t tolerance = std::max<std::int64_t>(4096, s.baseline.rss_kib / 10);
    const bool rss_ok = s.baseline.rss_kib > 0 && s.end.rss_kib <= s.baseline.rss_kib + tolerance;
    std::printf("  RSS              start %.1f MiB, baseline %.1f MiB, end %.1f MiB, min/max during load %.1f/%.1f MiB; "
                "end <= baseline + %.1f MiB (a leak above %.0f bytes/turn fails)  %s\n",
                mib(s.cold.rss_kib), mib(s.baseline.rss_kib), mib(s.end.rss_kib), mib(s.rss_min_kib),
                mib(s.rss_max_kib), mib(tolerance),
                st.turns ? static_cast<double>(tolerance) * 1024.0 / static_cast<double>(st.turns) : 0.0,
                verdict(rss_ok));
    if (s.ran_through) {
        const std::string exited = s.exit_code ? "status " + std::to_string(*s.exit_code) : "none in 15 s";
        std::printf("  exit             %s after SIGTERM with no client connected, must be 0  %s\n", exited.c_str(),
                    verdict(s.exit_code == 0));
    }
    std::printf("  RESULT           %s\n", pass ? "PASS" : "FAIL");
    std::fflush(stdout);
    return pass;
}

}  // namespace modelproxy::soak
