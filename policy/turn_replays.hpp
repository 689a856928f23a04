// One turn's replay state (docs/behaviour.md section 6) as a value: one
// attempt counter and one summed wait for the whole turn, and its deadline.
// The turn tells it each attempt it starts and each failure, with the time
// the failure is decided (`now`) and the jitter's random number (`draw`);
// it answers with the decision (decision.hpp). It reads no clock and arms no
// timer: the turn reads its clock, passes the values, and sleeps.
#pragma once

#include "policy/decision.hpp"
#include "policy/retry_config.hpp"

#include <chrono>
#include <cstdint>

namespace modelproxy::policy {

class TurnReplays {
public:
    using Time = std::chrono::steady_clock::time_point;

    TurnReplays(const RetryConfig& config, Time deadline) : config_(config), deadline_(deadline) {}

    // The next attempt starts; returns its number (1 for the first).
    int start_attempt() { return ++attempts_; }
    int attempts() const { return attempts_; }
    // The waits the turn's retries asked for, summed.
    std::int64_t waited_ms() const { return waited_ms_; }
    // What is left of the turn deadline at `now`: negative once it passed.
    std::int64_t left_ms(Time now) const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now).count();
    }
    // The record's remaining_ms at `now`: never below 0.
    std::int64_t remaining_ms(Time now) const {
        const std::int64_t left = left_ms(now);
        return left > 0 ? left : 0;
    }

    // The attempt just made failed with `failure`, decided at `now` with
    // `draw` in [0, 1): decide() over the turn so far. A retry's wait joins
    // the summed wait.
    Decision after_failure(const Failure& failure, Time now, double draw) {
        const Decision d = decide({attempts_, waited_ms_}, failure, config_, left_ms(now), draw);
        if (d.verdict == Verdict::retry) waited_ms_ += d.wait_ms;
        return d;
    }

    // The failed attempt falls over to another candidate (section 13), at
    // `now`: at once, no wait, within the same bounds as a replay
    // (decide_fall_over).
    Decision fall_over(const Failure& failure, Time now) const {
        return decide_fall_over({attempts_, waited_ms_}, failure, config_, left_ms(now));
    }

    // Whether a wait of `wait_ms` from `now` fits as a section 6 wait does:
    // within what is left of the summed wait (max_total_delay_ms) and with
    // min_attempt_ms left before the deadline after it.
    bool fits_wait(std::int64_t wait_ms, Time now) const {
        return waited_ms_ + wait_ms <= config_.max_total_delay_ms && wait_ms + config_.min_attempt_ms <= left_ms(now);
    }
    // A wait outside after_failure (fail_fast's) joins the summed wait.
    void add_wait(std::int64_t wait_ms) { waited_ms_ += wait_ms; }
    // A retry after_failure granted is not waited for after all (the retry
    // budget refused it): its wait leaves the summed wait.
    void cancel_wait(std::int64_t wait_ms) { waited_ms_ -= wait_ms; }

    // After the wait, at `now`, before the next send: retry (send it) or
    // deadline, the turn ending on the failure it waited for.
    Decision before_send(Time now) const { return recheck_before_send(left_ms(now), config_); }

private:
    const RetryConfig& config_;
    Time deadline_;
    int attempts_ = 0;
    std::int64_t waited_ms_ = 0;
};

}  // namespace modelproxy::policy
