// The fake provider's per-minute request quota (docs/behaviour.md section
// 15's fleet simulation): a sliding minute kept as 60 fixed one-second
// buckets, the current second and the 59 before it, the same window shape
// the fleet's Redis script keeps. A request is admitted while the window
// holds fewer than `per_minute`; one above that is answered 429. The
// seconds are whole seconds of the time passed in (the provider passes the
// wall clock's milliseconds, the clock Redis TIME reads on this machine, so
// that its buckets line up with the fleet's and the comparison measures the
// proxy, not two clocks' phase).
//
// The state it reports is what OpenAI's headers carry: the limit, what is
// left of it, and the time until the remaining count next grows (when the
// oldest non-empty bucket leaves the window; 0 when it is empty).
// Pure: the time is passed in.
#pragma once

#include <array>
#include <cstdint>

namespace modelproxy::fleet {

class MinuteWindow {
public:
    explicit MinuteWindow(std::int64_t per_minute) : per_minute_(per_minute) {}

    struct State {
        bool admitted = false;       // take(): this request was admitted
        std::int64_t limit = 0;      // x-ratelimit-limit-requests
        std::int64_t remaining = 0;  // x-ratelimit-remaining-requests, after this request
        double reset_ms = 0;         // x-ratelimit-reset-requests: until the remaining count grows
    };

    // Counts a request arriving at `now_ms` against the window.
    State take(double now_ms);
    // The state at `now_ms`, counting nothing.
    State peek(double now_ms) const;

    std::int64_t per_minute() const { return per_minute_; }

private:
    struct Bucket {
        std::int64_t second = INT64_MIN;
        std::int64_t count = 0;
    };
    std::int64_t per_minute_;
    std::array<Bucket, 60> buckets_{};
};

}  // namespace modelproxy::fleet
