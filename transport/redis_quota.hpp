// A route's quota shared by the fleet (docs/behaviour.md section 15, "Quota
// by reservation"): a sliding one-minute window of requests and tokens per
// route, kept in Redis and changed only by one Lua script, so each
// reservation and each settlement is one atomic call whatever the number of
// replicas.
//
// The window is 60 one-second buckets in one hash per route, key
// `<prefix>quota:<route>`, fields `r:<second>` (requests) and `t:<second>`
// (tokens), seconds by Redis `TIME` (never a replica's clock). A reservation
// counts the buckets of the last 60 seconds (the current one included),
// deletes the fields of older ones, and adds 1 request and its tokens to the
// current second's bucket when they fit. Each write sets the key to expire
// after 120 s, so an idle route's key vanishes. Nothing else is stored: no
// key, token, password or body, only the route's name and counts.
//
// Threading: as RedisClient's (one executor).
#pragma once

#include "transport/redis.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace modelproxy::transport {

// A route's `quota` block; 0 is no limit on that count.
struct QuotaLimits {
    std::int64_t requests_per_minute = 0;
    std::int64_t tokens_per_minute = 0;
};

struct QuotaReservation {
    enum class Outcome {
        reserved,  // counted in `bucket_second`'s bucket; settle it there
        wait,      // does not fit now; try again after `wait`
        failed,    // no usable answer from Redis (`error`): a failed call of section 15
    };
    Outcome outcome = Outcome::failed;
    std::int64_t bucket_second = 0;      // reserved: Redis's second the reservation was counted in
    std::int64_t tokens = 0;             // reserved: the tokens charged (the ask, at most tokens_per_minute)
    std::chrono::milliseconds wait{0};   // wait: until enough old buckets leave the window (>= 1 ms)
    std::string error;                   // failed: why
};

struct QuotaSettlement {
    bool failed = false;   // no usable answer from Redis (`error`)
    bool applied = false;  // the bucket was still in the window and now holds the change
    std::string error;
};

// The script's source and SHA-1 (the constant EVALSHA names).
const RedisScript& quota_script();

class RedisQuota {
public:
    // `client` must outlive this object; `key_prefix` is fleet.key_prefix.
    RedisQuota(RedisClient& client, std::string key_prefix);

    // The hash holding `route`'s window.
    std::string key(std::string_view route) const;

    // Reserves 1 request and `tokens` (at most limits.tokens_per_minute
    // when that is set; negative counts as 0) when the last minute's
    // requests + 1 and tokens + `tokens` are within the limits; else says
    // how long until they would be.
    Task<QuotaReservation> reserve(std::string route, QuotaLimits limits, std::int64_t tokens,
                                   std::chrono::milliseconds timeout);

    // Adds `delta_tokens` (negative: tokens given back) to the reservation's
    // bucket when that bucket is still in the window; a no-op otherwise
    // (the tokens have left the window anyway). A bucket's tokens never go
    // below 0.
    Task<QuotaSettlement> settle(std::string route, std::int64_t bucket_second, std::int64_t delta_tokens,
                                 std::chrono::milliseconds timeout);

private:
    RedisClient& client_;
    std::string prefix_;
};

}  // namespace modelproxy::transport
