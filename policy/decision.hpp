// The replay decision, docs/behaviour.md section 6, as pure values (STYLE points 2 and 3).
// "Would this be retryable" is the classification (policy/classify.hpp);
// this file is "may we retry now": bounds, backoff, Retry-After and the
// deadline. Nothing here arms a timer or reads a clock: the caller passes the
// time left and a random draw, and proxy/ sleeps.
#pragma once

#include "policy/classify.hpp"
#include "policy/error_class.hpp"
#include "policy/retry_config.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::policy {

// The record's `decision` for a failed attempt. (`cancelled` and `ok` are
// not decisions about a failure; proxy/ records them.)
enum class Verdict { retry, terminal, exhausted, deadline };

std::string_view to_string(Verdict v);  // "retry", "terminal", "exhausted", "deadline"

// Named by their config keys (section 6). `none` when no bound ended the turn.
enum class Bound {
    none,
    max_attempts,
    max_total_delay_ms,
    throttled_max_attempts,
    throttled_max_total_delay_ms,
    deadline,
    retry_budget,       // section 14: the candidate's replays in flight are at the budget
    queue_timeout_ms,   // section 14: no admission slot in time, after an upstream answer
};

std::string_view to_string(Bound b);  // the config key; "none" for none

// The turn so far, before deciding about the attempt that just failed.
struct TurnSoFar {
    int attempts = 1;             // attempts made, including the one that just failed
    std::int64_t waited_ms = 0;   // waits summed over the whole turn so far
};

// The failure being decided.
struct Failure {
    ErrorClass cls = ErrorClass::network;
    bool retryable = false;                           // Classification::retryable
    TimeoutSource timeout_source = TimeoutSource::none;
    int http_status = 0;                              // the HTTP status line; 0 when none (transport, 200 stream)
    std::optional<std::int64_t> retry_after_ms;       // parsed (policy/retry_after.hpp); read on 429 and 503 only
};

// The Failure of a classified attempt. http_status is the status line (0 for
// transport failures and 200 streams: a status declared inside a stream is
// not an HTTP 429 and picks no throttled bound).
Failure failure_of(const Classification& c, int http_status,
                   std::optional<std::int64_t> retry_after_ms = std::nullopt);

struct Decision {
    Verdict verdict = Verdict::terminal;
    Bound bound = Bound::none;
    std::int64_t wait_ms = 0;     // the wait before the next attempt; 0 unless verdict is retry
    std::string_view rule;        // stable id of the rule that decided (static storage)

    friend bool operator==(const Decision&, const Decision&) = default;
};

// interval(k) = min(max_delay_ms, base_delay_ms * 2^(k-1)), k = 1 for the
// first retry (k < 1 is taken as 1). Saturates: no overflow for any k.
std::int64_t interval_ms(int k, const RetryConfig& config);

// Decide, before the wait, whether the failed attempt is followed by another.
// Rules in order, the first that applies wins:
//   "deadline-passed"      the attempt was cut by the turn deadline (timeout
//                          source attempt-deadline, time_left_ms <= 0):
//                          deadline / deadline (section 6's cut rule)
//   "not-retryable"        terminal
//   "attempts-bound"       attempts >= the deciding attempts bound: exhausted
//   "summed-wait-bound"    nothing left of the deciding summed wait: exhausted
//   "deadline-before-wait" time_left_ms <= 0, or wait + min_attempt_ms > time_left_ms: deadline
//   "backoff" | "retry-after" | "summed-wait-clamp"   retry with wait_ms
// The deciding bounds are the throttled pair for an HTTP 429 and the general
// pair for everything else, over the same counter and summed wait. The wait is
// the interval (jitter none) or floor(draw * (interval + 1)) (jitter full:
// uniform over the integers 0..interval), lengthened on a 429 or 503 to at
// least min(retry_after_ms, max_delay_ms), then clamped to what is left of the
// summed wait. `draw` is in [0, 1); out-of-range values are clamped into it.
Decision decide(const TurnSoFar& turn, const Failure& failure, const RetryConfig& config,
                std::int64_t time_left_ms, double draw);

// A fall-over to another candidate (section 13) after `failure`: immediate,
// but bounded as a replay is. Rules in order:
//   "deadline-passed"       as in decide(): deadline / deadline
//   "attempts-bound"        attempts >= the deciding attempts bound (the
//                           throttled one for an HTTP 429): exhausted
//   "deadline-before-send"  as in recheck_before_send (time_left_ms <= 0 or
//                           < min_attempt_ms): deadline / deadline
//   "fallback"              retry, wait_ms 0
Decision decide_fall_over(const TurnSoFar& turn, const Failure& failure, const RetryConfig& config,
                          std::int64_t time_left_ms);

// Again before each send, after the wait: a retry needs min_attempt_ms left.
// retry / "send", or deadline / deadline / "deadline-before-send".
Decision recheck_before_send(std::int64_t time_left_ms, const RetryConfig& config);

}  // namespace modelproxy::policy
