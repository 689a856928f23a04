// The retry envelope `modelproxy doctor` prints per route (docs/behaviour.md sections 2
// and 6): both bounds, the wait schedules and their sums, the summed-wait
// caps, the worst-case wall clock of one turn, and warnings where a bound can
// never be reached. Pure: computed by running policy/decision.hpp's decide()
// over simulated turns, so doctor and the proxy cannot disagree.
#pragma once

#include "policy/decision.hpp"
#include "policy/retry_config.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::policy {

// A turn in which every attempt fails the same retryable way: a server
// failure (general bounds) or an HTTP 429 (throttled bounds), without
// Retry-After. Waits are the intervals, i.e. what jitter none waits and the
// upper bound of each jitter full wait.
struct Schedule {
    Bound attempts_bound = Bound::max_attempts;   // max_attempts | throttled_max_attempts
    int max_attempts = 0;                         // its value
    Bound cap_bound = Bound::max_total_delay_ms;  // max_total_delay_ms | throttled_max_total_delay_ms
    std::int64_t cap_ms = 0;                      // its value
    std::vector<std::int64_t> waits_ms;           // one per retry, as decide() makes them (cap clamp included)
    std::int64_t sum_ms = 0;                      // sum of waits_ms
    std::int64_t unclamped_sum_ms = 0;            // the max_attempts - 1 intervals, before the cap's clamp
    int attempts = 0;                             // attempts the turn makes with no deadline
    Bound ends_with = Bound::none;                // the bound that ends it
    int attempts_under_deadline = 0;              // the same turn, attempts failing instantly, under timeout_ms
    Bound ends_with_under_deadline = Bound::none;

    bool clamped() const { return sum_ms < unclamped_sum_ms; }
};

enum class WarningKind {
    attempts_unreachable_under_cap,   // jitter none: the summed-wait cap ends the turn first
    bound_unreachable_under_deadline, // jitter none: the deadline ends a turn of instant failures first
    cap_unreachable_under_deadline,   // waits can never sum to the cap before the deadline
};

struct EnvelopeWarning {
    WarningKind kind;
    Bound unreachable;          // the bound that can never be reached
    Bound ends_first;           // what ends the turn instead
    int attempts = 0;           // attempts made when it does (first two kinds)
    std::int64_t limit_ms = 0;  // cap_unreachable_under_deadline: the most the waits can sum to

    friend bool operator==(const EnvelopeWarning&, const EnvelopeWarning&) = default;
};

struct Envelope {
    std::string route;
    RetryConfig retry;
    std::int64_t timeout_ms = 0;
    Schedule general;
    Schedule throttled;
    // The deadline bounds every wait and attempt before publication:
    // min(timeout_ms, attempts * timeout_ms + waits) over both schedules.
    // A stream already publishing is not cut by it (section 6).
    std::int64_t worst_case_ms = 0;
    std::vector<EnvelopeWarning> warnings;
};

Envelope make_envelope(std::string_view route, const RetryConfig& retry, std::int64_t timeout_ms);

// Human lines for stdout, e.g.
//   route openai: timeout_ms 300000, min_attempt_ms 1000, jitter none
//     general: 8 attempts, waits 500 1000 2000 4000 8000 16000 20000 = 51500 ms (cap 60000)
//     throttled: 24 attempts, waits 500 1000 2000 4000 8000 16000 20000x17 = 371500 ms (cap 380000)
//     ...
// A run of three or more equal waits is written once with "xN".
std::vector<std::string> render_envelope(const Envelope& envelope);

// One stderr line per warning, naming the route.
std::string render_warning(const Envelope& envelope, const EnvelopeWarning& warning);

}  // namespace modelproxy::policy
