// One candidate's circuit breaker (docs/behaviour.md section 13) as a value:
// the failures it counts, when it opens, how long it stays open, and the
// probes of its half-open state. Pure: the caller passes the time of every
// event and keeps the breaker under its own lock; nothing here reads a clock
// or arms a timer.
#pragma once

#include "policy/error_class.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace modelproxy::policy {

// routes[].breaker (section 13).
struct BreakerConfig {
    bool enabled = true;
    int consecutive_failures = 5;    // counted failures in a row that open it (1..1000)
    double failure_ratio = 0.5;      // or this share of counted attempts in the window (0.01..1) ...
    int min_attempts = 20;           // ... over at least this many counted attempts (1..100000)
    std::int64_t window_ms = 10000;  // the ratio's window (100..600000)
    std::int64_t open_ms = 5000;     // the first open time; doubles on each re-open in a row (10..600000)
    std::int64_t max_open_ms = 20000;  // (open_ms..3600000)
    int probes = 1;                  // probes in flight at once while half-open (1..100)
    bool fail_fast = false;          // a turn with no usable candidate waits for a half-open, or 503
};

enum class BreakerState { closed, open, half_open };
std::string_view to_string(BreakerState s);  // "closed", "open", "half-open"

enum class BreakerReason { consecutive, ratio, probe_ok, probe_failed, timer };
std::string_view to_string(BreakerReason r);  // "consecutive", "ratio", "probe-ok", "probe-failed", "timer"

// A change of state, as its record tells it (section 13's breaker record).
struct BreakerTransition {
    BreakerState from = BreakerState::closed;
    BreakerState to = BreakerState::closed;
    BreakerReason reason = BreakerReason::consecutive;
    std::int64_t open_ms = 0;  // the open time in force: the new one when it opens, the one
                               // that passed when it half-opens, 0 when it closes
    friend bool operator==(const BreakerTransition&, const BreakerTransition&) = default;
};

// How one attempt's end counts (section 13's attribution).
enum class BreakerCount { failure, success, none };

// The facts of an attempt's end that the attribution reads.
struct BreakerFacts {
    bool ok_2xx = false;                  // the answer was 2xx and the attempt did not fail
    std::optional<ErrorClass> failed = std::nullopt;  // the failure's class, when it failed
    TimeoutSource timeout_source = TimeoutSource::none;
    bool deadline_cut = false;            // the turn deadline cut it
    bool client_left = false;             // it ended because the client left
};

// Counted failures: network, server, stream-incomplete, and timeout from the
// sources first-byte, stream-idle and provider-timeout. Counted successes: a
// 2xx answer. Nothing else counts: rate-limit, authentication,
// content-filter, invalid-request, not-found, client, identity, credential,
// a first-token timeout, a cut by the turn deadline, a client that left.
BreakerCount breaker_count(const BreakerFacts& end);

// What the breaker lets an attempt do.
enum class Admit {
    pass,   // an ordinary attempt
    probe,  // the half-open state's probe: it holds one of `probes` slots until its result
    held,   // not now
};

class Breaker {
public:
    using Time = std::chrono::steady_clock::time_point;

    explicit Breaker(const BreakerConfig& config) : config_(config) {}

    // The breaker's state at `now`. An open breaker whose open time has
    // passed reads half-open; the move itself (and its `timer` transition)
    // happens at the next admit() or settle().
    BreakerState state(Time now) const;
    // Whether admit(now, false) would not hold: closed, or half-open with a
    // probe slot free. Disabled: always.
    bool usable(Time now) const;
    // When an open breaker half-opens; `now` for a breaker that is not open.
    Time half_open_at(Time now) const;
    int probes_in_flight() const { return probes_; }
    // New settings (a reload), the state kept.
    void reconfigure(const BreakerConfig& config) { config_ = config; }

    // An attempt asks to go (a turn's first attempt on the candidate, or a
    // replay on it). Closed: pass. Half-open with a free slot: probe (the
    // slot is taken). Otherwise held, unless `forced` (no candidate of the
    // turn is usable: a breaker never fails a turn by itself), which makes
    // it pass. `moved` receives the open -> half-open transition when the
    // open time passed by `now` (an open time has passed at its last
    // instant), else nullopt. Disabled: pass, and never a transition.
    Admit admit(Time now, bool forced, std::optional<BreakerTransition>& moved);

    // An attempt admitted as `how` (pass or probe) ended, counted as
    // `count` (breaker_count), at `now`; `retry_after_ms` is the provider's
    // Retry-After on that failure, when it sent one. Returns the transition
    // it caused, if any:
    //   closed: a success resets the run of failures; a failure extends it;
    //     consecutive_failures in a row -> open (consecutive); else, with at
    //     least min_attempts counted in the last window_ms and a failure share
    //     of at least failure_ratio -> open (ratio);
    //   half-open, a probe: success -> closed (probe-ok, the doubling reset);
    //     failure -> open (probe-failed, the open time doubled); none: its
    //     slot is freed;
    //   an ordinary attempt outside closed changes nothing, nor does a probe
    //   settled outside half-open (its slot is freed all the same: a probe
    //   holds its slot until its result, in whatever state);
    //   an open breaker whose open time has passed moves to half-open first
    //   (timer) and returns that move: the attempt settling was admitted
    //   before the half-open began, so its result changes nothing else.
    // Disabled: nothing, ever.
    // Open time: open_ms doubled per re-open without a close in between, at
    // least retry_after_ms, at most max_open_ms.
    std::optional<BreakerTransition> settle(Admit how, BreakerCount count, Time now,
                                            std::optional<std::int64_t> retry_after_ms = std::nullopt);

private:
    // The ratio window as buckets of window_ms / kBuckets: the share is read
    // over the kBuckets slices up to the current one, so a slice drops out
    // as time moves kBuckets slices past it. Only counted attempts of the
    // closed state go in; every open and every close empties it.
    static constexpr int kBuckets = 20;
    struct Bucket {
        std::int64_t index = -1;  // which window_ms / kBuckets slice of time it holds
        std::int32_t attempts = 0;
        std::int32_t failures = 0;
    };
    void open(Time now, BreakerReason reason, std::optional<std::int64_t> retry_after_ms,
              std::optional<BreakerTransition>& moved);
    void close();
    void reset_counts();  // the run of failures and the window
    void count_in_window(bool failure, Time now);
    bool ratio_reached() const;  // after count_in_window: min_attempts and failure_ratio met
    std::int64_t bucket_ms() const;

    BreakerConfig config_;
    BreakerState state_ = BreakerState::closed;
    int run_ = 0;          // counted failures in a row while closed
    int reopens_ = 0;      // opens without a close in between, minus one
    int probes_ = 0;       // probes admitted and not yet settled
    Time open_until_{};
    std::int64_t open_ms_ = 0;  // the open time in force; 0 once closed
    std::int64_t last_index_ = std::numeric_limits<std::int64_t>::min();  // the latest slice counted in
    std::array<Bucket, kBuckets> window_{};
};

}  // namespace modelproxy::policy
