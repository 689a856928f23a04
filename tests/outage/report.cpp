#include "outage/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace modelproxy::outage {

namespace {

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::size_t due_in(const std::vector<Turn>& turns, double from, double to) {
    return static_cast<std::size_t>(
        std::count_if(turns.begin(), turns.end(), [&](const Turn& t) { return t.due_ms >= from && t.due_ms < to; }));
}

std::size_t arrived_in(const std::vector<Served>& requests, double from, double to) {
    return static_cast<std::size_t>(std::count_if(requests.begin(), requests.end(), [&](const Served& r) {
        return r.arrive_ms >= from && r.arrive_ms < to;
    }));
}

double per_turn(const RowData& row, double from, double to) {
    const auto due = due_in(row.turns, from, to);
    return due ? static_cast<double>(arrived_in(row.primary, from, to)) / static_cast<double>(due) : 0;
}

const char* verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

}  // namespace

double latency_quantile(const std::vector<Turn>& turns, double q) {
    if (turns.empty()) return 0;
    std::vector<double> v;
    v.reserve(turns.size());
    for (const auto& t : turns) v.push_back(t.latency_ms());
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

int most_in_flight(const std::vector<Served>& requests, const std::vector<std::pair<double, double>>& windows,
                   double end_ms) {
    std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end); ends sort first at a tie
    for (const auto& r : requests) {
        const bool inside = std::any_of(windows.begin(), windows.end(), [&](const auto& w) {
            return r.arrive_ms >= w.first && r.arrive_ms < w.second;
        });
        if (!inside) continue;
        edges.emplace_back(r.arrive_ms, +1);
        edges.emplace_back(r.end_ms.value_or(end_ms), -1);
    }
    std::sort(edges.begin(), edges.end());
    int now = 0, most = 0;
    for (const auto& e : edges) most = std::max(most, now += e.second);
    return most;
}

std::vector<std::pair<double, double>> breaker_windows(const std::vector<BreakerEvent>& events,
                                                       std::string_view route, double end_ms) {
    std::vector<std::pair<double, double>> windows;
    bool closed = true;
    double since = 0;  // when it was last left closed
    for (const auto& e : events) {
        if (e.route != route) continue;
        if (e.to != "closed" && closed) since = e.at_ms, closed = false;
        if (e.to == "closed" && !closed) {
            windows.emplace_back(since, e.at_ms);
            closed = true;
        }
    }
    if (!closed) windows.emplace_back(since, end_ms);
    return windows;
}

RowMetrics measure(const RowData& row) {
    RowMetrics m;
    const Timeline& tl = row.timeline;
    m.offered = row.turns.size();
    m.ok = static_cast<std::size_t>(
        std::count_if(row.turns.begin(), row.turns.end(), [](const Turn& t) { return t.ok; }));
    m.success_pct = m.offered ? 100.0 * static_cast<double>(m.ok) / static_cast<double>(m.offered) : 0;
    m.outage_per_turn = per_turn(row, tl.down_start(), tl.down_end());
    m.first_phase_per_turn = per_turn(row, tl.down_start(), tl.down_start() + tl.phase_ms);
    for (const auto& e : row.breaker)
        if (e.route == "primary" && e.to == "open" && e.at_ms >= tl.down_start() && e.at_ms < tl.down_end()) {
            m.open_at_ms = e.at_ms;
            break;
        }
    if (m.open_at_ms) {
        const double from = *m.open_at_ms, to = tl.down_end(), seconds = (to - from) / 1000;
        m.open_per_turn = per_turn(row, from, to);
        m.open_rate = static_cast<double>(arrived_in(row.primary, from, to)) / seconds;
        m.open_rate_limit =
            std::max(1.0 / row.scale, 0.05 * static_cast<double>(due_in(row.turns, from, to)) / seconds);
    }
    m.p99_ms = latency_quantile(row.turns, 0.99);
    for (const auto& r : row.primary)
        if (r.arrive_ms >= tl.down_end() && r.status == 200 && r.end_ms) {
            m.recovery_s = (*r.end_ms - tl.down_end()) / 1000;
            break;
        }
    const auto windows = breaker_windows(row.breaker, "primary", row.end_ms);
    if (!windows.empty()) m.most_probes = most_in_flight(row.primary, windows, row.end_ms);
    return m;
}

std::string summary_table(const std::vector<RowData>& rows, const ReportContext& c, bool& all_pass) {
    // The targets' own times scale with the run (one second at scale 1).
    const double max_open_s = static_cast<double>(scaled_ms(RowTimes::max_open, c.scale)) / 1000;
    const double second = c.scale;
    const double phase_s = Timeline::scaled(c.scale).phase_ms / 1000;
    std::string out;
    out += "| row | turns ok | primary attempts per turn, outage | same, its first " + fixed(phase_s, 1) +
           " s | same, once the breaker opened | p99 added latency | back on the primary after its recovery | "
           "most probes at once |\n";
    out += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& row : rows) {
        const std::string name(to_string(row.kind));
        if (!row.not_started.empty()) {
            out += "| " + name + " | did not start (see below) | | | | | | |\n";
            continue;
        }
        const RowMetrics m = measure(row);
        const bool target = row.kind == RowKind::breaker;
        const auto judged = [&](std::string text, bool pass) {
            if (!target) return text;
            all_pass = all_pass && pass;
            return text + " " + verdict(pass);
        };
        std::string cells = "| " + name + " | ";
        cells += judged(fixed(m.success_pct, 2) + " % (" + std::to_string(m.ok) + "/" + std::to_string(m.offered) + ")",
                        m.success_pct >= 99.5) + " | ";
        cells += fixed(m.outage_per_turn, 2) + " | ";
        cells += judged(fixed(m.first_phase_per_turn, 2), m.first_phase_per_turn <= 1.2) + " | ";
        if (m.open_per_turn)
            cells += judged(fixed(*m.open_per_turn, 3) + " (" + fixed(*m.open_rate, 2) + "/s, from " +
                                fixed((*m.open_at_ms - row.timeline.down_start()) / 1000, 2) + " s into the outage)",
                            *m.open_rate <= *m.open_rate_limit) + " | ";
        else
            cells += judged("n/a", false) + " | ";
        cells += "+" + fixed(m.p99_ms - c.direct_p99_ms, 0) + " ms (p99 " + fixed(m.p99_ms, 0) + " ms) | ";
        if (m.recovery_s)
            cells += judged(fixed(*m.recovery_s, 2) + " s", *m.recovery_s <= max_open_s + second) + " | ";
        else
            cells += judged("never", false) + " | ";
        if (m.most_probes)
            cells += judged(std::to_string(*m.most_probes), *m.most_probes <= kProbes) + " |\n";
        else
            cells += judged("n/a", false) + " |\n";
        out += cells;
    }
    out += "\nTargets (row \"fallback and breaker\"): >= 99.5 % of turns ok; <= 1.2 primary attempts per turn over "
           "the outage's first " + fixed(phase_s, 1) + " s; once the breaker opened, <= max(1 per " +
           fixed(second, 2) + " s, 5 % of the turns due) primary attempts; back on the primary within max_open_ms + " +
           fixed(second, 2) + " s (" + fixed(max_open_s + second, 2) + " s) of its recovery; never more than probes (" +
           std::to_string(kProbes) + ") probes at once. (At scale 1 the seconds are seconds; a scaled run scales "
           "them with its timeline.)\n";
    out += "\nHow: " + fixed(c.rate, 0) + " turns/s open-loop, each on its own connection, " +
           (c.stream ? "streamed" : "not streamed") + " (POST /v1/chat/completions); a turn is ok when it is a 200 "
           "carrying the whole answer. Primary attempts are the requests the primary read, counted by when they "
           "arrived, per turn due in the same span. \"Once the breaker opened\" runs from the proxy's first breaker "
           "record with to=open (timed when the driver read it) to the primary's recovery. p99 added latency is the "
           "p99 of every turn's latency (failed ones too) minus the p99 of the same load sent straight to a healthy "
           "upstream (" + fixed(c.direct_p99_ms, 1) + " ms). Back on the primary: from its recovery to the end of the "
           "first 200 it wrote. Most probes at once: the most requests the primary held at once among those that "
           "arrived while its breaker was open or half-open (by the breaker records); n/a without breaker records.\n";
    return out;
}

std::string row_details(const RowData& row) {
    std::string out = "### " + std::string(to_string(row.kind)) + "\n\n";
    if (!row.not_started.empty()) return out + "Did not start:\n\n```\n" + row.not_started + "```\n";
    out += "| s | primary | turns due | ok | primary reqs (200) | fallback reqs | answers naming route primary / "
           "fallback | breaker at the end |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    const int seconds = static_cast<int>(std::ceil(row.end_ms / 1000));
    for (int s = 0; s < seconds; ++s) {
        const double from = s * 1000.0, to = from + 1000;
        std::size_t due = 0, ok = 0, via_primary = 0, via_fallback = 0, ok200 = 0;
        for (const auto& t : row.turns)
            if (t.due_ms >= from && t.due_ms < to) {
                ++due;
                ok += t.ok;
                via_primary += t.route == "primary";
                via_fallback += t.route == "fallback";
            }
        for (const auto& r : row.primary) ok200 += r.arrive_ms >= from && r.arrive_ms < to && r.status == 200;
        std::string state = "closed";
        bool any = false;
        for (const auto& e : row.breaker)
            if (e.route == "primary" && e.at_ms < to) state = e.to, any = true;
        out += "| " + std::to_string(s) + " | " + std::string(to_string(row.timeline.at(from))) + " | " +
               std::to_string(due) + " | " + std::to_string(ok) + " | " +
               std::to_string(arrived_in(row.primary, from, to)) + " (" + std::to_string(ok200) + ") | " +
               std::to_string(arrived_in(row.fallback, from, to)) + " | " + std::to_string(via_primary) + " / " +
               std::to_string(via_fallback) + " | " + (any ? state : std::string("-")) + " |\n";
    }
    const Timeline& tl = row.timeline;
    const double silent_from = tl.down_start() + tl.phase_ms, silent_to = silent_from + tl.phase_ms;
    out += "\nMost requests the primary held at once among those that arrived while it was down: " +
           std::to_string(most_in_flight(row.primary, {{tl.down_start(), tl.down_end()}}, row.end_ms)) +
           " (in the silent phase: " +
           std::to_string(most_in_flight(row.primary, {{silent_from, silent_to}}, row.end_ms)) + ").\n\n";
    std::map<std::string, std::size_t> causes;
    for (const auto& t : row.turns)
        if (!t.ok) ++causes[t.error];
    out += "Failed turns by cause:";
    if (causes.empty()) out += " none";
    for (const auto& [cause, n] : causes) out += " " + cause + " x" + std::to_string(n) + ";";
    out += "\n\nBreaker records (route, from -> to, reason, open_ms, s since t0):";
    if (row.breaker.empty()) out += " none";
    for (const auto& e : row.breaker)
        out += "\n- " + e.route + " " + e.from + " -> " + e.to + " (" + e.reason + ", " + std::to_string(e.open_ms) +
               " ms) at " + fixed(e.at_ms / 1000, 3) + " s";
    const std::string exit = row.exit_code ? std::to_string(*row.exit_code) : std::string("no code (killed)");
    out += "\n\nThe proxy exited with " + exit + " after SIGTERM.\n";
    return out;
}

}  // namespace modelproxy::outage
