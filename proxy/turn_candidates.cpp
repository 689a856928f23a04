// The turn's candidates (docs/behaviour.md section 13): the list it tries,
// where it starts, when it moves on, and what each candidate's breaker is
// told. The choices are policy/'s (pick_start, fall_over, Breaker); this file
// holds the per-candidate state's locks and writes the breaker's records.
#include "policy/fleet.hpp"
#include "proxy/fleet.hpp"
#include "proxy/prepare.hpp"
#include "proxy/turn_run.hpp"

namespace modelproxy::proxy {

namespace {

using policy::Admit;

// Whether `c` lets a turn's first attempt through at `now`: its breaker,
// and unless `breaker_only`, no cooldown, no rate-limit hold and a free
// admission slot with nobody queued for one (section 14).
bool usable_ref(const CandidateRef& c, Clock::time_point now, bool breaker_only) {
    CandidateState& s = *c.state;
    const Fleet& fleet = Fleet::process();
    const bool fleet_up = fleet.enabled() && fleet.up();
    std::lock_guard lock(s.mutex);
    if (!s.breaker.usable(now) || !s.fleet_usable(now, fleet_up)) return false;
    if (breaker_only) return true;
    if (now < s.cooldown_until) return false;
    if (!s.limit) return true;
    return now >= s.hold_until && s.queue.empty() && s.admitted < s.limit->limit(now);
}

}  // namespace

bool TurnRun::usable(std::size_t index, Clock::time_point now, bool breaker_only) const {
    return usable_ref(*order_[index].ref, now, breaker_only);
}

std::optional<std::size_t> TurnRun::next_usable(Clock::time_point now) const {
    for (std::size_t i = cur_ + 1; i < order_.size(); ++i)
        if (usable(i, now, false)) return i;
    return std::nullopt;
}

void TurnRun::start_candidates() {
    const auto now = clock_.now();
    const ModelCandidates* mc = plan_.candidates;
    if (!mc) {
        // The "*" route: one candidate, with a state per served name.
        wildcard_state_ = CandidateStates::process().wildcard(*route_, plan_.client_model);
        wildcard_ = CandidateRef{plan_.route_index, nullptr, plan_.client_model, wildcard_state_.get()};
        order_.push_back({&wildcard_});
    } else {
        std::size_t start = 0;
        if (mc->deployments > 1) {
            boost::container::small_vector<policy::DeploymentView, 4> views;
            const auto& routes = plan_.runtime->config.routes;
            for (std::size_t i = 0; i < mc->deployments; ++i) {
                const CandidateRef& c = mc->list[i];
                views.push_back({usable_ref(c, now, false), c.state->inflight.load(std::memory_order_relaxed),
                                 routes[c.route].weight});
            }
            std::optional<std::size_t> chosen;
            if (mc->balance) {
                std::lock_guard lock(mc->balance->mutex);
                chosen = policy::pick_start(views, policy::Balance::weighted, mc->balance->current);
            } else {
                chosen = policy::pick_start(views, policy::Balance::ordered, {});
            }
            start = chosen.value_or(0);
        }
        order_.push_back({&mc->list[start]});
        for (std::size_t i = 0; i < mc->deployments; ++i)
            if (i != start) order_.push_back({&mc->list[i]});
        if (!plan_.fallback_off)
            for (std::size_t i = mc->deployments; i < mc->list.size(); ++i) order_.push_back({&mc->list[i]});
    }
    head_named_ = mc ? &mc->list[0] : order_[0].ref;
    // The first usable candidate; else the first its breaker lets through
    // (a cooldown skips a candidate only while a later usable one exists);
    // else the one whose breaker half-opens first, sent all the same: a
    // breaker never fails a turn by itself.
    std::optional<std::size_t> first;
    for (std::size_t i = 0; i < order_.size() && !first; ++i)
        if (usable(i, now, false)) first = i;
    for (std::size_t i = 0; i < order_.size() && !first; ++i)
        if (usable(i, now, true)) first = i;
    bool forced = false;
    if (!first) {
        forced = true;
        first = 0;
        auto soonest = Clock::time_point::max();
        for (std::size_t i = 0; i < order_.size(); ++i) {
            CandidateState& s = *order_[i].ref->state;
            std::lock_guard lock(s.mutex);
            const auto at = s.breaker.half_open_at(now);
            if (at < soonest) {
                soonest = at;
                first = i;
            }
        }
        // fail_fast: the turn waits for that half-open (run()), or is refused.
        if (plan_.runtime->config.routes[order_[*first].ref->route].breaker.fail_fast) {
            cur_ = *first;
            fail_fast_at_ = soonest;
            return;
        }
    }
    move_to(*first, now, forced);
}

void TurnRun::move_to(std::size_t index, Clock::time_point now, bool forced) {
    leave_candidate();
    cur_ = index;
    const CandidateRef& c = *order_[index].ref;
    c.state->inflight.fetch_add(1, std::memory_order_relaxed);
    on_candidate_ = true;
    route_ = &plan_.runtime->config.routes[c.route];
    slot_ = plan_.runtime->metric_slots[c.route];
    // The payload is built for each candidate once, when the turn reaches it.
    if (c.route != plan_.route_index || c.model != plan_.model) build_payload(plan_, c);
    digest_fresh_ = true;
    std::optional<policy::BreakerTransition> moved;
    {
        std::lock_guard lock(c.state->mutex);
        admitted_ = c.state->breaker.admit(now, forced, moved);
        // Usable a moment ago, held now (another turn took the last probe):
        // it goes all the same, as an ordinary attempt.
        if (admitted_ == Admit::held) admitted_ = c.state->breaker.admit(now, true, moved);
        // The fleet's breaker half-open, with a lease ready: this attempt is
        // the fleet's probe (section 15).
        fleet_probe_ = c.state->fleet_open && now >= c.state->fleet_until &&
                       c.state->fleet_ticket == CandidateState::Ticket::ready;
        if (fleet_probe_) c.state->fleet_ticket = CandidateState::Ticket::probing;
    }
    settled_ = false;
    if (moved) record_breaker(*c.state, *moved);
}

std::optional<std::size_t> TurnRun::admit_replay(Clock::time_point now) {
    CandidateState& s = *current().ref->state;
    std::optional<policy::BreakerTransition> moved;
    Admit how;
    {
        std::lock_guard lock(s.mutex);
        how = s.breaker.admit(now, false, moved);
    }
    if (moved) record_breaker(s, *moved);
    if (how == Admit::held) {
        if (auto later = next_usable(now)) return later;
        std::lock_guard lock(s.mutex);
        how = s.breaker.admit(now, true, moved);
    }
    admitted_ = how;
    settled_ = false;
    return std::nullopt;
}

void TurnRun::leave_candidate() {
    settle_quota(true);
    release_replay();
    release_slot();
    if (!on_candidate_) return;
    on_candidate_ = false;
    order_[cur_].ref->state->inflight.fetch_sub(1, std::memory_order_relaxed);
}

void TurnRun::settle(const policy::BreakerFacts& facts, std::optional<std::int64_t> retry_after_ms) {
    if (settled_ || order_.empty()) return;
    settled_ = true;
    CandidateState& s = *current().ref->state;
    const policy::BreakerCount count = policy::breaker_count(facts);
    std::optional<policy::BreakerTransition> moved;
    // The fleet's part (section 15) counts only what the provider declared.
    const bool declared = facts.failed && policy::shared_breaker_counts(*facts.failed, settle_status_,
                                                                        settle_status_ < 300);
    const policy::BreakerCount shared = count == policy::BreakerCount::success ? count
                                         : declared                            ? policy::BreakerCount::failure
                                                                               : policy::BreakerCount::none;
    std::optional<Fleet::Write> write;
    {
        const auto now = clock_.now();
        std::lock_guard lock(s.mutex);
        moved = s.breaker.settle(admitted_, count, now, retry_after_ms);
        // A success grows the admission limit (section 14).
        if (count == policy::BreakerCount::success && s.limit) s.limit->on_success(now);
        const policy::BreakerConfig& config = route_->breaker;
        if (fleet_probe_) {
            // The fleet's probe: its result closes or re-opens the fleet's
            // breaker; any other end frees its lease.
            fleet_probe_ = false;
            s.fleet_ticket = CandidateState::Ticket::none;
            if (shared == policy::BreakerCount::success) {
                s.fleet_open = false;
                s.shared_part = policy::Breaker(config);
                write = Fleet::Write{Fleet::Write::Kind::close, nullptr, config, 0, true};
            } else if (shared == policy::BreakerCount::failure) {
                s.fleet_until = now + std::chrono::milliseconds(std::min(s.fleet_open_ms * 2, config.max_open_ms));
                write = Fleet::Write{Fleet::Write::Kind::open, nullptr, config, retry_after_ms.value_or(0), true};
            } else {
                write = Fleet::Write{Fleet::Write::Kind::release, nullptr, config, 0, true};
            }
        } else if (config.enabled && Fleet::process().enabled()) {
            const auto opened = s.shared_part.settle(Admit::pass, shared, now, retry_after_ms);
            if (opened && opened->to == policy::BreakerState::open && opened->from == policy::BreakerState::closed)
                write = Fleet::Write{Fleet::Write::Kind::open, nullptr, config, retry_after_ms.value_or(0), false};
        }
    }
    if (write) {
        for (const auto& held : plan_.runtime->candidates.states())
            if (held.get() == &s) write->state = held;
        if (!write->state && wildcard_state_.get() == &s) write->state = wildcard_state_;
        if (write->state) Fleet::process().write(std::move(*write));
    }
    if (moved) record_breaker(s, *moved);
}

void TurnRun::settle_recorded(std::optional<int> status, const policy::Classification* c, std::string_view decision) {
    policy::BreakerFacts facts;
    facts.ok_2xx = !c && status && *status >= 200 && *status < 300;
    if (c) {
        facts.failed = c->cls;
        facts.timeout_source = c->timeout_source;
    }
    facts.deadline_cut = decision == "deadline" && c && c->timeout_source == policy::TimeoutSource::attempt_deadline;
    facts.client_left = decision == "cancelled";
    settle_status_ = status.value_or(0);
    settle(facts, breaker_retry_after_);
}

void TurnRun::record_breaker(CandidateState& s, const policy::BreakerTransition& t) {
    BreakerRecord r;
    r.route = s.route;
    r.model = s.model;
    r.from = policy::to_string(t.from);
    r.to = policy::to_string(t.to);
    r.reason = policy::to_string(t.reason);
    r.open_ms = t.open_ms;
    s.transitions[static_cast<std::size_t>(t.to)].fetch_add(1, std::memory_order_relaxed);
    worker_.shared().log.write(r);
}

std::string_view TurnRun::answering_model() const {
    // Nothing sent yet: the requested model.
    if (order_.empty() || replays_.attempts() == 0) return plan_.client_model;
    return current().ref->client_model;
}

std::string_view TurnRun::fallback_from() const {
    const std::string_view answering = answering_model();
    return answering == plan_.client_model ? std::string_view() : std::string_view(plan_.client_model);
}

const policy::FallbackOn& TurnRun::fallback_on() const {
    static const policy::FallbackOn defaults;
    return plan_.candidates && plan_.candidates->policy ? plan_.candidates->policy->fallback_on : defaults;
}

int TurnRun::attempts_per_candidate() const {
    return plan_.candidates && plan_.candidates->policy ? plan_.candidates->policy->attempts_per_candidate : 2;
}

policy::Decision TurnRun::decide(const Failed& failed, std::optional<std::size_t>& fall_to) {
    breaker_retry_after_ = failed.retry_after_ms;
    // The replay that failed (if it was one) leaves the budget.
    release_replay();
    settle_quota(false);
    if (admission_on()) note_backpressure(failed);
    const auto now = clock_.now();
    if (failed.status == 429 && !order_.empty()) {
        // New turns skip a throttled candidate until its Retry-After, while
        // a later usable one exists.
        CandidateState& s = *current().ref->state;
        const auto until = now + std::chrono::milliseconds(policy::cooldown_ms(failed.retry_after_ms));
        std::lock_guard lock(s.mutex);
        if (until > s.cooldown_until) s.cooldown_until = until;
        s.cooldowns.fetch_add(1, std::memory_order_relaxed);
    }
    // A section 8 refusal is never replayed, nor taken elsewhere.
    if (failed.refusal()) return policy::refusal_decision;
    const auto failure = policy::failure_of(failed.classification, failed.status, failed.retry_after_ms);
    if (order_.size() > 1 && cur_ + 1 < order_.size() && phase_ != Phase::answering &&
        policy::replays_every_class(plan_.endpoint)) {
        const auto later = next_usable(now);
        policy::FallOverFacts facts;
        facts.cls = failed.classification.cls;
        facts.retryable = failed.classification.retryable;
        facts.http_429 = failed.status == 429;
        facts.timeout_source = failed.classification.timeout_source;
        facts.code = failed.error.code;
        facts.type = failed.error.type;
        facts.later_usable = later.has_value();
        facts.attempts_on_candidate = current().attempts;
        facts.attempts_per_candidate = attempts_per_candidate();
        if (later && policy::fall_over(facts, fallback_on()) == policy::Move::fall_over) {
            fall_to = later;
            return replays_.fall_over(failure, now);
        }
    }
    const policy::Decision d = replays_.after_failure(failure, now, clock_.draw());
    if (d.verdict != policy::Verdict::retry || order_.empty() || reserve_replay()) return d;
    // The retry budget refuses the replay (section 14): not waited for; the
    // turn falls over to a later usable candidate, else ends on this answer.
    replays_.cancel_wait(d.wait_ms);
    if (phase_ != Phase::answering && policy::replays_every_class(plan_.endpoint)) {
        if (auto later = next_usable(now)) {
            fall_to = later;
            return replays_.fall_over(failure, now);
        }
    }
    return policy::Decision{policy::Verdict::exhausted, policy::Bound::retry_budget, 0, "retry-budget"};
}

}  // namespace modelproxy::proxy
