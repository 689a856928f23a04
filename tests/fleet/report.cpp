#include "fleet/report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

namespace modelproxy::fleet {

namespace {

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

// Seconds of the timeline: whole ones plainly, others with their fraction.
std::string seconds(double ms) {
    std::string s = fixed(ms / 1000, 1);
    if (s.ends_with(".0")) s.resize(s.size() - 2);
    return s;
}

std::string percent(double share) { return fixed(100 * share, 1) + " %"; }

bool inside(double at, double from, double to) { return at >= from && at < to; }

double ratio(double a, double b) { return b != 0 ? a / b : 0; }

const char* verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

bool names_redis(const std::string& text) {
    std::string lower(text.size(), ' ');
    std::transform(text.begin(), text.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return lower.find("redis") != std::string::npos || lower.find("fleet") != std::string::npos;
}

constexpr double kWorstMinute = 1.02;  // of Q, the provider's requests in any 60 s
constexpr double kShare429 = 0.01;     // of its requests answered 429 (fewer than)
constexpr double kGoodput = 0.95;      // of Q, ok turns per minute

}  // namespace

std::pair<double, double> outage_window(const RowData& row) {
    const double from = row.redis_killed_ms.value_or(row.timeline.redis_down_start());
    const double back = row.redis_back_ms.value_or(row.timeline.redis_down_end());
    return {from, back + row.timeline.window_after_ms};
}

std::int64_t worst_window(std::vector<std::pair<double, std::int64_t>> points, double span_ms) {
    std::sort(points.begin(), points.end());
    std::int64_t best = 0, sum = 0;
    std::size_t first = 0;
    // Each window worth looking at starts at a point: slide its end over
    // the points, dropping from the front those a window ending there leaves.
    for (std::size_t last = 0; last < points.size(); ++last) {
        sum += points[last].second;
        while (points[last].first - points[first].first >= span_ms) sum -= points[first++].second;
        best = std::max(best, sum);
    }
    return best;
}

std::int64_t worst_buckets(std::vector<std::int64_t> seconds, std::int64_t width) {
    std::sort(seconds.begin(), seconds.end());
    std::int64_t best = 0;
    for (std::size_t last = 0, first = 0; last < seconds.size(); ++last) {
        while (seconds[last] - seconds[first] >= width) ++first;
        best = std::max(best, static_cast<std::int64_t>(last - first + 1));
    }
    return best;
}

bool made_for_redis(const Turn& t) { return !t.ok && (t.status >= 500 || names_redis(t.error)); }

RowMetrics measure(const RowData& row, const ReportContext& c, std::pair<double, double> window) {
    RowMetrics m;
    const double run = row.timeline.minutes_ms(), minutes = run / 60000;
    const double q = static_cast<double>(c.requests_per_minute);
    std::vector<std::pair<double, std::int64_t>> requests, tokens;
    std::vector<std::int64_t> buckets;
    std::size_t in_run = 0;
    for (const Attempt& a : row.attempts) {
        ++m.received;
        m.received_429 += a.status == 429;
        in_run += inside(a.arrive_ms, 0, run);
        requests.emplace_back(a.arrive_ms, 1);
        buckets.push_back(a.second);
        if (a.tokens > 0) tokens.emplace_back(a.arrive_ms, a.tokens);
    }
    m.worst_minute = worst_window(requests, 60000);
    m.worst_minute_share = ratio(static_cast<double>(m.worst_minute), q);
    m.worst_buckets = worst_buckets(buckets, 60);
    m.worst_buckets_share = ratio(static_cast<double>(m.worst_buckets), q);
    m.mean_minute_share = ratio(static_cast<double>(in_run) / minutes, q);
    m.share_429 = ratio(static_cast<double>(m.received_429), static_cast<double>(m.received));
    for (const Turn& t : row.turns) {
        m.sent += inside(t.due_ms, 0, run);
        m.ok += t.ok && inside(t.end_ms, 0, run);
        if (!t.ok && inside(t.end_ms, window.first, window.second)) {
            ++m.window_failed;
            m.window_for_redis += made_for_redis(t);
        }
    }
    m.per_ok_429 = ratio(static_cast<double>(m.received_429), static_cast<double>(m.ok));
    m.goodput_share = ratio(static_cast<double>(m.ok) / minutes, q);
    m.worst_minute_tokens = worst_window(tokens, 60000);
    m.tokens_share = ratio(static_cast<double>(m.worst_minute_tokens), static_cast<double>(c.tokens_per_minute));
    return m;
}

std::string summary_table(const std::vector<RowData>& rows, const ReportContext& c, bool& all_pass) {
    // Every row's failed turns are counted over the killed row's window.
    std::pair<double, double> window = outage_window(RowData{.timeline = Timeline::scaled(c.scale)});
    std::optional<std::size_t> shared_failed;
    for (const auto& row : rows)
        if (row.kind == RowKind::killed && row.not_started.empty()) window = outage_window(row);
    for (const auto& row : rows)
        if (row.kind == RowKind::shared && row.not_started.empty()) shared_failed = measure(row, c, window).window_failed;
    const std::string span = seconds(window.first) + ".." + seconds(window.second) + " s";

    std::string out;
    out += "| row | provider requests, worst minute (of Q) | ... as its quota counts them | provider requests, mean "
           "minute (of Q) | 429s per ok turn (share of the provider's requests) | goodput (of Q) | tokens billed, worst "
           "minute (of T) | failed turns ended " + span + " (for Redis) |\n";
    out += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& row : rows) {
        std::string name(to_string(row.kind));
        if (row.kind == RowKind::killed) name += " " + seconds(row.timeline.redis_down_ms) + " s";
        if (!row.not_started.empty()) {
            out += "| " + name + " | not started (see below) | | | | | | |\n";
            continue;
        }
        const RowMetrics m = measure(row, c, window);
        const bool target = is_shared(row.kind);
        const auto judged = [&](std::string text, bool pass) {
            if (!target) return text;
            all_pass = all_pass && pass;
            return text + " " + verdict(pass);
        };
        std::string cells = "| " + name + " | ";
        cells += judged(std::to_string(m.worst_minute) + " (" + percent(m.worst_minute_share) + ")",
                        m.worst_minute_share <= kWorstMinute) + " | ";
        cells += std::to_string(m.worst_buckets) + " (" + percent(m.worst_buckets_share) + ") | ";
        cells += percent(m.mean_minute_share) + " | ";
        cells += judged(fixed(m.per_ok_429, 2) + " (" + percent(m.share_429) + ")", m.share_429 < kShare429) + " | ";
        cells += judged(percent(m.goodput_share) + " (" + std::to_string(m.ok) + " of " + std::to_string(m.sent) +
                            " turns ok)",
                        m.goodput_share >= kGoodput) + " | ";
        cells += std::to_string(m.worst_minute_tokens) + " (" + percent(m.tokens_share) + ") | ";
        std::string failed = std::to_string(m.window_failed) + " (" + std::to_string(m.window_for_redis) + ")";
        if (row.kind == RowKind::killed) {
            const bool pass = m.window_for_redis == 0 && (!shared_failed || m.window_failed <= *shared_failed);
            all_pass = all_pass && pass;
            failed += std::string(" ") + verdict(pass);
        }
        out += cells + failed + " |\n";
    }
    const double q = static_cast<double>(c.requests_per_minute);
    out += "\nTargets (rows \"shared\" and \"shared, Redis killed\"): the provider receives at most " +
           fixed(100 * kWorstMinute, 0) + " % of Q in any 60 s; fewer than " + fixed(100 * kShare429, 0) +
           " % of its requests answered 429; goodput at least " + fixed(100 * kGoodput, 0) + " % of Q; and in the "
           "killed row no more failed turns over " + span + " than the shared row over the same span, none of them "
           "for Redis. The row \"per replica\" is not judged.\n";
    out += "\nHow: " + std::to_string(c.replicas) + " modelproxy replicas, each one worker with the row's config "
           "(only the port differs), in front of one fake provider whose key allows Q = " +
           std::to_string(c.requests_per_minute) + " requests per minute (" + fixed(q / 60, 1) + "/s), counted in "
           "60 one-second buckets on the wall clock's seconds (the current one and the 59 before); above that it "
           "answers 429 at once with Retry-After: 1 and OpenAI's rate-limit headers (the reset: until the window "
           "has room); an admitted request is answered 200 after " + fixed(c.min_service_ms, 0) + ".." +
           fixed(c.max_service_ms, 0) + " ms (uniform) with usage of " + std::to_string(c.usage_tokens) +
           " tokens. " + std::to_string(c.callers) + " closed-loop callers, spread evenly over the replicas, each on "
           "one keep-alive connection, send a turn (JSON, max_tokens 20), read its answer and think " +
           fixed(c.think_ms, 0) + " ms after an ok turn, or pause after a failed one for its Retry-After, else "
           "0.5 s: unhindered, they offer about " + fixed(c.callers / ((c.think_ms + 0.5 * (c.min_service_ms +
           c.max_service_ms)) / 1000) * 60 / q, 1) + " x Q. A turn is ok when it is a 200 carrying a completion. "
           "Row \"per replica\": each replica's quota is Q / " + std::to_string(c.replicas) + " requests per "
           "minute and there is no fleet block; the shared rows: fleet.redis is the driver's redis-server, the "
           "quota Q requests and T = " + std::to_string(c.tokens_per_minute) + " tokens per minute; in the killed "
           "row redis-server is killed (SIGKILL: its port refuses) and started again, empty, on the same port, "
           "10 s before the first minute ends (when a fleet that keeps the quota has room again). Worst minute: "
           "the most requests (tokens: the most tokens the 200s billed) the provider received in any 60 s of the "
           "observation (the drain's too); as its quota counts them: in any 60 of its one-second buckets. Mean "
           "minute and goodput (ok turns by when they ended) per minute over the run's whole minutes, 0.." +
           seconds(Timeline::scaled(c.scale).minutes_ms()) + " s. Failed turns: those that ended in the span, from "
           "the kill to " + seconds(Timeline{}.window_after_ms) + " s after the restart, in every row; for Redis: a "
           "5xx (the provider answers only 200 and 429) or an error naming Redis or the fleet.\n";
    return out;
}

std::string row_details(const RowData& row, const ReportContext& c) {
    std::string out = "### " + std::string(to_string(row.kind)) + "\n\n";
    if (!row.not_started.empty()) return out + "Not started:\n\n```\n" + row.not_started + "```\n";
    out += "| s | Redis | turns sent | ok done | failed done | requests | 200 | 429 | requests in the 60 s to "
           "its end (of Q) |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    const int whole = static_cast<int>(std::ceil(row.end_ms / 1000));
    std::vector<std::size_t> sent(whole + 1), ok(whole + 1), failed(whole + 1), all(whole + 1), ok200(whole + 1),
        r429(whole + 1);
    const auto bin = [&](double ms) { return static_cast<std::size_t>(std::clamp(ms / 1000, 0.0, double(whole))); };
    for (const auto& t : row.turns) {
        ++sent[bin(t.due_ms)];
        ++(t.ok ? ok : failed)[bin(t.end_ms)];
    }
    for (const auto& a : row.attempts) {
        ++all[bin(a.arrive_ms)];
        ++(a.status == 200 ? ok200 : r429)[bin(a.arrive_ms)];
    }
    std::size_t trailing = 0;
    for (int s = 0; s < whole; ++s) {
        trailing += all[s];
        if (s >= 60) trailing -= all[s - 60];
        const double from = s * 1000.0;
        std::string redis = "up";
        if (row.kind == RowKind::per_replica) redis = "-";
        else if (row.redis_killed_ms && row.redis_back_ms && from + 1000 > *row.redis_killed_ms && from < *row.redis_back_ms)
            redis = "down";
        out += "| " + std::to_string(s) + " | " + redis + " | " + std::to_string(sent[s]) + " | " +
               std::to_string(ok[s]) + " | " + std::to_string(failed[s]) + " | " + std::to_string(all[s]) + " | " +
               std::to_string(ok200[s]) + " | " + std::to_string(r429[s]) + " | " + std::to_string(trailing) + " (" +
               percent(ratio(static_cast<double>(trailing), static_cast<double>(c.requests_per_minute))) + ") |\n";
    }
    std::map<std::string, std::size_t> causes;
    for (const auto& t : row.turns)
        if (!t.ok) ++causes[t.error];
    out += "\nFailed turns by cause:";
    if (causes.empty()) out += " none";
    for (const auto& [cause, n] : causes) out += " " + cause + " x" + std::to_string(n) + ";";
    std::map<std::string, int> exits;
    for (const auto& code : row.exit_codes) ++exits[code ? std::to_string(*code) : "no code (killed)"];
    out += "\n\nThe replicas exited, after SIGTERM, with:";
    for (const auto& [code, n] : exits) out += " " + code + " x" + std::to_string(n) + ";";
    if (row.redis_killed_ms && row.redis_back_ms)
        out += "\n\nredis-server killed at " + seconds(*row.redis_killed_ms) + " s, answering again at " +
               seconds(*row.redis_back_ms) + " s.";
    return out + "\n";
}

}  // namespace modelproxy::fleet
