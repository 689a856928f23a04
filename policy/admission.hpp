// Load (docs/behaviour.md section 14): the retry budget, the adaptive
// admission limit and the pacing on a provider's rate-limit headers, as
// values. Pure: the caller passes the time of every event and keeps the
// state under its own lock; nothing here reads a clock, arms a timer or
// queues a waiter.
#pragma once

#include "policy/error_class.hpp"
#include "policy/retry_config.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::policy {

// admission.backpressure: units per failure (0..10 each).
struct Backpressure {
    int rate_limit = 1;  // HTTP 429
    int overload = 3;    // HTTP 529, or an overloaded_error event
    int server = 0;      // any other server-class failure (5xx, a server-class error event)
    friend bool operator==(const Backpressure&, const Backpressure&) = default;
};

// The `admission` block (catalog, merged with a route's override).
struct AdmissionConfig {
    bool enabled = false;
    int initial_limit = 64;               // (1..100000) attempts in flight to one candidate
    int min_limit = 1;                    // (1..100000) min_limit <= initial_limit <= max_limit
    int max_limit = 1024;                 // (1..100000)
    double decrease = 0.7;                // (0.1..0.99)
    Backpressure backpressure;
    std::int64_t queue_timeout_ms = 5000; // (0..timeout_ms; 0 = the turn deadline)
    bool honour_ratelimit_headers = true;
    friend bool operator==(const AdmissionConfig&, const AdmissionConfig&) = default;
};

}  // namespace modelproxy::policy
