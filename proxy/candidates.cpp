#include "proxy/candidates.hpp"

#include "proxy/metrics.hpp"

#include <boost/asio/post.hpp>

#include <set>

namespace modelproxy::proxy {

void CandidateState::configure_admission(const policy::AdmissionConfig& config, Time now) {
    std::lock_guard lock(mutex);
    if (!config.enabled) {
        limit.reset();
        // Nothing limits any more: every waiter goes.
        grant_locked(now);
        return;
    }
    if (limit) {
        limit->reconfigure(config);
    } else {
        limit.emplace(config, now);
    }
    grant_locked(now);
}

void CandidateState::grant_locked(Time now) {
    while (!queue.empty() && (!limit || admitted < limit->limit(now))) {
        std::shared_ptr<AdmissionWaiter> w = std::move(queue.front());
        queue.pop_front();
        w->granted = true;
        ++admitted;
        // The waiter's timer is touched on its own thread only.
        boost::asio::post(w->executor, [w] {
            if (!w->gone && w->timer) w->timer->cancel();
        });
    }
    queued.store(static_cast<int>(queue.size()), std::memory_order_relaxed);
}

void CandidateState::release_locked(Time now) {
    if (admitted > 0) --admitted;
    grant_locked(now);
}

CandidateStates& CandidateStates::process() {
    static CandidateStates states;
    return states;
}

std::string CandidateStates::key(const config::Route& route, std::string_view upstream_model,
                                 std::string_view served) {
    // NUL cannot occur in a route name, a URL or a model name from YAML or JSON text.
    std::string k;
    k.reserve(route.name.size() + route.upstream_url.size() + upstream_model.size() + served.size() + 3);
    k.append(route.name).push_back('\0');
    k.append(route.upstream_url).push_back('\0');
    k.append(upstream_model).push_back('\0');
    k.append(served);
    return k;
}

std::shared_ptr<CandidateState> CandidateStates::get(const config::Route& route, std::string_view upstream_model) {
    std::string k = key(route, upstream_model, "");
    std::lock_guard lock(mutex_);
    auto it = states_.find(k);
    if (it != states_.end()) {
        // A reload that changed only the breaker's settings keeps its state
        // under the new settings.
        {
            std::lock_guard state_lock(it->second->mutex);
            it->second->breaker.reconfigure(route.breaker);
        }
        it->second->configure_admission(route.admission, std::chrono::steady_clock::now());
        return it->second;
    }
    auto state = std::make_shared<CandidateState>(route.breaker, route.name, std::string(upstream_model));
    state->configure_admission(route.admission, std::chrono::steady_clock::now());
    states_.emplace(std::move(k), state);
    return state;
}

std::shared_ptr<CandidateState> CandidateStates::wildcard(const config::Route& route, std::string_view name) {
    std::string k = key(route, name, "*");
    std::lock_guard lock(mutex_);
    if (auto at = wildcard_at_.find(k); at != wildcard_at_.end()) {
        wildcard_order_.splice(wildcard_order_.begin(), wildcard_order_, at->second);
        return states_.find(k)->second;
    }
    auto state = std::make_shared<CandidateState>(route.breaker, route.name, std::string(name));
    state->configure_admission(route.admission, std::chrono::steady_clock::now());
    states_.emplace(k, state);
    wildcard_order_.push_front(k);
    wildcard_at_.emplace(std::move(k), wildcard_order_.begin());
    // The least recently used name goes: a turn still holding its state
    // keeps it alive until it ends.
    while (wildcard_order_.size() > max_wildcard_names) {
        const std::string& oldest = wildcard_order_.back();
        states_.erase(oldest);
        wildcard_at_.erase(oldest);
        wildcard_order_.pop_back();
    }
    return state;
}

void CandidateStates::prune() {
    std::lock_guard lock(mutex_);
    for (auto it = states_.begin(); it != states_.end();) {
        // Held by this registry only, and not a catch-all name (those go by recency).
        if (it->second.use_count() == 1 && !wildcard_at_.contains(it->first)) {
            it = states_.erase(it);
        } else {
            ++it;
        }
    }
}

void CandidateStates::count_fallback(std::string_view model, std::string_view to) {
    std::lock_guard lock(mutex_);
    ++fallbacks_[{std::string(model), std::string(to)}];
}

std::vector<std::pair<std::pair<std::string, std::string>, std::uint64_t>> CandidateStates::fallbacks() const {
    std::lock_guard lock(mutex_);
    return {fallbacks_.begin(), fallbacks_.end()};
}

std::vector<std::shared_ptr<CandidateState>> CandidateStates::wildcard_states() const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<CandidateState>> out;
    for (const auto& [k, state] : states_)
        if (wildcard_at_.contains(k)) out.push_back(state);
    return out;
}

std::string CandidateTable::render_metrics(const config::Config& config,
                                           std::chrono::steady_clock::time_point now) const {
    std::string out;
    auto sample = [&out](std::string_view name, std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
                         std::uint64_t value) {
        out.append(name).push_back('{');
        bool first = true;
        for (const auto& [label, text] : labels) {
            if (!first) out.push_back(',');
            first = false;
            out.append(label).append("=\"").append(metrics::escape_label(text)).push_back('"');
        }
        out.append("} ").append(std::to_string(value)).push_back('\n');
    };
    // Each configured name's deployments, in config order: a breaker shared
    // by several names shows under each.
    struct Row {
        std::string_view route, model;
        CandidateState* state;
    };
    std::vector<Row> rows;
    for (const config::Route& route : config.routes)
        for (const config::Model& model : route.models)
            for (const CandidateRef& c : models_.at(model.name).list)
                if (&config.routes[c.route] == &route && c.model == &model) rows.push_back({route.name, model.name, c.state});
    out += "# HELP modelproxy_breaker_state The circuit breaker of each deployment as this replica sees it: "
           "0 closed, 1 open, 2 half-open.\n# TYPE modelproxy_breaker_state gauge\n";
    for (const Row& r : rows) {
        std::lock_guard lock(r.state->mutex);
        const auto st = r.state->breaker.state(now);
        std::uint64_t value = st == policy::BreakerState::closed ? 0 : st == policy::BreakerState::open ? 1 : 2;
        // Open when its own or the fleet's part is open (section 15).
        if (r.state->fleet_open && value != 1) value = now < r.state->fleet_until ? 1 : 2;
        sample("modelproxy_breaker_state", {{"route", r.route}, {"model", r.model}}, value);
    }
    // The catch-all's breakers, one per served name, under model "*" (the
    // names are the clients'): open when any is open, else half-open when
    // any is, else closed; their transitions summed.
    struct Wildcard {
        std::string_view route;
        int state = 0;
        std::array<std::uint64_t, 3> to{};
    };
    std::vector<Wildcard> wildcards;
    for (const config::Route& route : config.routes)
        if (route.wildcard) wildcards.push_back({route.name});
    if (!wildcards.empty()) {
        for (const auto& state : CandidateStates::process().wildcard_states()) {
            for (Wildcard& w : wildcards) {
                if (w.route != state->route) continue;
                std::lock_guard lock(state->mutex);
                const auto st = state->breaker.state(now);
                if (st == policy::BreakerState::open) w.state = 1;
                if (st == policy::BreakerState::half_open && w.state == 0) w.state = 2;
                for (std::size_t i = 0; i < w.to.size(); ++i)
                    w.to[i] += state->transitions[i].load(std::memory_order_relaxed);
            }
        }
        for (const Wildcard& w : wildcards)
            sample("modelproxy_breaker_state", {{"route", w.route}, {"model", "*"}}, static_cast<std::uint64_t>(w.state));
    }
    out += "# HELP modelproxy_breaker_transitions_total Circuit breaker transitions, by the state entered.\n"
           "# TYPE modelproxy_breaker_transitions_total counter\n";
    static constexpr std::array<std::string_view, 3> to_names = {"closed", "open", "half-open"};
    for (const Row& r : rows)
        for (std::size_t i = 0; i < to_names.size(); ++i)
            sample("modelproxy_breaker_transitions_total", {{"route", r.route}, {"model", r.model}, {"to", to_names[i]}},
                   r.state->transitions[i].load(std::memory_order_relaxed));
    for (const Wildcard& w : wildcards)
        for (std::size_t i = 0; i < to_names.size(); ++i)
            sample("modelproxy_breaker_transitions_total", {{"route", w.route}, {"model", "*"}, {"to", to_names[i]}},
                   w.to[i]);
    out += "# HELP modelproxy_cooldowns_total Candidates put in cooldown by a 429, by route.\n"
           "# TYPE modelproxy_cooldowns_total counter\n";
    for (const config::Route& route : config.routes) {
        std::uint64_t total = 0;
        std::set<const CandidateState*> seen;
        for (const Row& r : rows)
            if (r.route == route.name && seen.insert(r.state).second) total += r.state->cooldowns.load(std::memory_order_relaxed);
        sample("modelproxy_cooldowns_total", {{"route", route.name}}, total);
    }
    // Section 14, summed over each route's candidates (its catch-all names included).
    std::vector<std::shared_ptr<CandidateState>> wildcard_held;
    if (!wildcards.empty()) wildcard_held = CandidateStates::process().wildcard_states();
    struct Load {
        std::uint64_t refusals = 0, rejections = 0, holds = 0;
        std::int64_t limit = 0, queued = 0;
    };
    std::vector<Load> loads(config.routes.size());
    for (std::size_t i = 0; i < config.routes.size(); ++i) {
        const config::Route& route = config.routes[i];
        std::set<CandidateState*> states;
        for (const Row& r : rows)
            if (r.route == route.name) states.insert(r.state);
        if (route.wildcard)
            for (const auto& state : wildcard_held)
                if (state->route == route.name) states.insert(state.get());
        Load& l = loads[i];
        for (CandidateState* s : states) {
            l.refusals += s->budget_refusals.load(std::memory_order_relaxed);
            l.rejections += s->admission_rejections.load(std::memory_order_relaxed);
            l.holds += s->ratelimit_holds.load(std::memory_order_relaxed);
            l.queued += s->queued.load(std::memory_order_relaxed);
            std::lock_guard lock(s->mutex);
            if (s->limit) l.limit += s->limit->limit(now);
        }
    }
    out += "# HELP modelproxy_retry_budget_refusals_total Replays the retry budget refused, by route.\n"
           "# TYPE modelproxy_retry_budget_refusals_total counter\n";
    for (std::size_t i = 0; i < config.routes.size(); ++i)
        sample("modelproxy_retry_budget_refusals_total", {{"route", config.routes[i].name}}, loads[i].refusals);
    out += "# HELP modelproxy_admission_limit Attempts in flight admission allows, summed over the route's "
           "candidates (routes with admission enabled).\n# TYPE modelproxy_admission_limit gauge\n";
    for (std::size_t i = 0; i < config.routes.size(); ++i)
        if (config.routes[i].admission.enabled)
            sample("modelproxy_admission_limit", {{"route", config.routes[i].name}},
                   static_cast<std::uint64_t>(loads[i].limit));
    out += "# HELP modelproxy_admission_queued Attempts waiting for an admission slot, by route.\n"
           "# TYPE modelproxy_admission_queued gauge\n";
    for (std::size_t i = 0; i < config.routes.size(); ++i)
        sample("modelproxy_admission_queued", {{"route", config.routes[i].name}},
               static_cast<std::uint64_t>(loads[i].queued));
    out += "# HELP modelproxy_admission_rejections_total Turns that got no admission slot in time, by route.\n"
           "# TYPE modelproxy_admission_rejections_total counter\n";
    for (std::size_t i = 0; i < config.routes.size(); ++i)
        sample("modelproxy_admission_rejections_total", {{"route", config.routes[i].name}}, loads[i].rejections);
    out += "# HELP modelproxy_ratelimit_holds_total Attempts held by the provider's rate-limit headers, by "
           "route.\n# TYPE modelproxy_ratelimit_holds_total counter\n";
    for (std::size_t i = 0; i < config.routes.size(); ++i)
        sample("modelproxy_ratelimit_holds_total", {{"route", config.routes[i].name}}, loads[i].holds);
    out += "# HELP modelproxy_fallbacks_total Turns that fell over to another candidate, by requested model and "
           "the model moved to.\n# TYPE modelproxy_fallbacks_total counter\n";
    for (const auto& [key, count] : CandidateStates::process().fallbacks())
        if (models_.contains(key.first) && models_.contains(key.second))
            sample("modelproxy_fallbacks_total", {{"model", key.first}, {"to", key.second}}, count);
    return out;
}

void CandidateTable::build(const config::Config& config, CandidateStates& states) {
    // Each named model's deployments, then its fallbacks' (fallbacks of a
    // fallback are not followed: docs/behaviour.md section 13).
    auto add_deployments = [&](ModelCandidates& into, std::string_view name) {
        for (const config::Deployment& d : config::deployments_of(config, name)) {
            const config::Route& route = config.routes[d.route];
            const config::Model& model = route.models[d.model];
            auto state = states.get(route, model.upstream_model);
            into.list.push_back(CandidateRef{d.route, &model, model.name, state.get()});
            held_.push_back(std::move(state));
        }
    };
    for (const config::Route& route : config.routes) {
        for (const config::Model& model : route.models) {
            if (models_.contains(model.name)) continue;
            ModelCandidates& entry = models_[model.name];
            entry.policy = &config::model_policy(config, model.name);
            add_deployments(entry, model.name);
            entry.deployments = entry.list.size();
            for (const std::string& fallback : entry.policy->fallbacks) add_deployments(entry, fallback);
            if (entry.policy->balance == policy::Balance::weighted) {
                entry.balance = std::make_unique<ModelCandidates::Balance>();
                entry.balance->current.assign(entry.deployments, 0);
            }
        }
    }
}

const ModelCandidates* CandidateTable::find(std::string_view client_model) const {
    auto it = models_.find(client_model);
    return it == models_.end() ? nullptr : &it->second;
}

}  // namespace modelproxy::proxy
