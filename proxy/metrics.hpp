// The counters behind GET /metrics (docs/behaviour.md section 10) and their Prometheus
// text rendering.
//
// Cost on the request path: no lock, no allocation, no string key. Each
// worker owns its own counters (relaxed atomics, written only by that
// worker's thread, so the cache lines stay with its core), indexed by a
// route slot and by the position of a value in a closed enumeration. A scrape
// (served by whichever worker gets the request) sums every worker's counters
// with relaxed loads into a plain Snapshot, and render() turns that into text.
//
// Route slots: a process-wide table of route names, each given a slot the
// first time a config generation names it and never freed, so a route's
// counters survive reloads (Prometheus counters must not go back) and a
// removed route keeps its last values. Slots are assigned only by the thread
// that builds config generations (startup and SIGHUP); the per-worker counter
// blocks of a slot are allocated there too, before any turn can use it.
// Label values are therefore only route names from the config and the fixed
// spellings below: never a request id or a model name a client sent.
#pragma once

#include "policy/error_class.hpp"
#include "proxy/records.hpp"
#include "sse/inspect.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace modelproxy::proxy::metrics {

// ---- the closed label sets -------------------------------------------------

// Turn outcomes, in the records' spelling (section 10).
inline constexpr std::array<std::string_view, 8> outcomes = {"ok",        "terminal", "exhausted", "deadline",
                                                             "cancelled", "refused",  "rejected",  "unavailable"};
// Attempt classes: "ok" for an attempt that succeeded, then every error class
// of section 1 in policy::ErrorClass order.
inline constexpr std::size_t attempt_classes = static_cast<std::size_t>(policy::ErrorClass::cancelled) + 2;
std::string_view attempt_class_name(std::size_t index);
// Section 8's refusal codes.
inline constexpr std::array<std::string_view, 6> refusal_codes = {
    "model_identity_mismatch", "unparseable_event", "empty_stream",
    "not_a_stream",            "credential_in_response", "response_too_large"};
// Token kinds of modelproxy_usage_tokens_total: input = prompt_tokens /
// input_tokens, output = completion_tokens / output_tokens.
inline constexpr std::array<std::string_view, 2> token_kinds = {"input", "output"};
// modelproxy_resumes_total's results (docs/behaviour.md section 16).
enum class ResumeResult : std::uint8_t { continued, diverged, broken, skipped };
inline constexpr std::array<std::string_view, 4> resume_results = {"continued", "diverged", "broken", "skipped"};

// modelproxy_upstream_connects_total's `tls`: a new upstream connection over
// plain HTTP, or its TLS handshake full or resuming an earlier session.
inline constexpr std::array<std::string_view, 3> connect_kinds = {"none", "full", "resumed"};
inline constexpr std::size_t connect_kind(bool plain, bool resumed) { return plain ? 0 : resumed ? 2 : 1; }

// Histogram upper bounds in milliseconds (the records' unit, so a histogram
// holds exactly the records' values) and as the `le` label in seconds: from
// 5 ms (a local refusal) to 300 s (the default turn deadline), with room for
// the long tail of model turns.
inline constexpr std::size_t bucket_count = 16;
inline constexpr std::array<std::int64_t, bucket_count> bucket_bounds_ms = {
    5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 20000, 30000, 60000, 120000, 300000};
inline constexpr std::array<std::string_view, bucket_count> bucket_labels = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "20", "30", "60", "120", "300"};

// Index of `value` in `names`, or nullopt.
template <std::size_t N>
std::optional<std::size_t> index_of(const std::array<std::string_view, N>& names, std::string_view value) {
    for (std::size_t i = 0; i < N; ++i)
        if (names[i] == value) return i;
    return std::nullopt;
}
// An attempt record's class ("" = ok) as an index below attempt_classes.
std::optional<std::size_t> attempt_class_index(std::string_view error_class);

// ---- one worker's counters for one route -----------------------------------

using Counter = std::atomic<std::uint64_t>;

struct Histogram {
    std::array<Counter, bucket_count + 1> buckets{};  // not cumulative; the last is +Inf
    Counter sum_ms{0};
    void observe(std::int64_t ms);
};

// alignas: two workers' blocks never share a cache line.
struct alignas(64) RouteCounters {
    std::array<Counter, outcomes.size()> turns{};
    std::array<Counter, attempt_classes> attempts{};
    std::array<Counter, refusal_codes.size()> refusals{};
    std::array<Counter, token_kinds.size()> tokens{};
    std::array<Counter, resume_results.size()> resumes{};
    std::array<Counter, connect_kinds.size()> connects{};
    Counter retry_wait_ms{0};
    Histogram turn_duration;
    Histogram attempt_duration;
    Histogram time_to_first_token;
    std::atomic<std::int64_t> busy_connections{0};  // held by this route's attempts
    std::atomic<std::int64_t> idle_connections{0};  // in the pool this slot reports (see Runtime::idle_slots)
};

// The metric side of a record, from the record itself, so that records and
// metrics always agree. A turn: turns_total by outcome; refusals_total by
// code when the outcome is refused; durations and time to first token for
// routed turns (a rejected turn has neither).
void count_turn(RouteCounters& counters, const TurnRecord& record);
// An attempt: attempts_total by class, retry waits from delay_ms, and the
// attempt's duration (not in the record: from its start to its record).
void count_attempt(RouteCounters& counters, const AttemptRecord& record, std::int64_t duration_ms);
void count_usage(RouteCounters& counters, const sse::Usage& usage);

// Holds +1 on a gauge while held (an upstream connection in use); movable,
// released on destruction, so every way an attempt ends gives it back.
class GaugeHold {
public:
    GaugeHold() = default;
    GaugeHold(GaugeHold&& other) noexcept : gauge_(std::exchange(other.gauge_, nullptr)) {}
    GaugeHold& operator=(GaugeHold&& other) noexcept {
        if (this != &other) {
            release();
            gauge_ = std::exchange(other.gauge_, nullptr);
        }
        return *this;
    }
    GaugeHold(const GaugeHold&) = delete;
    GaugeHold& operator=(const GaugeHold&) = delete;
    ~GaugeHold() { release(); }

    void hold(std::atomic<std::int64_t>& gauge) {
        if (gauge_) return;
        gauge_ = &gauge;
        gauge.fetch_add(1, std::memory_order_relaxed);
    }
    void release() {
        if (gauge_) gauge_->fetch_sub(1, std::memory_order_relaxed);
        gauge_ = nullptr;
    }

private:
    std::atomic<std::int64_t>* gauge_ = nullptr;
};

// The usage of one streamed answer, the latest value of each kind winning
// (sse::Usage::update). It is counted once: by count(), before the records
// and the client's last bytes, so a scrape after the stream's end always
// sees it, or else when the tally is destroyed, so every way out of a relay
// counts it.
class UsageTally {
public:
    explicit UsageTally(RouteCounters& counters) : counters_(counters) {}
    UsageTally(const UsageTally&) = delete;
    UsageTally& operator=(const UsageTally&) = delete;
    ~UsageTally() { count(); }

    void count() {
        count_usage(counters_, latest_);
        latest_ = {};
    }

    void see(const sse::Usage& usage) { latest_.update(usage); }
    const sse::Usage& latest() const { return latest_; }

private:
    RouteCounters& counters_;
    sse::Usage latest_;
};

// ---- what a scrape reads ---------------------------------------------------

struct HistogramValues {
    std::array<std::uint64_t, bucket_count + 1> buckets{};  // not cumulative; the last is +Inf
    std::uint64_t sum_ms = 0;
};

struct RouteValues {
    std::string route;  // "" for turns rejected before routing
    std::array<std::uint64_t, outcomes.size()> turns{};
    std::array<std::uint64_t, attempt_classes> attempts{};
    std::array<std::uint64_t, refusal_codes.size()> refusals{};
    std::array<std::uint64_t, token_kinds.size()> tokens{};
    std::array<std::uint64_t, resume_results.size()> resumes{};
    std::array<std::uint64_t, connect_kinds.size()> connects{};
    std::uint64_t retry_wait_ms = 0;
    HistogramValues turn_duration;
    HistogramValues attempt_duration;
    HistogramValues time_to_first_token;
    std::int64_t busy_connections = 0;
    std::int64_t idle_connections = 0;
};

struct Snapshot {
    std::vector<RouteValues> routes;  // slot order; routes[0] is "" (rejected turns)
    std::int64_t inflight_turns = 0;
    std::int64_t client_connections = 0;
    std::optional<std::uint64_t> resident_memory_bytes;
    std::optional<std::uint64_t> open_fds;
    std::string version;
};

// Prometheus text format 0.0.4: HELP and TYPE for every family, every known
// label combination (zeros included, so rate() works from the first scrape),
// histograms with cumulative `_bucket{le}` ending in +Inf, `_sum`, `_count`.
// The "" route appears only in turns_total. Pure.
std::string render(const Snapshot& snapshot);

// `value` escaped for a label value (backslash, double quote, newline).
std::string escape_label(std::string_view value);

// This process's resident memory (/proc/self/statm) and open descriptors
// (/proc/self/fd), read now; nullopt where /proc cannot be read.
void read_process(Snapshot& snapshot);

// ---- the slot table and every worker's counters ----------------------------

class Registry {
public:
    static constexpr std::size_t max_slots = 1024;
    static constexpr std::uint16_t no_route_slot = 0;  // turns rejected before routing
    // When the slots run out (1023 distinct route names since start), further
    // names share the last slot, labelled "(other)": a name no route can have.
    static constexpr std::string_view overflow_name = "(other)";

    Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;
    ~Registry();

    // The one registry of this process (the server's).
    static Registry& process();

    // The slot of `route_name`, assigning one the first time. Only from the
    // thread that builds config generations.
    std::uint16_t slot_for(std::string_view route_name);
    // Allocates one counter block per worker for every slot, now and for
    // slots assigned later. Once, before the workers start.
    void set_workers(std::size_t workers);
    std::size_t workers() const { return workers_; }

    // Worker `worker`'s counters for `slot`: written only by that worker.
    RouteCounters& at(std::size_t worker, std::uint16_t slot) {
        return blocks_[slot].load(std::memory_order_acquire)[worker];
    }

    // Every slot summed over the workers (relaxed loads). Any thread.
    Snapshot snapshot() const;

private:
    void allocate(std::size_t slot);

    std::unique_ptr<std::string[]> names_;
    std::atomic<std::size_t> named_{0};  // slots [0, named_) have names (and blocks once workers are set)
    std::unique_ptr<std::atomic<RouteCounters*>[]> blocks_;
    std::size_t workers_ = 0;
};

}  // namespace modelproxy::proxy::metrics
