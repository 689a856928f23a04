// The turn under load (docs/behaviour.md section 14): the retry budget a
// replay must fit in, the provider's rate-limit hold, and the admission slot
// an attempt waits for in arrival order. The decisions are policy/'s
// (admission.hpp); this file keeps the candidate's counts under its lock and
// does the one wait.
#include "policy/ascii.hpp"
#include "policy/ratelimit_headers.hpp"
#include "proxy/turn_run.hpp"

#include <algorithm>

namespace modelproxy::proxy {

namespace {

std::int64_t ceil_ms(Clock::duration d) {
    return (std::chrono::duration_cast<std::chrono::microseconds>(d).count() + 999) / 1000;
}

}  // namespace

bool TurnRun::reserve_replay() {
    CandidateState& s = *current().ref->state;
    const int turns = s.inflight.load(std::memory_order_relaxed);
    // Counting this one: taken first, given back when the budget refuses.
    const int replays = s.replays.fetch_add(1, std::memory_order_relaxed) + 1;
    if (policy::replay_within_budget(replays, turns, route_->retry)) {
        replay_held_ = true;
        return true;
    }
    s.replays.fetch_sub(1, std::memory_order_relaxed);
    s.budget_refusals.fetch_add(1, std::memory_order_relaxed);
    return false;
}

void TurnRun::release_replay() {
    if (!replay_held_) return;
    replay_held_ = false;
    current().ref->state->replays.fetch_sub(1, std::memory_order_relaxed);
}

void TurnRun::release_slot() {
    if (!slot_held_) return;
    slot_held_ = false;
    CandidateState& s = *current().ref->state;
    std::lock_guard lock(s.mutex);
    s.release_locked(clock_.now());
}

void TurnRun::note_backpressure(const Failed& failed) {
    CandidateState& s = *current().ref->state;
    policy::BackpressureFacts facts;
    facts.cls = failed.classification.cls;
    facts.http_status = failed.status;
    facts.overloaded = failed.error.type == "overloaded_error" || failed.error.code == "overloaded_error";
    const int units = policy::backpressure_units(facts, route_->admission.backpressure);
    if (units <= 0) return;
    std::lock_guard lock(s.mutex);
    if (s.limit) s.limit->on_backpressure(units, clock_.now());
}

void TurnRun::note_ratelimit(const transport::ResponseHeader& head) {
    policy::RateLimitHeaders h;
    for (const auto field : head) {
        const std::string_view name = field.name_string();
        if (policy::iequals(name, "x-ratelimit-remaining-requests")) {
            h.openai_remaining = field.value();
        } else if (policy::iequals(name, "x-ratelimit-reset-requests")) {
            h.openai_reset = field.value();
        } else if (policy::iequals(name, "anthropic-ratelimit-requests-remaining")) {
            h.anthropic_remaining = field.value();
        } else if (policy::iequals(name, "anthropic-ratelimit-requests-reset")) {
            h.anthropic_reset = field.value();
        } else if (policy::iequals(name, "date")) {
            h.date = field.value();
        }
    }
    if (!h.openai_remaining && !h.anthropic_remaining) return;
    const auto now_unix_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    const auto hold = policy::ratelimit_hold_ms(h, route_->retry.max_delay_ms, now_unix_ms);
    if (!hold) return;
    CandidateState& s = *current().ref->state;
    const auto until = clock_.now() + std::chrono::milliseconds(*hold);
    std::lock_guard lock(s.mutex);
    if (until > s.hold_until) s.hold_until = until;
}

Task<std::optional<bool>> TurnRun::wait_hold(std::optional<Timer>& timer, Clock::time_point until, Failed* last) {
    CandidateState& s = *current().ref->state;
    bool counted = false;
    for (;;) {
        const auto now = clock_.now();
        Clock::time_point hold;
        {
            std::lock_guard lock(s.mutex);
            hold = s.hold_until;
        }
        if (hold <= now) co_return std::nullopt;
        if (!counted) s.ratelimit_holds.fetch_add(1, std::memory_order_relaxed);
        counted = true;
        if (hold > until) {
            // No wait that cannot end in a send: answered at once.
            release_slot();
            s.admission_rejections.fetch_add(1, std::memory_order_relaxed);
            co_return co_await refuse_admission(last, (ceil_ms(hold - now) + 999) / 1000);
        }
        if (!timer) timer.emplace(client_.get_executor());
        timer->expires_at(hold);
        co_await timer->async_wait(use_tuple);
        if (watch_cut()) co_return false;
        // Another answer may have moved the hold on meanwhile: read it again.
    }
}

Task<std::optional<bool>> TurnRun::pass_admission(Failed* last) {
    CandidateState& s = *current().ref->state;
    const auto now = clock_.now();
    // Inside the turn's deadline and queue_timeout_ms (0: the deadline).
    const std::int64_t left = std::max<std::int64_t>(replays_.left_ms(now), 0);
    const std::int64_t queue_ms = route_->admission.queue_timeout_ms > 0
                                      ? std::min(route_->admission.queue_timeout_ms, left)
                                      : left;
    const auto until = now + std::chrono::milliseconds(queue_ms);
    std::optional<Timer> timer;

    // The provider's rate-limit hold, waited out when it ends in time.
    if (auto ended = co_await wait_hold(timer, until, last)) co_return *ended;

    // A slot: at once when one is free and nobody waits, else in the queue.
    std::shared_ptr<AdmissionWaiter> waiter;
    {
        std::lock_guard lock(s.mutex);
        if (!s.limit) co_return std::nullopt;  // admission turned off by a reload
        if (s.queue.empty() && s.admitted < s.limit->limit(clock_.now())) {
            ++s.admitted;
            slot_held_ = true;
            co_return std::nullopt;
        }
        if (!timer) timer.emplace(client_.get_executor());
        waiter = std::make_shared<AdmissionWaiter>(client_.get_executor());
        waiter->timer = &*timer;
        s.queue.push_back(waiter);
        s.queued.store(static_cast<int>(s.queue.size()), std::memory_order_relaxed);
    }
    timer->expires_at(until);
    co_await timer->async_wait(use_tuple);
    waiter->gone = true;
    bool granted;
    {
        std::lock_guard lock(s.mutex);
        granted = waiter->granted;
        if (!granted) {
            // Timed out, or the client left: its place goes at once.
            if (auto it = std::find(s.queue.begin(), s.queue.end(), waiter); it != s.queue.end()) s.queue.erase(it);
            s.queued.store(static_cast<int>(s.queue.size()), std::memory_order_relaxed);
        }
    }
    if (granted) slot_held_ = true;
    if (watch_cut()) co_return false;  // the slot, if granted, goes back with the turn
    if (!granted) {
        s.admission_rejections.fetch_add(1, std::memory_order_relaxed);
        co_return co_await refuse_admission(last, 1);
    }
    // A hold that began while it queued (another attempt's answer) holds
    // it too, its slot kept: the queue's order stands.
    co_return co_await wait_hold(timer, until, last);
}

Task<bool> TurnRun::refuse_admission(Failed* last, std::int64_t retry_after_s, policy::FailureKind kind) {
    // An upstream answer already had: passed on (section 9), bound queue_timeout_ms.
    if (last) {
        co_return co_await end_turn(*last, policy::Decision{policy::Verdict::exhausted,
                                                            policy::Bound::queue_timeout_ms, 0, "queue-timeout"},
                                    true);
    }
    retry_after_s_ = std::max<std::int64_t>(retry_after_s, 1);
    Ending end;
    own_failure(end, kind, 0);
    co_return co_await write_ending(end);
}

}  // namespace modelproxy::proxy
