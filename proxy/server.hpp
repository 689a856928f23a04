// The listener: N workers, each one thread with its own io_context and its
// own SO_REUSEPORT acceptor (so no lock is shared on the request path), plus
// the process-wide state they read: the current Runtime (config generation),
// the drain flag and the connection/turn counts.
#pragma once

#include "config/config.hpp"
#include "proxy/candidates.hpp"
#include "proxy/metrics.hpp"
#include "proxy/records.hpp"
#include "proxy/turn_clock.hpp"
#include "proxy/turn_watch.hpp"
#include "sse/credentials.hpp"
#include "sse/inspect.hpp"
#include "sse/resume.hpp"
#include "transport/executor.hpp"
#include "transport/redis.hpp"
#include "transport/upstream.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

namespace modelproxy::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
// A worker's I/O types, bound to its io_context's executor (transport/executor.hpp).
using transport::Acceptor;
using transport::Socket;
using transport::Task;
using transport::Timer;
using transport::use_tuple;

// One loaded config generation. Turns hold a shared_ptr to the Runtime they
// started with, so a reload never changes an in-flight turn (docs/behaviour.md section 11).
struct Runtime {
    config::Config config;
    std::vector<transport::TlsContext> tls;   // per route, index as config.routes (null context for http)
    transport::TlsContext fleet_tls;          // a rediss:// fleet.redis's (section 15); null otherwise
    std::vector<std::string> pool_keys;       // per route: which pool its connections go to
    // Per route: its metrics slot (metrics.hpp), and the slot under which the
    // idle connections of its pool are reported: the first route in config
    // order that shares the pool, so each pool is counted once.
    std::vector<std::uint16_t> metric_slots;
    std::vector<std::uint16_t> idle_slots;
    // docs/behaviour.md section 8's credential scan: every configured upstream key and the
    // secret shapes, compiled once per generation, shared by all workers.
    std::optional<sse::CredentialScanner> secrets;
    // Each client model's candidates (docs/behaviour.md section 13).
    CandidateTable candidates;

    // Builds TLS contexts; returns the problems (one line each) on failure.
    static std::variant<std::shared_ptr<const Runtime>, std::vector<std::string>> build(config::Config config);
};

struct RequestSlot;  // turn.hpp

struct Shared {
    // The config generation in force: stored at start and by each reload
    // (set_runtime). Workers read it through Worker::runtime().
    std::atomic<std::shared_ptr<const Runtime>> runtime;
    // Moves after each store: a worker keeps its own copy of `runtime` and
    // loads it again only when this moved. atomic<shared_ptr>::load takes a
    // lock and a count (three locked instructions, with the release of the
    // copy it replaces a fourth), and a request took two.
    std::atomic<std::uint64_t> runtime_generation{0};
    void set_runtime(std::shared_ptr<const Runtime> fresh) {
        runtime.store(std::move(fresh));
        runtime_generation.fetch_add(1, std::memory_order_release);
    }
    std::atomic<bool> draining{false};
    std::atomic<std::int64_t> connections{0};
    std::atomic<std::int64_t> inflight_turns{0};
    RecordLog log;
    metrics::Registry& registry = metrics::Registry::process();
    // What turns read the time and draw their jitter from (turn_clock.hpp).
    TurnClock turn_clock;
};

class Worker {
public:
    Worker(Shared& shared, int index);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    asio::io_context& io() { return io_; }
    Shared& shared() { return shared_; }
    // The config generation in force, as this worker's copy: the shared one
    // is loaded again only after a reload stored another (Shared). A
    // reference to the copy, valid until the next call on this thread; a
    // coroutine that holds the runtime across a suspension keeps its own.
    const std::shared_ptr<const Runtime>& runtime() {
        const std::uint64_t generation = shared_.runtime_generation.load(std::memory_order_acquire);
        if (generation != runtime_generation_ || !runtime_) {
            runtime_ = shared_.runtime.load();
            runtime_generation_ = generation;
        }
        return runtime_;
    }
    transport::Pool& pool(const std::string& key) { return pools_[key]; }
    // The pool a finished attempt gives its connection back to; null when a
    // reload dropped that pool (the connection is then closed).
    transport::Pool* pool_if_kept(const std::string& key) {
        auto it = pools_.find(key);
        return it == pools_.end() ? nullptr : &it->second;
    }
    // After a reload: closes the pools of older config generations, so their
    // idle connections do not stay open forever. Thread-safe (posts).
    void keep_pools(std::vector<std::string> keys);
    int index() const { return index_; }
    // This worker's connection to the fleet's Redis (docs/behaviour.md
    // section 15), for the quota calls of its turns; made on first use, and
    // again when a reload changed the server. `runtime` must have a fleet.
    transport::RedisClient& redis(const Runtime& runtime);
    // One SSE inspector per worker: it keeps simdjson's buffers warm, and a
    // worker runs one event at a time.
    sse::Inspector& inspector() { return inspector_; }
    // docs/behaviour.md section 16: one reader of a resumable stream's lines
    // per worker, made when a route that resumes first needs it.
    sse::ResumeReader& resume_reader() {
        if (!resume_reader_) resume_reader_ = std::make_unique<sse::ResumeReader>();
        return *resume_reader_;
    }
    // This worker's metric counters for a route slot (Runtime::metric_slots,
    // or Registry::no_route_slot). Only this worker's thread writes them.
    metrics::RouteCounters& counters(std::uint16_t slot) { return shared_.registry.at(index_, slot); }
    // A record written and counted in one place, from the same values, so
    // /metrics always agrees with the records (docs/behaviour.md section 10).
    void write_turn(std::uint16_t slot, const TurnRecord& record);
    void write_attempt(std::uint16_t slot, const AttemptRecord& record, std::int64_t duration_ms);
    // The last attempt and its turn, ending together: one write for both lines.
    void write_attempt_and_turn(std::uint16_t slot, const AttemptRecord& attempt, std::int64_t duration_ms,
                                const TurnRecord& turn);
    // Its two halves, for a turn that counts before its answer goes out and
    // writes the lines after (TurnRun::answer_success).
    void count_attempt_and_turn(std::uint16_t slot, const AttemptRecord& attempt, std::int64_t duration_ms,
                                const TurnRecord& turn);
    void log_attempt_and_turn(const AttemptRecord& attempt, const TurnRecord& turn);

    // The per-request state a connection borrows while it has a request in
    // progress (turn.hpp). Spares are kept, cleared, up to max_spare_slots:
    // enough for the connections that are mid-request at once.
    std::unique_ptr<RequestSlot> take_slot();
    void give_back(std::unique_ptr<RequestSlot> slot);
    static constexpr std::size_t max_spare_slots = 64;

    // Opens this worker's acceptor on `endpoint` with SO_REUSEPORT.
    void listen(const tcp::endpoint& endpoint);
    tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
    void start();          // spawns the accept loop and the thread
    void stop_accepting(); // thread-safe: posts to the worker
    void stop();           // thread-safe
    // The drain limit: every turn still running on this worker is ended
    // (streams with the closing error event). Thread-safe.
    void end_turns();
    // The turns end_turns() cuts: a turn links its watch while it runs.
    TurnWatches& running_turns() { return running_turns_; }
    void join();

private:
    Task<void> accept_loop();

    Shared& shared_;
    int index_;
    std::shared_ptr<const Runtime> runtime_;  // runtime(): this worker's copy
    std::uint64_t runtime_generation_ = 0;
    // Before io_: destroying io_ destroys the sessions it still holds, and
    // they give their slots back here.
    std::vector<std::unique_ptr<RequestSlot>> spare_slots_;
    // Before io_ too: a turn destroyed with io_ unlinks its watch from it.
    TurnWatches running_turns_;
    // One thread runs io_, and after start() no other thread touches its
    // sockets or timers: the thread-safe methods above only post to it, or
    // stop it. So the reactor needs no lock per descriptor (UNSAFE_IO drops
    // those, about 2 % of a request's instructions), while the scheduler
    // keeps its lock for those posts. Not UNSAFE, which would drop that too.
    asio::io_context io_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    Acceptor acceptor_{io_};
    std::unordered_map<std::string, transport::Pool> pools_;
    std::unique_ptr<transport::RedisClient> redis_;
    std::vector<std::unique_ptr<transport::RedisClient>> retired_redis_;
    std::string redis_identity_;
    sse::Inspector inspector_;
    std::unique_ptr<sse::ResumeReader> resume_reader_;
    std::thread thread_;
};

struct ServeOptions {
    std::string config_path;      // "" = embedded default
    std::string listen_override;  // "" = config
    int workers_override = -1;    // -1 = config
    std::string log_path;         // "" = stdout
};

// Runs until SIGTERM/SIGINT and the drain are done. Returns the exit code.
int serve(const ServeOptions& options);

}  // namespace modelproxy::proxy
