#include "policy/breaker.hpp"

#include <algorithm>
#include <limits>

namespace modelproxy::policy {

std::string_view to_string(BreakerState s) {
    switch (s) {
        case BreakerState::closed: return "closed";
        case BreakerState::open: return "open";
        case BreakerState::half_open: return "half-open";
    }
    return "unknown";
}

std::string_view to_string(BreakerReason r) {
    switch (r) {
        case BreakerReason::consecutive: return "consecutive";
        case BreakerReason::ratio: return "ratio";
        case BreakerReason::probe_ok: return "probe-ok";
        case BreakerReason::probe_failed: return "probe-failed";
        case BreakerReason::timer: return "timer";
    }
    return "unknown";
}

BreakerCount breaker_count(const BreakerFacts& end) {
    // A caller's own impatience or deadline never counts, whatever else the
    // attempt saw (docs/behaviour.md section 13).
    if (end.client_left || end.deadline_cut) return BreakerCount::none;
    if (end.failed) {
        switch (*end.failed) {
            case ErrorClass::network:
            case ErrorClass::server:
            case ErrorClass::stream_incomplete:
                return BreakerCount::failure;
            case ErrorClass::timeout:
                switch (end.timeout_source) {
                    case TimeoutSource::first_byte:
                    case TimeoutSource::stream_idle:
                    case TimeoutSource::provider_timeout:
                        return BreakerCount::failure;
                    // A slow thinker is not a dead provider; the turn
                    // deadline is the caller's budget, not the provider's.
                    case TimeoutSource::first_token:
                    case TimeoutSource::attempt_deadline:
                    case TimeoutSource::none:
                        return BreakerCount::none;
                }
                return BreakerCount::none;
            // rate-limit: section 14's budget and the cooldown handle it;
            // the others are the caller's request or the proxy's refusal.
            case ErrorClass::rate_limit:
            case ErrorClass::content_filter:
            case ErrorClass::authentication:
            case ErrorClass::invalid_request:
            case ErrorClass::not_found:
            case ErrorClass::client:
            case ErrorClass::identity:
            case ErrorClass::credential:
            case ErrorClass::cancelled:
                return BreakerCount::none;
        }
        return BreakerCount::none;
    }
    return end.ok_2xx ? BreakerCount::success : BreakerCount::none;
}

namespace {

std::int64_t ms_since_epoch(Breaker::Time t) {
    return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// floor(a / b) for b > 0, also for a negative `a`.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

// The open time of a breaker whose open time has passed reads half-open: the
// stored state moves (with its `timer` transition) at admit() or settle().
BreakerState Breaker::state(Time now) const {
    if (!config_.enabled) return BreakerState::closed;
    if (state_ == BreakerState::open && now >= open_until_) return BreakerState::half_open;
    return state_;
}

bool Breaker::usable(Time now) const {
    switch (state(now)) {
        case BreakerState::closed: return true;
        case BreakerState::half_open: return probes_ < config_.probes;
        case BreakerState::open: return false;
    }
    return false;
}

Breaker::Time Breaker::half_open_at(Time now) const {
    return state(now) == BreakerState::open ? open_until_ : now;
}

Admit Breaker::admit(Time now, bool forced, std::optional<BreakerTransition>& moved) {
    moved.reset();
    if (!config_.enabled) return Admit::pass;
    if (state_ == BreakerState::open && now >= open_until_) {
        state_ = BreakerState::half_open;
        moved = BreakerTransition{BreakerState::open, BreakerState::half_open, BreakerReason::timer, open_ms_};
    }
    switch (state_) {
        case BreakerState::closed:
            return Admit::pass;
        case BreakerState::half_open:
            if (probes_ < config_.probes) {
                ++probes_;
                return Admit::probe;
            }
            break;
        case BreakerState::open:
            break;
    }
    return forced ? Admit::pass : Admit::held;
}

std::optional<BreakerTransition> Breaker::settle(Admit how, BreakerCount count, Time now,
                                                 std::optional<std::int64_t> retry_after_ms) {
    if (!config_.enabled) return std::nullopt;
    // Every probe holds its slot until its result, whatever state the
    // breaker is in by then: at most `probes` probes are ever in flight.
    if (how == Admit::probe && probes_ > 0) --probes_;

    std::optional<BreakerTransition> moved;
    if (state_ == BreakerState::open && now >= open_until_) {
        // The half-open state starts now, so the attempt settling was
        // admitted before it: no probe of it, and an ordinary attempt
        // outside closed counts for nothing.
        state_ = BreakerState::half_open;
        return BreakerTransition{BreakerState::open, BreakerState::half_open, BreakerReason::timer, open_ms_};
    }
    if (count == BreakerCount::none) return std::nullopt;

    switch (state_) {
        case BreakerState::closed:
            if (how != Admit::pass) return std::nullopt;  // a late probe is no closed-state attempt
            if (count == BreakerCount::success) {
                run_ = 0;
                count_in_window(false, now);
                return std::nullopt;
            }
            ++run_;
            count_in_window(true, now);
            if (run_ >= config_.consecutive_failures) {
                open(now, BreakerReason::consecutive, retry_after_ms, moved);
            } else if (ratio_reached()) {
                open(now, BreakerReason::ratio, retry_after_ms, moved);
            }
            return moved;
        case BreakerState::half_open:
            if (how != Admit::probe) return std::nullopt;
            if (count == BreakerCount::success) {
                close();
                return BreakerTransition{BreakerState::half_open, BreakerState::closed, BreakerReason::probe_ok, 0};
            }
            open(now, BreakerReason::probe_failed, retry_after_ms, moved);
            return moved;
        case BreakerState::open:
            return std::nullopt;  // a result from before it opened
    }
    return std::nullopt;
}

void Breaker::open(Time now, BreakerReason reason, std::optional<std::int64_t> retry_after_ms,
                   std::optional<BreakerTransition>& moved) {
    const BreakerState from = state_;
    reopens_ = from == BreakerState::closed ? 0 : reopens_ + 1;

    // open_ms * 2^reopens, saturating at max_open_ms; then at least the
    // provider's Retry-After, still at most max_open_ms.
    const std::int64_t cap = std::max<std::int64_t>(0, config_.max_open_ms);
    std::int64_t ms = std::clamp<std::int64_t>(config_.open_ms, 0, cap);
    for (int i = 0; i < reopens_ && ms < cap && ms > 0; ++i) ms = ms > cap / 2 ? cap : ms * 2;
    if (retry_after_ms) ms = std::max(ms, *retry_after_ms);
    ms = std::min(ms, cap);

    state_ = BreakerState::open;
    open_ms_ = ms;
    open_until_ = now + std::chrono::milliseconds(ms);
    reset_counts();
    moved = BreakerTransition{from, BreakerState::open, reason, ms};
}

void Breaker::close() {
    state_ = BreakerState::closed;
    reopens_ = 0;
    open_ms_ = 0;
    reset_counts();
}

void Breaker::reset_counts() {
    run_ = 0;
    window_.fill(Bucket{});
}

std::int64_t Breaker::bucket_ms() const {
    return std::max<std::int64_t>(1, config_.window_ms / kBuckets);
}

// A time before the last one counted (callers may read their clock before
// taking the breaker's lock) counts in the last one's slice: the window never
// moves back, and a newer slice is never emptied for an older one.
void Breaker::count_in_window(bool failure, Time now) {
    const std::int64_t index = std::max(floor_div(ms_since_epoch(now), bucket_ms()), last_index_);
    Bucket& b = window_[static_cast<std::size_t>(((index % kBuckets) + kBuckets) % kBuckets)];
    if (b.index != index) b = Bucket{index, 0, 0};
    ++b.attempts;
    if (failure) ++b.failures;
    last_index_ = index;
}

// Read right after count_in_window: the kBuckets slices up to the current
// one, the oldest dropped as time moves into a new slice.
bool Breaker::ratio_reached() const {
    if (last_index_ == std::numeric_limits<std::int64_t>::min()) return false;  // nothing counted
    std::int64_t attempts = 0;
    std::int64_t failures = 0;
    for (const Bucket& b : window_) {
        if (b.index > last_index_ - kBuckets && b.index <= last_index_) {
            attempts += b.attempts;
            failures += b.failures;
        }
    }
    if (attempts == 0 || attempts < config_.min_attempts) return false;
    // Division, not failure_ratio * attempts: 3 of 10 is exactly the double
    // nearest 0.3, as the configured 0.3 is.
    return static_cast<double>(failures) / static_cast<double>(attempts) >= config_.failure_ratio;
}

}  // namespace modelproxy::policy
