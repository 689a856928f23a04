// A route's quota kept by one replica (docs/behaviour.md section 15): a
// sliding one-minute window of requests and tokens as one-second buckets
// (the current second and the 60 whole ones before it, so that no 60 s span
// holds more than the quota),
// the same window the fleet's Redis script keeps, for a replica without a
// fleet and for one whose Redis is down (its share of the quota). Pure: the
// caller passes the time and keeps the window under its own lock.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace modelproxy::policy {

struct QuotaAsk {
    std::int64_t requests_per_minute = 0;  // 0: no limit on requests
    std::int64_t tokens_per_minute = 0;    // 0: no limit on tokens
    std::int64_t tokens = 0;               // the reservation's tokens (at most tokens_per_minute)
};

struct QuotaAnswer {
    bool reserved = false;
    std::int64_t second = 0;   // reserved: the bucket it was counted in (settle it there)
    std::int64_t tokens = 0;   // reserved: the tokens charged
    std::int64_t wait_ms = 0;  // not reserved: until enough old buckets leave the window (>= 1)
};

class QuotaWindow {
public:
    using Time = std::chrono::steady_clock::time_point;

    // Reserves 1 request and ask.tokens at `now` when the window holds room
    // for them; else how long until it would.
    QuotaAnswer reserve(const QuotaAsk& ask, Time now);
    // Adds `delta` tokens (negative: given back) to the bucket of `second`
    // while it is still in the window; a bucket never goes below 0.
    void settle(std::int64_t second, std::int64_t delta, Time now);
    // Takes a reservation back whole (its request and `tokens`).
    void cancel(std::int64_t second, std::int64_t tokens, Time now);
    // The window's counts at `now` (tests, metrics).
    std::int64_t requests(Time now);
    std::int64_t tokens(Time now);

private:
    struct Bucket {
        std::int64_t second = -1;
        std::int64_t requests = 0;
        std::int64_t tokens = 0;
    };
    static std::int64_t second_of(Time t);
    static std::int64_t ms_of(Time t);
    void expire(std::int64_t second);
    std::array<Bucket, 61> buckets_{};
};

}  // namespace modelproxy::policy
