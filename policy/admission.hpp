// Load (docs/behaviour.md section 14): the retry budget, the backpressure a
// failure weighs and the adaptive admission limit, as values (the pacing on
// a provider's rate-limit headers is policy/ratelimit_headers.hpp). Pure:
// the caller passes the time of every event and keeps the state under its
// own lock; nothing here reads a clock, arms a timer or queues a waiter.
#pragma once

#include "policy/error_class.hpp"
#include "policy/retry_config.hpp"

#include <chrono>
#include <cstdint>
#include <optional>

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

// ---- The retry budget (always on) ----

// The replays one candidate may have in flight while `turns_in_flight` turns
// are on it: max(budget_min_concurrency, floor(budget_ratio x turns)). The
// product is floored with a margin of 1e-9, so 0.2 x 5 is 1 and 0.29 x 100
// is 29 whatever the binary fraction says. A negative count reads as 0.
int replay_budget(int turns_in_flight, const RetryConfig& retry);

// Whether a replay may be sent: `replays_in_flight` counts the replays in
// flight on the candidate including the one asking (a value below 1 reads as
// 1), and must not exceed replay_budget(). budget_ratio 0 with
// budget_min_concurrency 0: never. A turn's first attempt on a candidate is
// not a replay and never asks.
bool replay_within_budget(int replays_in_flight, int turns_in_flight, const RetryConfig& retry);

// ---- Backpressure ----

// The facts of a failed attempt that its backpressure reads.
struct BackpressureFacts {
    ErrorClass cls = ErrorClass::network;  // the failure's class
    int http_status = 0;                   // the answer's status; 0 without an answer head
    bool overloaded = false;               // an `overloaded_error` error event or error type
};

// The units a failure weighs, first rule that matches: HTTP 429 ->
// rate_limit; HTTP 529 or overloaded -> overload; any other failure of class
// server -> server; anything else (network, timeout, a quota error inside a
// 200 stream, any 4xx but 429) -> 0.
int backpressure_units(const BackpressureFacts& failure, const Backpressure& weights);

// ---- The adaptive admission limit ----

// One candidate's limit on attempts in flight. The limit is a real number
// kept within min_limit..max_limit; the integer in force is its floor (with a
// margin of 1e-9 against binary fractions). Quiet growth is credited lazily:
// every call first adds 1 per whole second since the start of the current
// quiet run (the last backpressure failure, or construction) not yet added.
// Times passed in out of order are tolerated: a time before the quiet run's
// start credits nothing, and a decrease is never applied at or before one
// already applied.
class AdmissionLimit {
public:
    using Time = std::chrono::steady_clock::time_point;

    AdmissionLimit(const AdmissionConfig& config, Time now);

    // The integer limit in force at `now` (quiet growth applied first), at
    // least min_limit.
    int limit(Time now);
    // The real value behind it, for metrics and tests.
    double value(Time now);

    // A failure weighing `units` (backpressure_units) at `now`. units <= 0:
    // nothing. Otherwise the quiet run restarts at `now`, and the value is
    // multiplied by decrease^units unless a decrease was applied less than
    // one second before `now` (at most one per second). Returns whether the
    // decrease was applied; true also when the floor at min_limit leaves the
    // value where it was (the second is taken all the same).
    bool on_backpressure(int units, Time now);

    // An attempt succeeded: the value grows by 1 / the integer limit in
    // force, so `limit` successes in a row add exactly 1.
    void on_success(Time now);

    // New settings (a reload): the value and the quiet run kept, the value
    // clamped to the new min_limit..max_limit.
    void reconfigure(const AdmissionConfig& config);

    const AdmissionConfig& config() const { return config_; }

private:
    void credit_quiet(Time now);
    void clamp();
    int floor_limit() const;

    AdmissionConfig config_;
    double value_ = 0;
    Time quiet_start_;                  // the start of the current quiet run
    std::int64_t quiet_credited_s_ = 0; // whole seconds of it already added
    std::optional<Time> last_decrease_; // when the last decrease was applied
};

}  // namespace modelproxy::policy
