#include "proxy/fleet.hpp"

#include "proxy/candidates.hpp"

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

// The shared breakers. A breaker's hash (`<prefix>breaker:<route>:<model>`)
// holds `until` (Redis's clock, ms) and `open_ms` while the fleet's breaker
// is open or half-open; no hash is closed. Probe leases are
// `<hash>:probe:<i>`, i < probes, each a 10 s key naming its replica.
const transport::RedisScript& breaker_open_script() {
    // ARGV: open_ms, max_open_ms, the provider's Retry-After (0: none), a
    // lease to drop ("" none). Doubles the open time in force when the
    // breaker re-opens from half-open; an open one stays as it is.
    static const transport::RedisScript script(R"lua(
pcall(function() redis.replicate_commands() end)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[4] ~= '' then redis.call('DEL', ARGV[4]) end
local prev = tonumber(redis.call('HGET', KEYS[1], 'open_ms'))
local untl = tonumber(redis.call('HGET', KEYS[1], 'until'))
if prev and untl and now < untl then return prev end
local ms = tonumber(ARGV[1])
if prev then ms = prev * 2 end
ms = math.max(ms, tonumber(ARGV[3]))
ms = math.min(ms, tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'until', now + ms, 'open_ms', ms)
redis.call('PEXPIRE', KEYS[1], ms + 600000)
return ms
)lua");
    return script;
}

const transport::RedisScript& breaker_read_script() {
    // For each key: -1 when closed (no hash), else the ms until its open
    // time ends (<= 0: half-open), and its open_ms.
    static const transport::RedisScript script(R"lua(
pcall(function() redis.replicate_commands() end)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, k in ipairs(KEYS) do
  local untl = tonumber(redis.call('HGET', k, 'until'))
  if untl then
    out[#out + 1] = 1
    out[#out + 1] = untl - now
    out[#out + 1] = tonumber(redis.call('HGET', k, 'open_ms')) or 0
  else
    out[#out + 1] = 0
    out[#out + 1] = 0
    out[#out + 1] = 0
  end
end
return out
)lua");
    return script;
}

const transport::RedisScript& lease_script() {
    // ARGV: probes, replica id, "take" | "renew" | "release", a lease key.
    static const transport::RedisScript script(R"lua(
if ARGV[3] == 'take' then
  for i = 0, tonumber(ARGV[1]) - 1 do
    local k = KEYS[1] .. ':probe:' .. i
    if redis.call('SET', k, ARGV[2], 'NX', 'PX', 10000) then return k end
  end
  return false
end
if redis.call('GET', ARGV[4]) ~= ARGV[2] then return false end
if ARGV[3] == 'renew' then return redis.call('PEXPIRE', ARGV[4], 10000) end
return redis.call('DEL', ARGV[4])
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
    std::vector<Watched> watched;
    std::string url;
    {
        std::lock_guard lock(mutex_);
        url = url_;
        change = health_.on_call(ok);
        if (change == policy::FleetChange::down) {
            up_.store(false, std::memory_order_release);
            watched = watched_;
            outbox_.clear();
        }
    }
    // Down: the fleet's part of every breaker is forgotten (each replica's
    // own breakers go on); it is read again once Redis is back.
    for (const Watched& w : watched) {
        std::lock_guard lock(w.state->mutex);
        w.state->fleet_open = false;
        w.state->fleet_ticket = CandidateState::Ticket::none;
        w.state->fleet_lease.clear();
    }
    if (change == policy::FleetChange::down) {
        say("fleet: Redis at " + url + " failed " + std::to_string(policy::fleet_down_after) +
            " calls in a row (" + std::string(why) + "); this replica uses its own state (each quota divided by " +
            std::to_string(replicas_seen()) + " replicas) until Redis answers again");
    }
}

void Fleet::ping_result(bool ok, Time now, const config::Fleet& fleet) {
    policy::FleetChange change;
    {
        std::lock_guard lock(mutex_);
        change = health_.on_ping(ok, now);
        if (change == policy::FleetChange::up) {
            resumed_at_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
            up_.store(true, std::memory_order_release);
        }
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
        auto next_beat = std::chrono::steady_clock::now();
        for (;;) {
            {
                std::lock_guard lock(mutex_);
                if (generation != generation_) co_return;
            }
            std::chrono::milliseconds pause{100};
            if (up()) {
                const auto now = std::chrono::steady_clock::now();
                const bool beat = now >= next_beat;
                co_await share_breakers(client, fleet, beat);
            }
            if (up() && std::chrono::steady_clock::now() >= next_beat) {
                next_beat = std::chrono::steady_clock::now() + std::chrono::seconds(1);
                std::vector<std::string> keys{key};
                std::vector<std::string> args{replica_id_};
                const transport::RedisResult r =
                    co_await client.eval_script(heartbeat_script(), std::move(keys), std::move(args), timeout);
                const bool ok = r.ok() && r.kind == transport::RedisResult::Kind::integer;
                if (ok) replicas_.store(std::max<long long>(r.integer, 1), std::memory_order_relaxed);
                on_call(ok, ok ? std::string_view() : std::string_view(r.text));
                if (!up()) pause = policy::fleet_first_ping;
            } else if (!up()) {
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

std::string Fleet::breaker_key(const config::Fleet& fleet, const CandidateState& state) const {
    return fleet.key_prefix + "breaker:" + state.route + ":" + state.model;
}

void Fleet::watch(std::vector<Watched> candidates) {
    std::lock_guard lock(mutex_);
    watched_ = std::move(candidates);
}

void Fleet::write(Write w) {
    if (!enabled() || !up()) return;  // nothing is shared while Redis is down
    std::lock_guard lock(mutex_);
    outbox_.push_back(std::move(w));
}

Task<void> Fleet::share_breakers(transport::RedisClient& client, const config::Fleet& fleet, bool renew) {
    using Ticket = CandidateState::Ticket;
    const std::chrono::milliseconds timeout(fleet.timeout_ms);
    std::vector<Write> writes;
    std::vector<Watched> watched;
    {
        std::lock_guard lock(mutex_);
        writes.swap(outbox_);
        watched = watched_;
    }
    // The transitions this replica saw since the last round.
    for (const Write& w : writes) {
        const std::string key = breaker_key(fleet, *w.state);
        std::string lease;
        if (w.release_lease) {
            std::lock_guard lock(w.state->mutex);
            lease = std::exchange(w.state->fleet_lease, std::string());
        }
        transport::RedisResult r;
        if (w.kind == Write::Kind::open) {
            std::vector<std::string> keys{key};
            std::vector<std::string> args{std::to_string(w.config.open_ms), std::to_string(w.config.max_open_ms),
                                          std::to_string(w.retry_after_ms), lease};
            r = co_await client.eval_script(breaker_open_script(), std::move(keys), std::move(args), timeout);
        } else if (w.kind == Write::Kind::close) {
            std::vector<std::string> args{"DEL", key};
            if (!lease.empty()) args.push_back(lease);
            r = co_await client.call(std::move(args), timeout);
        } else {
            if (lease.empty()) continue;
            std::vector<std::string> keys{key};
            std::vector<std::string> args{"0", replica_id_, "release", lease};
            r = co_await client.eval_script(lease_script(), std::move(keys), std::move(args), timeout);
        }
        on_call(r.ok(), r.text);
    }
    if (watched.empty()) co_return;
    // The fleet's state of every shared breaker, in one call.
    std::vector<std::string> keys;
    for (const Watched& w : watched) keys.push_back(breaker_key(fleet, *w.state));
    const transport::RedisResult r =
        co_await client.eval_script(breaker_read_script(), keys, std::vector<std::string>{}, timeout);
    const bool ok = r.ok() && r.kind == transport::RedisResult::Kind::array && r.elements.size() == 3 * watched.size();
    on_call(ok, r.text);
    if (!ok) co_return;
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::size_t> wanted;
    for (std::size_t i = 0; i < watched.size(); ++i) {
        CandidateState& s = *watched[i].state;
        const bool open = r.elements[3 * i].integer != 0;
        const long long left = r.elements[3 * i + 1].integer;
        std::lock_guard lock(s.mutex);
        s.fleet_open = open;
        s.fleet_until = now + std::chrono::milliseconds(open ? left : 0);
        s.fleet_open_ms = r.elements[3 * i + 2].integer;
        if (!open) {
            // Closed fleet-wide: this replica's count starts again.
            if (s.shared_part.state(now) != policy::BreakerState::closed) s.shared_part = policy::Breaker(watched[i].config);
            if (s.fleet_ticket == Ticket::ready) s.fleet_ticket = Ticket::none;
        } else if (left <= 0 && s.fleet_ticket == Ticket::none && s.fleet_wanted) {
            wanted.push_back(i);
        }
        // A lease taken but not used by a turn within 2 s goes back.
        if (s.fleet_ticket == Ticket::ready && now - s.fleet_ticket_at > std::chrono::seconds(2)) {
            s.fleet_ticket = Ticket::none;
            std::lock_guard out(mutex_);
            outbox_.push_back(Write{Write::Kind::release, watched[i].state, watched[i].config});
        }
        s.fleet_wanted = false;
    }
    // Half-open with turns waiting for it here: one lease each, if the
    // fleet has one of its `probes` free.
    for (std::size_t i : wanted) {
        std::vector<std::string> lkeys{keys[i]};
        std::vector<std::string> args{std::to_string(watched[i].config.probes), replica_id_, "take", ""};
        const transport::RedisResult got =
            co_await client.eval_script(lease_script(), std::move(lkeys), std::move(args), timeout);
        on_call(got.ok(), got.text);
        if (got.kind != transport::RedisResult::Kind::string) continue;
        CandidateState& s = *watched[i].state;
        std::lock_guard lock(s.mutex);
        s.fleet_lease = got.text;
        s.fleet_ticket = Ticket::ready;
        s.fleet_ticket_at = std::chrono::steady_clock::now();
    }
    // Leases of probes still running are renewed (each lives 10 s).
    if (renew) {
        for (const Watched& w : watched) {
            std::string lease;
            {
                std::lock_guard lock(w.state->mutex);
                if (w.state->fleet_ticket == Ticket::probing) lease = w.state->fleet_lease;
            }
            if (lease.empty()) continue;
            std::vector<std::string> lkeys{breaker_key(fleet, *w.state)};
            std::vector<std::string> args{"0", replica_id_, "renew", lease};
            const transport::RedisResult rr =
                co_await client.eval_script(lease_script(), std::move(lkeys), std::move(args), timeout);
            on_call(rr.ok(), rr.text);
        }
    }
}

policy::QuotaAnswer Fleet::reserve_local(const std::string& route, const policy::QuotaAsk& ask, Time now) {
    std::lock_guard lock(mutex_);
    auto it = windows_.find(route);
    if (it == windows_.end()) it = windows_.emplace(route, policy::QuotaWindow{}).first;
    return it->second.reserve(ask, now);
}

void Fleet::cancel_local(const std::string& route, std::int64_t second, std::int64_t tokens, Time now) {
    std::lock_guard lock(mutex_);
    if (auto it = windows_.find(route); it != windows_.end()) it->second.cancel(second, tokens, now);
}

void Fleet::settle_local(const std::string& route, std::int64_t second, std::int64_t delta, Time now) {
    std::lock_guard lock(mutex_);
    if (auto it = windows_.find(route); it != windows_.end()) it->second.settle(second, delta, now);
}

}  // namespace modelproxy::proxy
