#include "proxy/fleet.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <iostream>
#include <random>
#include <unistd.h>

namespace modelproxy::proxy {

namespace {

namespace asio = boost::asio;

void say(const std::string& line) { std::cerr << "modelproxy: " << line << std::endl; }

// Each replica's heartbeat: its id in a sorted set scored by Redis's own
// clock, older ones dropped, and the count of those left (the replicas seen
// in the last 3 s). Names and times only.
const transport::RedisScript& heartbeat_script() {
    static const transport::RedisScript script(R"lua(
pcall(function() redis.replicate_commands() end)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 3000)
redis.call('PEXPIRE', KEYS[1], 10000)
return redis.call('ZCARD', KEYS[1])
)lua");
    return script;
}

std::string make_replica_id() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::random_device rd;
    return std::string(host) + ":" + std::to_string(getpid()) + ":" + std::to_string(rd() % 1000000);
}

}  // namespace

transport::RedisOptions redis_options(const config::Fleet& fleet, const transport::TlsContext& tls) {
    transport::RedisOptions o;
    o.url.tls = fleet.tls;
    o.url.host = fleet.host;
    o.url.port = fleet.port;
    o.url.db = fleet.db;
    o.password = fleet.password.value_or("");
    o.tls = tls.context;
    return o;
}

std::string redis_identity(const config::Fleet& fleet) {
    // The password is part of what makes a login, but never leaves this
    // process: it is hashed away with the rest.
    const std::string whole = fleet.redis_url + '\0' + fleet.password.value_or("") + '\0' + fleet.ca_file;
    return std::to_string(std::hash<std::string>{}(whole));
}

Fleet& Fleet::process() {
    static Fleet fleet;
    return fleet;
}

Fleet::~Fleet() { stop(); }

void Fleet::stop() {
    std::thread joining;
    {
        std::lock_guard lock(mutex_);
        ++generation_;
        if (io_) io_->stop();
        io_.reset();
        joining = std::move(thread_);
    }
    if (joining.joinable()) joining.join();
}

void Fleet::configure(const std::optional<config::Fleet>& fleet, const transport::TlsContext& tls) {
    if (!fleet) {
        stop();
        enabled_.store(false, std::memory_order_release);
        up_.store(true, std::memory_order_release);
        return;
    }
    const std::string identity = redis_identity(*fleet);
    {
        std::lock_guard lock(mutex_);
        if (io_ && identity == identity_) return;  // the same server: the state goes on
    }
    stop();
    std::lock_guard lock(mutex_);
    identity_ = identity;
    url_ = fleet->redis_url;
    if (replica_id_.empty()) replica_id_ = make_replica_id();
    health_ = policy::FleetHealth{};
    up_.store(true, std::memory_order_release);
    replicas_.store(1, std::memory_order_relaxed);
    enabled_.store(true, std::memory_order_release);
    io_ = std::make_shared<asio::io_context>(1);
    thread_ = std::thread([this, io = io_, f = *fleet, tls, g = generation_] { run_background(io, f, tls, g); });
}

void Fleet::on_call(bool ok, std::string_view why) {
    policy::FleetChange change;
    {
        std::lock_guard lock(mutex_);
        change = health_.on_call(ok);
        if (change == policy::FleetChange::down) up_.store(false, std::memory_order_release);
    }
    if (change == policy::FleetChange::down) {
        say("fleet: Redis at " + url_ + " failed " + std::to_string(policy::fleet_down_after) +
            " calls in a row (" + std::string(why) + "); this replica uses its own state (each quota divided by " +
            std::to_string(replicas_seen()) + " replicas) until Redis answers again");
    }
}

void Fleet::ping_result(bool ok, Time now, const config::Fleet& fleet) {
    policy::FleetChange change;
    {
        std::lock_guard lock(mutex_);
        change = health_.on_ping(ok, now);
        if (change == policy::FleetChange::up) up_.store(true, std::memory_order_release);
    }
    if (change == policy::FleetChange::up) say("fleet: Redis at " + fleet.redis_url + " answers again; sharing again");
}

void Fleet::run_background(std::shared_ptr<asio::io_context> io, config::Fleet fleet, transport::TlsContext tls,
                           std::uint64_t generation) {
    auto loop = [this, &fleet, &tls, generation]() -> transport::Task<void> {
        auto executor = co_await asio::this_coro::executor;
        transport::RedisClient client(executor, redis_options(fleet, tls));
        transport::Timer timer(executor);
        const std::chrono::milliseconds timeout(fleet.timeout_ms);
        const std::string key = fleet.key_prefix + "replicas";
        for (;;) {
            {
                std::lock_guard lock(mutex_);
                if (generation != generation_) co_return;
            }
            std::chrono::milliseconds pause{1000};
            if (up()) {
                std::vector<std::string> keys{key};
                std::vector<std::string> args{replica_id_};
                const transport::RedisResult r =
                    co_await client.eval_script(heartbeat_script(), std::move(keys), std::move(args), timeout);
                const bool ok = r.ok() && r.kind == transport::RedisResult::Kind::integer;
                if (ok) replicas_.store(std::max<long long>(r.integer, 1), std::memory_order_relaxed);
                on_call(ok, ok ? std::string_view() : std::string_view(r.text));
                if (!up()) pause = policy::fleet_first_ping;
            } else {
                std::vector<std::string> ping{"PING"};
                const transport::RedisResult r = co_await client.call(std::move(ping), timeout);
                ping_result(r.ok(), std::chrono::steady_clock::now(), fleet);
                std::lock_guard lock(mutex_);
                pause = up() ? std::chrono::milliseconds(0) : health_.next_ping_delay();
            }
            if (pause.count() > 0) {
                timer.expires_after(pause);
                co_await timer.async_wait(transport::use_tuple);
            }
        }
    };
    asio::co_spawn(*io, loop(), asio::detached);
    io->run();
}

policy::QuotaAnswer Fleet::reserve_local(const std::string& route, const policy::QuotaAsk& ask, Time now) {
    std::lock_guard lock(mutex_);
    auto it = windows_.find(route);
    if (it == windows_.end()) it = windows_.emplace(route, policy::QuotaWindow{}).first;
    return it->second.reserve(ask, now);
}

void Fleet::settle_local(const std::string& route, std::int64_t second, std::int64_t delta, Time now) {
    std::lock_guard lock(mutex_);
    if (auto it = windows_.find(route); it != windows_.end()) it->second.settle(second, delta, now);
}

}  // namespace modelproxy::proxy
