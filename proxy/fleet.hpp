// The fleet (docs/behaviour.md section 15) as this replica takes part in it:
// whether it treats Redis as up, the replicas it last saw, and the quota
// windows it keeps itself (without a fleet, and while Redis is down). The
// decisions are policy/'s (FleetHealth, fleet_share, QuotaWindow); the
// Redis calls are transport/'s (RedisClient, RedisQuota). Process-wide,
// shared by the workers: each worker makes its quota calls on its own
// Redis connection (Worker::redis), and one background thread keeps the
// heartbeat and, while Redis is down, the pings.
#pragma once

#include "config/config.hpp"
#include "policy/breaker.hpp"
#include "policy/fleet.hpp"
#include "policy/quota_window.hpp"
#include "transport/redis.hpp"
#include "transport/executor.hpp"
#include "transport/upstream.hpp"

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace modelproxy::proxy {

using transport::Task;

// The Redis client options of a fleet block (the password from its
// variable, the rediss:// trust roots).
transport::RedisOptions redis_options(const config::Fleet& fleet, const transport::TlsContext& tls);
// What identifies one Redis server and login: a client made for another
// must be made again.
std::string redis_identity(const config::Fleet& fleet);

struct CandidateState;  // candidates.hpp

class Fleet {
public:
    using Time = std::chrono::steady_clock::time_point;

    // A candidate whose breaker the fleet shares: its state and its route's
    // breaker settings.
    struct Watched {
        std::shared_ptr<CandidateState> state;
        policy::BreakerConfig config;
    };
    // A transition of a shared breaker, written by the background thread.
    struct Write {
        enum class Kind { open, close, release } kind = Kind::open;
        std::shared_ptr<CandidateState> state;
        policy::BreakerConfig config;
        std::int64_t retry_after_ms = 0;  // open: the provider's Retry-After with the failure
        bool release_lease = false;       // open, close: the probe's lease goes too
    };

    static Fleet& process();
    ~Fleet();

    // Startup and each reload: the fleet in force (nullopt: none). A changed
    // server restarts the background thread against the new one; the health
    // starts up again.
    void configure(const std::optional<config::Fleet>& fleet, const transport::TlsContext& tls);
    // The candidates whose breakers are shared (a generation's named
    // candidates), read from Redis at least every 100 ms.
    void watch(std::vector<Watched> candidates);
    // Queues a transition for the background thread (never a turn's wait).
    void write(Write w);
    void stop();

    // Whether a fleet block is in force, and whether Redis is treated as up.
    bool enabled() const { return enabled_.load(std::memory_order_acquire); }
    bool up() const { return up_.load(std::memory_order_acquire); }
    // A Redis call on a turn's path ended: failed, refused or slow (`ok`
    // false) or not. Three bad ones in a row take Redis down (one stderr line).
    void on_call(bool ok, std::string_view why);
    // The replicas seen in the last heartbeat (this one included), at least 1.
    std::int64_t replicas_seen() const { return replicas_.load(std::memory_order_relaxed); }

    // The quota windows this replica keeps, per route name: without a
    // fleet, the route's whole quota; while Redis is down, its share.
    policy::QuotaAnswer reserve_local(const std::string& route, const policy::QuotaAsk& ask, Time now);
    void settle_local(const std::string& route, std::int64_t second, std::int64_t delta, Time now);
    void cancel_local(const std::string& route, std::int64_t second, std::int64_t tokens, Time now);
    // Within a minute of Redis coming back: a restarted Redis may have
    // forgotten the minute, so a replica keeps within its own share too.
    bool recently_resumed(Time now) const {
        const auto at = resumed_at_.load(std::memory_order_relaxed);
        return at != 0 && now.time_since_epoch().count() - at < std::chrono::duration_cast<Time::duration>(
                                                                      std::chrono::seconds(61)).count();
    }

private:
    void run_background(std::shared_ptr<boost::asio::io_context> io, config::Fleet fleet,
                        transport::TlsContext tls, std::uint64_t generation);
    void ping_result(bool ok, Time now, const config::Fleet& fleet);
    std::string breaker_key(const config::Fleet& fleet, const CandidateState& state) const;
    Task<void> share_breakers(transport::RedisClient& client, const config::Fleet& fleet, bool renew);

    std::vector<Watched> watched_;  // under mutex_
    std::vector<Write> outbox_;     // under mutex_

    std::mutex mutex_;  // health_, windows_, the thread
    policy::FleetHealth health_;
    std::map<std::string, policy::QuotaWindow, std::less<>> windows_;
    std::atomic<bool> enabled_{false};
    std::atomic<bool> up_{true};
    std::atomic<std::int64_t> replicas_{1};
    std::atomic<Time::rep> resumed_at_{0};  // when Redis last came back (steady clock), 0: never
    std::string identity_;  // the configured server's
    std::string url_;       // safe to log
    std::uint64_t generation_ = 0;
    std::shared_ptr<boost::asio::io_context> io_;
    std::thread thread_;
    std::string replica_id_;
};

}  // namespace modelproxy::proxy
