// The retry catalog of docs/behaviour.md section 3 ("retry:"), as plain values.
// Owned by policy/ so the replay decision can be a pure function over it;
// config/ parses YAML into it, proxy/ passes it along. No I/O, no clocks.
#pragma once

#include <cstdint>

namespace modelproxy::policy {

enum class Jitter { none, full };

struct RetryConfig {
    int max_attempts = 8;                           // general bound (1..16)
    std::int64_t base_delay_ms = 500;               // first wait
    std::int64_t max_delay_ms = 20000;              // cap on one wait
    std::int64_t max_total_delay_ms = 60000;        // summed waits, general bound
    int throttled_max_attempts = 24;                // bound when the failure decided is HTTP 429 (1..64)
    std::int64_t throttled_max_total_delay_ms = 380000;
    Jitter jitter = Jitter::none;
    std::int64_t min_attempt_ms = 1000;             // no retry starts with less time than this left
    // The retry budget (section 14), per candidate: replays in flight at
    // most max(budget_min_concurrency, budget_ratio x turns in flight on it).
    double budget_ratio = 0.2;                      // (0..1)
    int budget_min_concurrency = 3;                 // (0..10000)
};

}  // namespace modelproxy::policy
