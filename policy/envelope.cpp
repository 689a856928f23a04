#include "policy/envelope.hpp"

#include <algorithm>
#include <limits>

namespace modelproxy::policy {
namespace {

constexpr std::int64_t max_i64 = std::numeric_limits<std::int64_t>::max();
// The config allows at most 64 attempts; this only keeps a bad value finite.
constexpr int simulation_attempt_limit = 4096;
// "No deadline": far beyond any wait, yet safe to subtract from.
constexpr std::int64_t no_deadline_ms = max_i64 / 4;

std::int64_t sat_add(std::int64_t a, std::int64_t b) {
    return a > max_i64 - b ? max_i64 : a + b;
}

std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
    if (a != 0 && b > max_i64 / a) return max_i64;
    return a * b;
}

struct Simulated {
    std::vector<std::int64_t> waits;
    std::int64_t sum = 0;
    int attempts = 1;
    Bound ends_with = Bound::none;
};

// Every attempt fails at once with `failure`; with a deadline, the time left
// is the deadline less the waits so far (the most favourable case).
Simulated simulate(const Failure& failure, const RetryConfig& config,
                   std::int64_t deadline_ms) {
    Simulated s;
    while (s.attempts < simulation_attempt_limit) {
        const std::int64_t left = deadline_ms - s.sum;
        const Decision d = decide({s.attempts, s.sum}, failure, config, left, 0.0);
        if (d.verdict != Verdict::retry) {
            s.ends_with = d.bound;
            break;
        }
        s.waits.push_back(d.wait_ms);
        s.sum = sat_add(s.sum, d.wait_ms);
        if (recheck_before_send(deadline_ms - s.sum, config).verdict != Verdict::retry) {
            s.ends_with = Bound::deadline;
            break;
        }
        ++s.attempts;
    }
    return s;
}

Schedule schedule(bool throttled, const RetryConfig& config, std::int64_t timeout_ms) {
    // A server failure (500) or an HTTP 429, no Retry-After. Intervals only:
    // the upper bound of a jittered wait.
    RetryConfig plain = config;
    plain.jitter = Jitter::none;
    const Failure failure{throttled ? ErrorClass::rate_limit : ErrorClass::server, true,
                          TimeoutSource::none, throttled ? 429 : 500, std::nullopt};

    Schedule s;
    s.attempts_bound = throttled ? Bound::throttled_max_attempts : Bound::max_attempts;
    s.max_attempts = throttled ? config.throttled_max_attempts : config.max_attempts;
    s.cap_bound = throttled ? Bound::throttled_max_total_delay_ms : Bound::max_total_delay_ms;
    s.cap_ms = throttled ? config.throttled_max_total_delay_ms : config.max_total_delay_ms;
    for (int k = 1; k < s.max_attempts && k < simulation_attempt_limit; ++k) {
        s.unclamped_sum_ms = sat_add(s.unclamped_sum_ms, interval_ms(k, plain));
    }

    Simulated free = simulate(failure, plain, no_deadline_ms);
    s.waits_ms = std::move(free.waits);
    s.sum_ms = free.sum;
    s.attempts = free.attempts;
    s.ends_with = free.ends_with;

    const Simulated bounded = simulate(failure, plain, std::max<std::int64_t>(0, timeout_ms));
    s.attempts_under_deadline = bounded.attempts;
    s.ends_with_under_deadline = bounded.ends_with;
    return s;
}

void add_warnings(const Envelope& e, const Schedule& s, std::vector<EnvelopeWarning>& out) {
    const bool deterministic = e.retry.jitter == Jitter::none;
    bool cap_reported = false;
    // With jitter full a wait can be 0, so only the deadline's hold on the
    // summed wait is certain; with jitter none the simulated turn is the
    // fastest possible (Retry-After only lengthens waits, attempts take time).
    if (deterministic && s.ends_with == s.cap_bound) {
        out.push_back({WarningKind::attempts_unreachable_under_cap, s.attempts_bound, s.cap_bound,
                       s.attempts, 0});
    }
    if (deterministic && s.ends_with_under_deadline == Bound::deadline) {
        out.push_back({WarningKind::bound_unreachable_under_deadline, s.ends_with, Bound::deadline,
                       s.attempts_under_deadline, 0});
        cap_reported = s.ends_with == s.cap_bound;
    }
    // Each retry needs its wait + min_attempt_ms before the deadline, so one
    // turn's waits sum to at most timeout_ms - min_attempt_ms.
    const std::int64_t most = std::max<std::int64_t>(
        0, e.timeout_ms - std::max<std::int64_t>(0, e.retry.min_attempt_ms));
    if (!cap_reported && s.cap_ms > most) {
        out.push_back({WarningKind::cap_unreachable_under_deadline, s.cap_bound, Bound::deadline,
                       0, most});
    }
}

std::string attempts_text(int n) {
    return std::to_string(n) + (n == 1 ? " attempt" : " attempts");
}

std::string join_waits(const std::vector<std::int64_t>& waits) {
    std::string out;
    for (std::size_t i = 0; i < waits.size();) {
        std::size_t j = i;
        while (j < waits.size() && waits[j] == waits[i]) ++j;
        const std::size_t run = j - i;
        if (run >= 3) {
            if (!out.empty()) out += ' ';
            out += std::to_string(waits[i]) + "x" + std::to_string(run);
        } else {
            for (std::size_t k = i; k < j; ++k) {
                if (!out.empty()) out += ' ';
                out += std::to_string(waits[k]);
            }
        }
        i = j;
    }
    return out.empty() ? "none" : out;
}

std::string schedule_line(std::string_view name, const Schedule& s) {
    std::string line = "  " + std::string(name) + ": " + attempts_text(s.max_attempts) +
                       ", waits " + join_waits(s.waits_ms) + " = " +
                       std::to_string(s.sum_ms) + " ms (cap " + std::to_string(s.cap_ms);
    if (s.clamped()) {
        line += ", clamped from " + std::to_string(s.unclamped_sum_ms) +
                " ms: the turn ends exhausted " + std::string(to_string(s.cap_bound)) +
                " after " + attempts_text(s.attempts);
    }
    return line + ")";
}

std::string under_deadline(std::string_view name, const Schedule& s) {
    return attempts_text(s.attempts_under_deadline) + " (" + std::string(name) + ", " +
           std::string(to_string(s.ends_with_under_deadline)) + ")";
}

}  // namespace

Envelope make_envelope(std::string_view route, const RetryConfig& retry, std::int64_t timeout_ms) {
    Envelope e;
    e.route = std::string(route);
    e.retry = retry;
    e.timeout_ms = timeout_ms;
    e.general = schedule(false, retry, timeout_ms);
    e.throttled = schedule(true, retry, timeout_ms);
    std::int64_t longest = 0;
    for (const Schedule* s : {&e.general, &e.throttled}) {
        longest = std::max(longest, sat_add(sat_mul(s->attempts, timeout_ms), s->sum_ms));
    }
    e.worst_case_ms = std::min(timeout_ms, longest);
    add_warnings(e, e.general, e.warnings);
    add_warnings(e, e.throttled, e.warnings);
    return e;
}

std::vector<std::string> render_envelope(const Envelope& e) {
    std::vector<std::string> lines;
    std::string head = "route " + e.route + ": timeout_ms " + std::to_string(e.timeout_ms) +
                       ", min_attempt_ms " + std::to_string(e.retry.min_attempt_ms) + ", jitter ";
    head += e.retry.jitter == Jitter::full ? "full (each wait uniform in 0..the wait shown)"
                                           : "none";
    lines.push_back(std::move(head));
    lines.push_back(schedule_line("general", e.general));
    lines.push_back(schedule_line("throttled", e.throttled));
    lines.push_back("  under the deadline, instant failures make " +
                    under_deadline("general", e.general) + ", " +
                    under_deadline("throttled", e.throttled));
    lines.push_back("  worst case one turn: " + std::to_string(e.worst_case_ms) +
                    " ms before anything is published (timeout_ms)");
    return lines;
}

std::string render_warning(const Envelope& e, const EnvelopeWarning& w) {
    const Schedule& s = w.unreachable == Bound::throttled_max_attempts ||
                                w.unreachable == Bound::throttled_max_total_delay_ms
                            ? e.throttled
                            : e.general;
    const bool throttled = &s == &e.throttled;
    const std::string bound = std::string(to_string(w.unreachable)) + " " +
                              std::to_string(w.unreachable == s.attempts_bound ? s.max_attempts
                                                                               : s.cap_ms);
    std::string line = "warning: route " + e.route + ": " + bound + " can never be reached: ";
    switch (w.kind) {
        case WarningKind::attempts_unreachable_under_cap:
            line += std::string(to_string(s.cap_bound)) + " " + std::to_string(s.cap_ms) +
                    " ends a turn of " + (throttled ? "429s" : "server failures") + " after " +
                    attempts_text(w.attempts);
            break;
        case WarningKind::bound_unreachable_under_deadline:
            line += "timeout_ms " + std::to_string(e.timeout_ms) + " ends a turn of instant " +
                    (throttled ? "429s" : "server failures") + " after " +
                    attempts_text(w.attempts);
            break;
        case WarningKind::cap_unreachable_under_deadline:
            line += "under timeout_ms " + std::to_string(e.timeout_ms) +
                    " the waits of one turn sum to at most " + std::to_string(w.limit_ms) +
                    " ms (min_attempt_ms " + std::to_string(e.retry.min_attempt_ms) + ")";
            break;
    }
    return line;
}

}  // namespace modelproxy::policy
