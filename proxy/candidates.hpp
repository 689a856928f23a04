// The candidates of docs/behaviour.md section 13 as the turn meets them: each
// client model's list (its deployments, then its fallbacks' deployments), per
// config generation, and each candidate's process-wide state (its breaker,
// its cooldown after a 429, its turns in flight), shared by every worker and
// kept across a reload for a candidate whose route name, upstream and
// upstream model are unchanged. The decisions are policy/'s (breaker.hpp,
// candidates.hpp); this file holds their state under locks.
#pragma once

#include "config/config.hpp"
#include "policy/admission.hpp"
#include "policy/breaker.hpp"
#include "policy/candidates.hpp"
#include "transport/executor.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace modelproxy::proxy {

// A turn waiting for an admission slot (docs/behaviour.md section 14), in
// its candidate's queue. Granted under the candidate's mutex by whoever
// frees a slot, on any worker; the wake-up is posted to the waiter's own
// executor, where `timer` lives and `gone` is set, so the timer is only
// touched on its own thread.
struct AdmissionWaiter {
    explicit AdmissionWaiter(transport::Executor e) : executor(std::move(e)) {}
    transport::Executor executor;
    transport::Timer* timer = nullptr;
    bool granted = false;  // a slot is this waiter's (under the candidate's mutex)
    bool gone = false;     // the waiter stopped waiting (its executor's thread only)
};

// One candidate's state in this replica. The breaker, the cooldown and
// section 14's admission under `mutex`; the counters without one.
struct CandidateState {
    using Time = std::chrono::steady_clock::time_point;

    CandidateState(const policy::BreakerConfig& config, std::string route_name, std::string model_name)
        : breaker(config), shared_part(config), route(std::move(route_name)), model(std::move(model_name)) {}

    // The route's admission settings, as of the newest generation: a limit
    // is made when admission is turned on, and dropped when turned off.
    void configure_admission(const policy::AdmissionConfig& config, Time now);
    // Under `mutex`: grants free slots to the queue's head, in arrival order.
    void grant_locked(Time now);
    // Under `mutex`: an admitted attempt ended; its slot goes to the queue.
    void release_locked(Time now);

    std::mutex mutex;
    policy::Breaker breaker;
    Time cooldown_until{};
    std::atomic<int> inflight{0};  // turns sending to or waiting for this candidate
    std::atomic<int> replays{0};   // replays in flight: sent, or waiting to be (the retry budget)
    // Admission (section 14), under `mutex`.
    std::optional<policy::AdmissionLimit> limit;  // while the route's admission is enabled
    int admitted = 0;                             // attempts holding a slot
    std::deque<std::shared_ptr<AdmissionWaiter>> queue;  // in arrival order
    Time hold_until{};                            // the provider's rate-limit headers hold new attempts
    std::atomic<int> queued{0};                   // queue.size(), for /metrics
    std::atomic<std::uint64_t> budget_refusals{0};
    std::atomic<std::uint64_t> admission_rejections{0};
    std::atomic<std::uint64_t> ratelimit_holds{0};
    // The fleet's part of the breaker (section 15), under `mutex`. This
    // replica counts the provider-declared failures in `shared_part` and
    // writes its opens to Redis; the fleet's state comes back from Redis
    // (Fleet's refresh) as `fleet_open` / `fleet_until`. Half-open, a turn
    // may probe only with a lease the refresh took (`fleet_ticket`).
    policy::Breaker shared_part;
    bool fleet_open = false;    // Redis holds an open (or, past fleet_until, half-open) breaker
    Time fleet_until{};         // when its open time ends, on this replica's clock
    std::int64_t fleet_open_ms = 0;  // the open time in force there
    enum class Ticket { none, ready, probing };
    Ticket fleet_ticket = Ticket::none;  // a probe lease this replica holds, and whether a turn uses it
    Time fleet_ticket_at{};              // when the lease was taken
    std::string fleet_lease;             // the lease's key while this replica holds one
    bool fleet_wanted = false;           // a turn found the fleet's breaker half-open without a ticket
    // Whether the fleet's part lets a first attempt through at `now`: no
    // fleet breaker, or half-open with a ticket ready. Under `mutex`.
    bool fleet_usable(Time now, bool fleet_up) {
        if (!fleet_up || !fleet_open) return true;
        if (now < fleet_until) return false;
        if (fleet_ticket == Ticket::ready) return true;
        fleet_wanted = true;
        return false;
    }
    // modelproxy_breaker_transitions_total by `to` (closed, open, half-open),
    // and modelproxy_cooldowns_total.
    std::array<std::atomic<std::uint64_t>, 3> transitions{};
    std::atomic<std::uint64_t> cooldowns{0};
    const std::string route;        // for the breaker's records and metrics
    const std::string model;        // the upstream model (on the "*" route: the served name)
};

// A candidate of a model's list: routes[route], serving `client_model`
// through `model` (nullptr on the "*" route).
struct CandidateRef {
    std::size_t route = 0;
    const config::Model* model = nullptr;
    std::string_view client_model;  // the name this candidate serves (the config's, or the request's on "*")
    CandidateState* state = nullptr;
};

// One client model's candidates in one config generation.
struct ModelCandidates {
    const config::ModelPolicy* policy = nullptr;
    std::vector<CandidateRef> list;  // its deployments in config order, then each fallback's
    std::size_t deployments = 0;     // how many of `list` are the model's own
    // weighted balance: smooth weighted round-robin's current weights, one
    // per deployment, under `mutex` (shared by the workers).
    struct Balance {
        std::mutex mutex;
        std::vector<std::int64_t> current;
    };
    std::unique_ptr<Balance> balance;
};

// Every candidate state of the process, by (route name, upstream, upstream
// model). A config generation takes its states here
// (Runtime::build), so a reload finds the unchanged ones as they were; the
// "*" route's states are made per served name as turns meet them, at most
// 256 per route, the least recently used dropped.
class CandidateStates {
public:
    static CandidateStates& process();

    // The state of (route, upstream model): every client name served
    // through it shares one breaker.
    std::shared_ptr<CandidateState> get(const config::Route& route, std::string_view upstream_model);
    // The "*" route's state for `name` (kept with a recency order).
    std::shared_ptr<CandidateState> wildcard(const config::Route& route, std::string_view name);
    // After a reload: states no generation holds any more are dropped.
    void prune();
    // modelproxy_fallbacks_total{model,to}: a turn for `model` fell over to
    // a candidate serving `to` (both configured names).
    void count_fallback(std::string_view model, std::string_view to);
    std::vector<std::pair<std::pair<std::string, std::string>, std::uint64_t>> fallbacks() const;
    // The "*" routes' per-name states now held.
    std::vector<std::shared_ptr<CandidateState>> wildcard_states() const;

private:
    static std::string key(const config::Route& route, std::string_view upstream_model, std::string_view served);

    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<CandidateState>, std::less<>> states_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> fallbacks_;
    std::list<std::string> wildcard_order_;  // most recently used first
    std::unordered_map<std::string, std::list<std::string>::iterator> wildcard_at_;
    static constexpr std::size_t max_wildcard_names = 256;
};

// The candidate lists of one config generation, by client model name.
class CandidateTable {
public:
    void build(const config::Config& config, CandidateStates& states);
    // The model's candidates; nullptr for a name no route lists by name.
    const ModelCandidates* find(std::string_view client_model) const;
    // The states this generation holds (kept alive while it runs).
    const std::vector<std::shared_ptr<CandidateState>>& states() const { return held_; }
    // The /metrics families of docs/behaviour.md section 13 (breaker state
    // and transitions, fallbacks, cooldowns), as this replica sees them at `now`.
    std::string render_metrics(const config::Config& config, std::chrono::steady_clock::time_point now) const;

private:
    std::unordered_map<std::string_view, ModelCandidates> models_;
    std::vector<std::shared_ptr<CandidateState>> held_;
};

}  // namespace modelproxy::proxy
