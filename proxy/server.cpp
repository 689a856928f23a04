#include "proxy/server.hpp"

#include "proxy/fleet.hpp"
#include "proxy/session.hpp"
#include "proxy/startup.hpp"
#include "proxy/turn.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <malloc.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace modelproxy::proxy {

namespace {

void say(const std::string& line) { std::cerr << "modelproxy: " << line << std::endl; }

// Building a runtime (YAML parsing, Vectorscan's pattern compiler) leaves
// megabytes of freed blocks scattered in the main thread's heap, which glibc
// keeps resident because they are not at its top: about 8 of the 20 MiB a
// fresh process held. malloc_trim gives those pages back.
void release_freed_memory() { ::malloc_trim(0); }

}  // namespace

std::variant<std::shared_ptr<const Runtime>, std::vector<std::string>> Runtime::build(config::Config cfg) {
    auto runtime = std::make_shared<Runtime>();
    std::vector<std::string> problems;
    for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
        const auto& route = cfg.routes[i];
        transport::TlsContext tls;
        if (route.upstream.https) {
            auto made = transport::make_tls_context(route.tls);
            if (auto* error = std::get_if<std::string>(&made)) {
                problems.push_back("routes[" + std::to_string(i) + "].tls: " + *error);
            } else {
                tls = std::get<transport::TlsContext>(std::move(made));
            }
        }
        runtime->tls.push_back(std::move(tls));
        // Routes that share an upstream and TLS settings share a pool; a new
        // generation gets new pools so a changed CA never reuses old sessions.
        runtime->pool_keys.push_back(route.upstream_url + "|" + route.tls.ca_file + "|" + route.tls.cert_file +
                                     "|" + std::to_string(reinterpret_cast<std::uintptr_t>(runtime.get())));
        // Slots are assigned here, on the thread that builds generations
        // (startup, SIGHUP), before any turn can run on this one.
        runtime->metric_slots.push_back(metrics::Registry::process().slot_for(route.name));
        std::size_t owner = 0;
        while (runtime->pool_keys[owner] != runtime->pool_keys[i]) ++owner;
        runtime->idle_slots.push_back(runtime->metric_slots[owner]);
    }
    // docs/behaviour.md section 15: a rediss:// fleet server is verified like
    // an upstream; its trust roots are loaded here so that `check` refuses a
    // ca_file serving could not load.
    if (cfg.fleet && cfg.fleet->tls) {
        auto made = transport::make_tls_context(config::Tls{cfg.fleet->ca_file, "", ""});
        if (auto* error = std::get_if<std::string>(&made)) {
            problems.push_back("fleet.tls: " + *error);
        } else {
            runtime->fleet_tls = std::get<transport::TlsContext>(std::move(made));
        }
    }
    std::vector<std::string> keys;
    for (const auto& route : cfg.routes)
        if (route.api_key && !route.api_key->empty()) keys.push_back(*route.api_key);
    auto scanner = sse::CredentialScanner::build(keys, cfg.boundary.secret_patterns, cfg.boundary.default_patterns);
    if (auto* error = std::get_if<std::string>(&scanner)) {
        std::istringstream lines(*error);  // one line per bad pattern
        for (std::string line; std::getline(lines, line);) problems.push_back(line);
    } else {
        runtime->secrets.emplace(std::get<sse::CredentialScanner>(std::move(scanner)));
    }
    if (!problems.empty()) return problems;
    runtime->config = std::move(cfg);
    // The candidates (docs/behaviour.md section 13), over the config at its
    // final address; states no generation holds any more go first.
    CandidateStates::process().prune();
    runtime->candidates.build(runtime->config, CandidateStates::process());
    return std::shared_ptr<const Runtime>(std::move(runtime));
}

Worker::Worker(Shared& shared, int index) : shared_(shared), index_(index) {}

Worker::~Worker() = default;

std::unique_ptr<RequestSlot> Worker::take_slot() {
    if (spare_slots_.empty()) return std::make_unique<RequestSlot>();
    auto slot = std::move(spare_slots_.back());
    spare_slots_.pop_back();
    return slot;
}

void Worker::give_back(std::unique_ptr<RequestSlot> slot) {
    if (spare_slots_.size() >= max_spare_slots) return;  // a burst's extra slots are freed
    slot->clear();
    if (spare_slots_.capacity() == 0) spare_slots_.reserve(max_spare_slots);
    spare_slots_.push_back(std::move(slot));
}

void Worker::write_turn(std::uint16_t slot, const TurnRecord& record) {
    shared_.log.write(record);
    metrics::count_turn(counters(slot), record);
}

void Worker::write_attempt(std::uint16_t slot, const AttemptRecord& record, std::int64_t duration_ms) {
    shared_.log.write(record);
    metrics::count_attempt(counters(slot), record, duration_ms);
}

void Worker::write_attempt_and_turn(std::uint16_t slot, const AttemptRecord& attempt, std::int64_t duration_ms,
                                    const TurnRecord& turn) {
    log_attempt_and_turn(attempt, turn);
    count_attempt_and_turn(slot, attempt, duration_ms, turn);
}

void Worker::count_attempt_and_turn(std::uint16_t slot, const AttemptRecord& attempt, std::int64_t duration_ms,
                                    const TurnRecord& turn) {
    metrics::count_attempt(counters(slot), attempt, duration_ms);
    metrics::count_turn(counters(slot), turn);
}

void Worker::log_attempt_and_turn(const AttemptRecord& attempt, const TurnRecord& turn) {
    shared_.log.write(attempt, turn);
}

void Worker::listen(const tcp::endpoint& endpoint) {
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    int one = 1;
    ::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    acceptor_.bind(endpoint);
    acceptor_.listen(asio::socket_base::max_listen_connections);
}

void Worker::start() {
    asio::co_spawn(io_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
}

void Worker::stop_accepting() {
    asio::post(io_, [this] {
        boost::system::error_code ec;
        acceptor_.close(ec);
    });
}

void Worker::stop() { io_.stop(); }

namespace {

// The candidates whose breakers a fleet shares: this generation's named
// ones, each once (docs/behaviour.md section 15).
void share_candidates(const Runtime& runtime) {
    std::vector<Fleet::Watched> list;
    if (runtime.config.fleet) {
        std::set<const CandidateState*> seen;
        for (const auto& state : runtime.candidates.states()) {
            if (!seen.insert(state.get()).second) continue;
            for (const config::Route& route : runtime.config.routes)
                if (route.name == state->route) {
                    list.push_back({state, route.breaker});
                    break;
                }
        }
    }
    Fleet::process().watch(std::move(list));
}

}  // namespace

transport::RedisClient& Worker::redis(const Runtime& runtime) {
    const config::Fleet& fleet = *runtime.config.fleet;
    std::string identity = redis_identity(fleet);
    if (!redis_ || identity != redis_identity_) {
        // A settlement still on its way holds the old client: it is kept
        // until the worker ends (a reload that moves the fleet is rare).
        if (redis_) retired_redis_.push_back(std::move(redis_));
        redis_ = std::make_unique<transport::RedisClient>(io_.get_executor(), redis_options(fleet, runtime.fleet_tls));
        redis_identity_ = std::move(identity);
    }
    return *redis_;
}

void Worker::keep_pools(std::vector<std::string> keys) {
    asio::post(io_, [this, keys = std::move(keys)] {
        runtime();  // drops this worker's copy of the replaced generation now, not at its next request
        std::erase_if(pools_, [&](const auto& entry) {
            return std::find(keys.begin(), keys.end(), entry.first) == keys.end();
        });
    });
}

void Worker::end_turns() {
    asio::post(io_, [this] { cut_at_drain_limit(running_turns_); });
}

void Worker::join() {
    if (thread_.joinable()) thread_.join();
}

Task<void> Worker::accept_loop() {
    Timer backoff(io_);
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (ec) {
            if (!acceptor_.is_open() || ec == asio::error::operation_aborted) co_return;
            // Out of file descriptors and the like: pause rather than spin.
            backoff.expires_after(std::chrono::milliseconds(50));
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        // The session's cancellation slot is bound to a signal of its own,
        // which a turn's watch emits to cut that turn (run_turn). The
        // completion handler keeps the signal alive until the coroutine and
        // its cancellation state are gone.
        auto cut = std::make_shared<asio::cancellation_signal>();
        asio::cancellation_signal& signal = *cut;
        asio::co_spawn(io_, run_session(*this, std::move(socket), signal),
                       asio::bind_cancellation_slot(signal.slot(), [cut = std::move(cut)](std::exception_ptr) {}));
    }
}

int serve(const ServeOptions& options) {
    const config::Getenv getenv = [](const char* name) { return std::getenv(name); };
    Prepared prepared = prepare(options, nullptr, getenv);
    report(prepared);
    if (!prepared.runtime) return 2;
    auto runtime = std::move(prepared.runtime);
    release_freed_memory();

    Shared shared;
    if (auto error = shared.log.open(options.log_path)) {
        say(*error);
        return 1;
    }
    shared.set_runtime(runtime);
    const config::Config& cfg = runtime->config;
    Fleet::process().configure(cfg.fleet, runtime->fleet_tls);
    share_candidates(*runtime);

    int count = cfg.workers > 0 ? cfg.workers : static_cast<int>(std::thread::hardware_concurrency());
    if (count <= 0) count = 1;
    tcp::endpoint endpoint(prepared.listen_address, cfg.listen_port);

    // Signals are handled from before the first connection is accepted: a
    // SIGTERM right after the "listening" line must drain, not kill.
    asio::io_context control;
    asio::signal_set signals(control, SIGTERM, SIGINT, SIGHUP);

    shared.registry.set_workers(static_cast<std::size_t>(count));
    std::vector<std::unique_ptr<Worker>> workers;
    try {
        for (int i = 0; i < count; ++i) {
            workers.push_back(std::make_unique<Worker>(shared, i));
            workers.back()->listen(endpoint);
            if (i == 0) endpoint = workers.back()->local_endpoint();  // port 0 -> the bound port for all
        }
    } catch (const boost::system::system_error& e) {
        say("cannot listen on " + cfg.listen_host + ":" + std::to_string(cfg.listen_port) + ": " +
            e.code().message());
        return 1;
    }
    for (auto& worker : workers) worker->start();
    {
        std::string host = endpoint.address().to_string();
        if (endpoint.address().is_v6()) host = "[" + host + "]";
        say("listening on " + host + ":" + std::to_string(endpoint.port()) + " (" + std::to_string(count) +
            (count == 1 ? " worker)" : " workers)"));
    }

    // The main thread owns signals and the drain; workers own connections.
    asio::steady_timer poll(control);
    std::optional<std::chrono::steady_clock::time_point> drain_until;

    std::function<void()> wait_signal;
    std::function<void()> poll_drain = [&] {
        poll.expires_after(std::chrono::milliseconds(10));
        poll.async_wait([&](const boost::system::error_code& e) {
            if (e) return;
            if (shared.inflight_turns.load() == 0) {
                control.stop();
                return;
            }
            if (std::chrono::steady_clock::now() >= *drain_until) {
                // docs/behaviour.md section 11: streams still open end with the closing
                // error event; the workers get a moment to write it.
                say("drain limit reached with " + std::to_string(shared.inflight_turns.load()) +
                    " turns in flight; ending them");
                for (auto& worker : workers) worker->end_turns();
                poll.expires_after(std::chrono::milliseconds(500));
                poll.async_wait([&](const boost::system::error_code&) { control.stop(); });
                return;
            }
            poll_drain();
        });
    };
    wait_signal = [&] {
        signals.async_wait([&](const boost::system::error_code& e, int signo) {
            if (e) return;
            if (signo == SIGHUP) {
                // The log first: once the reload line is out, every later
                // record goes to the reopened file (rotation tools wait for it).
                if (auto error = shared.log.reopen()) say(*error);
                const auto current = shared.runtime.load();
                Prepared reloaded = prepare(options, &current->config, getenv);
                report(reloaded);
                if (auto fresh = std::move(reloaded.runtime)) {
                    shared.set_runtime(fresh);
                    Fleet::process().configure(fresh->config.fleet, fresh->fleet_tls);
                    share_candidates(*fresh);
                    for (auto& w : workers) w->keep_pools(fresh->pool_keys);
                    say("config reloaded");
                } else {
                    say("reload refused; the previous config stays in force");
                }
                release_freed_memory();
                wait_signal();
                return;
            }
            if (!drain_until) {
                say(std::string(signo == SIGTERM ? "SIGTERM" : "SIGINT") + ": draining");
                shared.draining.store(true);
                drain_until = std::chrono::steady_clock::now() +
                              std::chrono::milliseconds(shared.runtime.load()->config.limits.drain_ms);
                for (auto& worker : workers) worker->stop_accepting();
                poll_drain();
            }
            wait_signal();
        });
    };
    wait_signal();
    control.run();

    for (auto& worker : workers) worker->stop();
    for (auto& worker : workers) worker->join();
    Fleet::process().stop();
    say("stopped");
    return 0;
}

}  // namespace modelproxy::proxy
