#include "load/report.hpp"

#include "outage/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace modelproxy::load {

namespace {

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

// Seconds of the timeline: whole ones plainly, a scaled run's with their fraction.
std::string seconds(double ms) {
    std::string s = fixed(ms / 1000, 2);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
}

bool inside(double at, double from, double to) { return at >= from && at < to; }

std::size_t sent_in(const std::vector<Turn>& turns, double from, double to) {
    return static_cast<std::size_t>(
        std::count_if(turns.begin(), turns.end(), [&](const Turn& t) { return inside(t.due_ms, from, to); }));
}

std::size_t ok_in(const std::vector<Turn>& turns, double from, double to) {
    return static_cast<std::size_t>(
        std::count_if(turns.begin(), turns.end(), [&](const Turn& t) { return t.ok && inside(t.end_ms, from, to); }));
}

// Attempts that arrived in [from, to): all of them, or those given `status`.
std::size_t arrived_in(const std::vector<Attempt>& attempts, double from, double to, unsigned status = 0) {
    return static_cast<std::size_t>(std::count_if(attempts.begin(), attempts.end(), [&](const Attempt& a) {
        return inside(a.arrive_ms, from, to) && (status == 0 || a.status == status);
    }));
}

double ratio(std::size_t a, std::size_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0; }

const char* verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

constexpr double kGoodputShare = 0.95;      // of R, over the adapted window
constexpr double kShare429 = 0.05;          // of the attempts in the tails
constexpr double kOutagePerTurn = 1.2;      // attempts per turn sent during the outage
constexpr double kRecoveryS = 10;           // seconds from the recovery
constexpr double kRecoveredShare = 0.95;    // of the pre-outage goodput ...
constexpr int kRecoveredRun = 3;            // ... for this many seconds in a row

}  // namespace

std::vector<std::size_t> goodput_per_second(const std::vector<Turn>& turns, double from, double to) {
    std::vector<std::size_t> bins;
    for (double at = from; at + 1000 <= to; at += 1000) bins.push_back(ok_in(turns, at, at + 1000));
    return bins;
}

std::optional<double> back_at(const std::vector<std::size_t>& per_second, double level, int run) {
    int in_row = 0;
    for (std::size_t k = 0; k < per_second.size(); ++k) {
        in_row = static_cast<double>(per_second[k]) >= level ? in_row + 1 : 0;
        if (in_row == run) return static_cast<double>(k + 1 - static_cast<std::size_t>(run));
    }
    return std::nullopt;
}

RowMetrics measure(const RowData& row) {
    RowMetrics m;
    const Timeline& tl = row.timeline;
    m.sent = sent_in(row.turns, 0, tl.total());
    m.ok = ok_in(row.turns, 0, tl.total());
    m.goodput = ratio(m.ok, 1) / (tl.total() / 1000);
    const double adapted_s = (tl.down_start() - tl.settle_ms) / 1000;
    m.goodput_adapted = adapted_s > 0 ? ratio(ok_in(row.turns, tl.settle_ms, tl.down_start()), 1) / adapted_s : 0;
    m.upstream_429 = arrived_in(row.attempts, 0, tl.total(), 429);
    m.per_ok_429 = ratio(m.upstream_429, m.ok);
    const double before_from = tl.down_start() - tl.tail_ms, after_from = tl.total() - tl.tail_ms;
    const std::size_t before = arrived_in(row.attempts, before_from, tl.down_start());
    const std::size_t after = arrived_in(row.attempts, after_from, tl.total());
    const std::size_t before_429 = arrived_in(row.attempts, before_from, tl.down_start(), 429);
    const std::size_t after_429 = arrived_in(row.attempts, after_from, tl.total(), 429);
    m.share_429_before = ratio(before_429, before);
    m.share_429_after = ratio(after_429, after);
    m.share_429 = ratio(before_429 + after_429, before + after);
    m.outage_attempts = arrived_in(row.attempts, tl.down_start(), tl.down_end());
    m.outage_sent = sent_in(row.turns, tl.down_start(), tl.down_end());
    m.outage_per_turn = ratio(m.outage_attempts, m.outage_sent);
    m.p50_ms = outage::latency_quantile(row.turns, 0.5);
    m.p99_ms = outage::latency_quantile(row.turns, 0.99);
    if (m.goodput_adapted > 0)
        m.recovery_s = back_at(goodput_per_second(row.turns, tl.down_end(), tl.total()),
                               kRecoveredShare * m.goodput_adapted, kRecoveredRun);
    return m;
}

std::string summary_table(const std::vector<RowData>& rows, const ReportContext& c, bool& all_pass) {
    const Timeline tl = Timeline::scaled(c.scale);
    const std::string adapted = seconds(tl.settle_ms) + ".." + seconds(tl.down_start()) + " s";
    const std::string tails = seconds(tl.down_start() - tl.tail_ms) + ".." + seconds(tl.down_start()) + " s and " +
                              seconds(tl.total() - tl.tail_ms) + ".." + seconds(tl.total()) + " s";
    std::string out;
    out += "| row | goodput, run (turns/s) | goodput, " + adapted + " | upstream 429s per ok turn | 429 share of "
           "attempts, " + tails + " | upstream attempts per turn, outage | p50 / p99 latency | back to pre-outage "
           "goodput after the recovery |\n";
    out += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& row : rows) {
        const std::string name(to_string(row.kind));
        if (!row.not_started.empty()) {
            out += "| " + name + " | not started (see below) | | | | | | |\n";
            continue;
        }
        const RowMetrics m = measure(row);
        const bool target = row.kind == RowKind::pacing;
        const auto judged = [&](std::string text, bool pass) {
            if (!target) return text;
            all_pass = all_pass && pass;
            return text + " " + verdict(pass);
        };
        std::string cells = "| " + name + " | ";
        cells += fixed(m.goodput, 1) + " (" + std::to_string(m.ok) + " of " + std::to_string(m.sent) + " turns ok) | ";
        cells += judged(fixed(m.goodput_adapted, 1) + " (" + fixed(100 * m.goodput_adapted / c.rate, 1) + " % of R)",
                        m.goodput_adapted >= kGoodputShare * c.rate) + " | ";
        cells += fixed(m.per_ok_429, 2) + " | ";
        cells += judged(fixed(100 * m.share_429, 1) + " % (" + fixed(100 * m.share_429_before, 1) + " %, " +
                            fixed(100 * m.share_429_after, 1) + " %)",
                        m.share_429 <= kShare429) + " | ";
        cells += judged(fixed(m.outage_per_turn, 2) + " (" + std::to_string(m.outage_attempts) + " / " +
                            std::to_string(m.outage_sent) + ")",
                        m.outage_per_turn <= kOutagePerTurn) + " | ";
        cells += fixed(m.p50_ms, 0) + " / " + fixed(m.p99_ms, 0) + " ms | ";
        if (m.recovery_s)
            cells += judged(fixed(*m.recovery_s, 0) + " s", *m.recovery_s <= kRecoveryS) + " |\n";
        else
            cells += judged("not within the run", false) + " |\n";
        out += cells;
    }
    out += "\nTargets (row \"budget+admission+pacing\"): goodput over " + adapted + " >= " +
           fixed(100 * kGoodputShare, 0) + " % of R (" + fixed(kGoodputShare * c.rate, 1) + " turns/s); <= " +
           fixed(100 * kShare429, 0) + " % of the attempts over " + tails + " answered 429; <= " +
           fixed(kOutagePerTurn, 1) + " upstream attempts per turn sent during the outage; goodput back to its "
           "pre-outage level within " + fixed(kRecoveryS, 0) + " s of the recovery. (The windows scale with the "
           "timeline; the seconds of the last target do not: the proxy's own times are its defaults.)\n";
    out += "\nHow: " + std::to_string(c.callers) + " closed-loop callers, each on one keep-alive connection to the "
           "proxy, each sending a turn, reading its answer and sending the next, " +
           (c.stream ? "streamed" : "not streamed") + " (POST /v1/chat/completions); a turn is ok when it is a 200 "
           "carrying the whole answer. The fake provider admits R = " + fixed(c.rate, 0) + " requests/s as " +
           fixed(c.rate * c.window_ms / 1000, 0) + " per fixed " + fixed(c.window_ms, 0) + " ms window, answers an "
           "admitted one 200 after " + fixed(0.5 * c.service_ms, 0) + ".." + fixed(1.5 * c.service_ms, 0) +
           " ms (uniform) and one above the window's count 429 at once "
           "(Retry-After: 1); both carry x-ratelimit-limit-requests (the window's count), "
           "x-ratelimit-remaining-requests and x-ratelimit-reset-requests (until the next window) as they are when "
           "the answer is written. From " + seconds(tl.down_start()) + " s to " + seconds(tl.down_end()) + " s it "
           "answers every request 503 at once, without those headers. Goodput: ok turns by when they ended, per "
           "second of the span. Attempts are the requests the provider read, by when they arrived; turns by when "
           "they were sent. Latency: every turn, failed ones and those still running at the end (read to their "
           "end) too. Back to pre-outage goodput: the first of " + std::to_string(kRecoveredRun) + " whole seconds "
           "in a row, counted from the recovery, each with at least " + fixed(100 * kRecoveredShare, 0) + " % of "
           "the goodput over " + adapted + ".\n";
    return out;
}

std::string row_details(const RowData& row) {
    std::string out = "### " + std::string(to_string(row.kind)) + "\n\n";
    if (!row.not_started.empty()) return out + "Not started:\n\n```\n" + row.not_started + "```\n";
    out += "| s | provider | turns sent | ok done | failed done | attempts | 200 | 429 | 503 |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    const int whole = static_cast<int>(std::ceil(row.end_ms / 1000));
    for (int s = 0; s < whole; ++s) {
        const double from = s * 1000.0, to = from + 1000;
        std::size_t failed = 0;
        for (const auto& t : row.turns) failed += !t.ok && inside(t.end_ms, from, to);
        const auto phase = [&](double at) {
            return at >= row.timeline.total() ? "drain" : row.timeline.down(at) ? "503" : "rate-limited";
        };
        const std::string first = phase(from), last = phase(to - 0.001);
        const std::string state = first == last ? first : first + " / " + last;
        out += "| " + std::to_string(s) + " | " + state + " | " + std::to_string(sent_in(row.turns, from, to)) +
               " | " + std::to_string(ok_in(row.turns, from, to)) + " | " + std::to_string(failed) + " | " +
               std::to_string(arrived_in(row.attempts, from, to)) + " | " +
               std::to_string(arrived_in(row.attempts, from, to, 200)) + " | " +
               std::to_string(arrived_in(row.attempts, from, to, 429)) + " | " +
               std::to_string(arrived_in(row.attempts, from, to, 503)) + " |\n";
    }
    std::map<std::string, std::size_t> causes;
    for (const auto& t : row.turns)
        if (!t.ok) ++causes[t.error];
    out += "\nFailed turns by cause:";
    if (causes.empty()) out += " none";
    for (const auto& [cause, n] : causes) out += " " + cause + " x" + std::to_string(n) + ";";
    const std::string exit = row.exit_code ? std::to_string(*row.exit_code) : std::string("no code (killed)");
    out += "\n\nThe proxy exited with " + exit + " after SIGTERM.\n";
    return out;
}

}  // namespace modelproxy::load
