#include "policy/decision.hpp"

#include <algorithm>
#include <cmath>

namespace modelproxy::policy {

std::string_view to_string(Verdict v) {
    switch (v) {
        case Verdict::retry: return "retry";
        case Verdict::terminal: return "terminal";
        case Verdict::exhausted: return "exhausted";
        case Verdict::deadline: return "deadline";
    }
    return "unknown";
}

std::string_view to_string(Bound b) {
    switch (b) {
        case Bound::none: return "none";
        case Bound::max_attempts: return "max_attempts";
        case Bound::max_total_delay_ms: return "max_total_delay_ms";
        case Bound::throttled_max_attempts: return "throttled_max_attempts";
        case Bound::throttled_max_total_delay_ms: return "throttled_max_total_delay_ms";
        case Bound::deadline: return "deadline";
        case Bound::retry_budget: return "retry_budget";
        case Bound::queue_timeout_ms: return "queue_timeout_ms";
    }
    return "unknown";
}

Failure failure_of(const Classification& c, int http_status,
                   std::optional<std::int64_t> retry_after_ms) {
    return {c.cls, c.retryable, c.timeout_source, http_status, retry_after_ms};
}

std::int64_t interval_ms(int k, const RetryConfig& config) {
    const std::int64_t cap = std::max<std::int64_t>(0, config.max_delay_ms);
    std::int64_t v = std::max<std::int64_t>(0, config.base_delay_ms);
    for (int i = 1; i < k && v < cap; ++i) {
        v = v > cap / 2 ? cap : v * 2;
        if (v == 0) break;
    }
    return std::min(v, cap);
}

namespace {

Decision end_turn(Verdict v, Bound b, std::string_view rule) { return {v, b, 0, rule}; }

// floor(draw * (interval + 1)): each integer 0..interval equally likely.
std::int64_t full_jitter(std::int64_t interval, double draw) {
    if (!(draw >= 0.0)) draw = 0.0;  // also NaN
    if (draw >= 1.0) draw = std::nextafter(1.0, 0.0);
    const auto w = static_cast<std::int64_t>(
        std::floor(draw * (static_cast<double>(interval) + 1.0)));
    return std::clamp<std::int64_t>(w, 0, interval);
}

}  // namespace

Decision decide(const TurnSoFar& turn, const Failure& failure, const RetryConfig& config,
                std::int64_t time_left_ms, double draw) {
    // Section 6: an attempt that has published nothing when the deadline
    // passes is cut with decision and bound deadline, on every endpoint and
    // whatever the attempt count: the deadline, not a bound, ended it.
    if (failure.timeout_source == TimeoutSource::attempt_deadline && time_left_ms <= 0) {
        return end_turn(Verdict::deadline, Bound::deadline, "deadline-passed");
    }
    if (!failure.retryable) return end_turn(Verdict::terminal, Bound::none, "not-retryable");

    // The failure being decided picks the bound; the counter and the summed
    // wait are the turn's ("a 503 after ten 429s ends the turn").
    const bool throttled = failure.http_status == 429;
    const int max_attempts = throttled ? config.throttled_max_attempts : config.max_attempts;
    const std::int64_t max_total =
        throttled ? config.throttled_max_total_delay_ms : config.max_total_delay_ms;
    const Bound attempts_bound = throttled ? Bound::throttled_max_attempts : Bound::max_attempts;
    const Bound total_bound =
        throttled ? Bound::throttled_max_total_delay_ms : Bound::max_total_delay_ms;

    if (turn.attempts >= max_attempts) {
        return end_turn(Verdict::exhausted, attempts_bound, "attempts-bound");
    }
    const std::int64_t total_left = max_total - turn.waited_ms;
    if (total_left <= 0) return end_turn(Verdict::exhausted, total_bound, "summed-wait-bound");

    const std::int64_t interval = interval_ms(turn.attempts, config);
    std::int64_t wait = config.jitter == Jitter::full ? full_jitter(interval, draw) : interval;
    std::string_view rule = "backoff";

    // Retry-After lengthens the wait, never past max_delay_ms: more attempts
    // outlast a throttle, longer waits do not (reference, section 6).
    const bool honours_retry_after = failure.http_status == 429 || failure.http_status == 503;
    if (honours_retry_after && failure.retry_after_ms) {
        const std::int64_t floor_ms =
            std::min(std::max<std::int64_t>(0, *failure.retry_after_ms), config.max_delay_ms);
        if (floor_ms > wait) {
            wait = floor_ms;
            rule = "retry-after";
        }
    }
    if (wait > total_left) {
        wait = total_left;
        rule = "summed-wait-clamp";
    }

    // Before the wait: a retry the deadline leaves no useful time for is not
    // made. Overflow-safe form of wait + min_attempt_ms > time_left_ms.
    const std::int64_t min_attempt = std::max<std::int64_t>(0, config.min_attempt_ms);
    if (time_left_ms <= 0 || wait > time_left_ms - min_attempt) {
        return end_turn(Verdict::deadline, Bound::deadline, "deadline-before-wait");
    }
    return {Verdict::retry, Bound::none, wait, rule};
}

Decision decide_fall_over(const TurnSoFar& turn, const Failure& failure, const RetryConfig& config,
                          std::int64_t time_left_ms) {
    if (failure.timeout_source == TimeoutSource::attempt_deadline && time_left_ms <= 0) {
        return end_turn(Verdict::deadline, Bound::deadline, "deadline-passed");
    }
    // More candidates never mean more attempts than the bound (section 13):
    // the failure being decided picks it, as in decide().
    const bool throttled = failure.http_status == 429;
    const int max_attempts = throttled ? config.throttled_max_attempts : config.max_attempts;
    if (turn.attempts >= max_attempts) {
        return end_turn(Verdict::exhausted,
                        throttled ? Bound::throttled_max_attempts : Bound::max_attempts,
                        "attempts-bound");
    }
    // No wait comes first, so this is the check before the send.
    if (recheck_before_send(time_left_ms, config).verdict != Verdict::retry) {
        return end_turn(Verdict::deadline, Bound::deadline, "deadline-before-send");
    }
    return {Verdict::retry, Bound::none, 0, "fallback"};
}

Decision recheck_before_send(std::int64_t time_left_ms, const RetryConfig& config) {
    if (time_left_ms <= 0 || time_left_ms < config.min_attempt_ms) {
        return end_turn(Verdict::deadline, Bound::deadline, "deadline-before-send");
    }
    return {Verdict::retry, Bound::none, 0, "send"};
}

}  // namespace modelproxy::policy
