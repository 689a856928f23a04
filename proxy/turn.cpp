// The turn loop: pick a candidate, send, read, decide, then wait or answer,
// until the turn is answered (docs/behaviour.md sections 5, 6 and 9). The
// decisions are policy/'s (TurnReplays, failure_answer), at the times the
// turn's clock gives; this file does the waits they ask for.
#include "proxy/turn.hpp"

#include "policy/classify.hpp"
#include "policy/decision.hpp"
#include "proxy/request.hpp"
#include "proxy/turn_run.hpp"
#include "proxy/turn_watch.hpp"

#include <boost/asio/this_coro.hpp>

#include <random>

namespace modelproxy::proxy {

double uniform_draw() {
    thread_local std::mt19937_64 random{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(random);
}

Task<bool> TurnRun::run() {
    co_await asio::this_coro::throw_if_cancelled(false);
    // Pick: the candidate the turn starts on, admitted by its breaker.
    start_candidates();
    if (fail_fast_at_) {
        if (auto ended = co_await wait_half_open()) co_return *ended;
    }
    // The gates (sections 14 and 15) before the first send; nothing sent yet.
    if (gates_on()) {
        if (auto ended = co_await pass_gates(nullptr)) co_return *ended;
    }
    // Made for the first wait only (see write_gate_): most turns never wait,
    // and a stream's whole run keeps this frame.
    std::unique_ptr<Timer> wait_timer;
    for (;;) {
        const int attempt = replays_.start_attempt();
        ++order_[cur_].attempts;
        // Payload identity (docs/behaviour.md sections 6 and 13): every
        // replay to a candidate sends exactly what its first send did, or
        // nothing.
        if (digest_fresh_) {
            payload_digest(digest_, plan_.method, plan_.target, plan_.body);
            digest_fresh_ = false;
        } else if (!replay_matches(digest_, plan_.method, plan_.target, plan_.body)) {
            co_return co_await digest_mismatch();
        }
        // Declared here, not in try_attempt: an attempt's connection stays
        // with the turn until the decision and any wait are over.
        Failed failed;
        Attempt a;
        // Attempt 1 starts with the turn (prepare() read the clock a few
        // microseconds ago); a replay reads it again.
        attempt_started_ = attempt == 1 ? plan_.started : clock_.now();
        attempt_status_ = 0;

        // Send and read: the attempt answers the turn, or fails.
        const AttemptEnd end = co_await try_attempt(a, failed);
        if (end.answered) co_return end.keep_alive;

        // Section 16: a cut stream a resume continues, at once, on the
        // candidate resume_break chose (its attempt is recorded).
        if (resume_to_) {
            const std::size_t to = *resume_to_;
            resume_to_.reset();
            resume_attempt_ = true;
            release_slot();
            attempt_status_ = 0;
            const auto now = clock_.now();
            if (to != cur_) {
                move_to(to, now, false);
            } else {
                admit_resume(now);
            }
            if (gates_on()) {
                if (auto ended = co_await pass_gates(&failed)) co_return *ended;
            }
            continue;
        }
        // A resume's attempt that failed before its seam ends the turn as
        // the cut it continued; never replayed.
        if (resume_attempt_) co_return co_await resume_failed(failed);

        // Decide: replay here, fall over to another candidate, or end.
        std::optional<std::size_t> fall_to;
        const policy::Decision decision = decide(failed, fall_to);
        if (decision.verdict != policy::Verdict::retry) co_return co_await end_turn(failed, decision, false);

        const bool falls_over = fall_to.has_value();
        settle_recorded(failed.record_status(), &failed.classification, falls_over ? "fallback" : "retry");
        release_slot();  // the attempt is over: a wait holds no admission slot
        record_attempt(failed.record_status(), &failed.classification, failed.code(),
                       falls_over ? "fallback" : "retry", decision.wait_ms);
        attempt_status_ = 0;  // recorded: a cut during the wait is of no attempt's answer
        // An upstream answer read whole leaves its connection reusable.
        if (failed.attempt.exchange && failed.attempt.exchange->reusable()) give_back(failed.attempt);
        if (falls_over) {
            // At once, no wait (section 13).
            CandidateStates::process().count_fallback(plan_.client_model, order_[*fall_to].ref->client_model);
            move_to(*fall_to, clock_.now(), false);
            if (gates_on()) {
                if (auto ended = co_await pass_gates(&failed)) co_return *ended;
            }
            continue;
        }
        // Wait, then check again before the send: the wait may have overrun.
        if (!wait_timer) wait_timer = std::make_unique<Timer>(client_.get_executor());
        wait_timer->expires_after(std::chrono::milliseconds(decision.wait_ms));
        co_await wait_timer->async_wait(use_tuple);
        if (watch_cut()) co_return false;
        const auto now = clock_.now();
        const policy::Decision again = replays_.before_send(now);
        // The turn ends at the deadline after the wait, on the failure it
        // waited for: no further attempt is sent.
        if (again.verdict != policy::Verdict::retry) co_return co_await end_turn(failed, again, true);
        // The replay's breaker may hold it back: it then falls over when a
        // later candidate is usable.
        if (auto later = admit_replay(now)) move_to(*later, now, false);
        if (gates_on()) {
            if (auto ended = co_await pass_gates(&failed)) co_return *ended;
        }
    }
}

void ForwardPlan::clear() {
    runtime.reset();
    route_index = 0;
    model = nullptr;
    candidates = nullptr;
    fallback_off = false;
    client_body.clear();
    client_head = nullptr;
    client_fields = nullptr;
    admission = nullptr;
    client_model.clear();
    method.clear();
    target.clear();
    upstream_head.clear();
    body.clear();
    wants_stream = false;
    head_request = false;
    one_choice = true;
    deterministic = false;
    endpoint = policy::Endpoint::other;
    error_shape = policy::ErrorShape::openai;
    if (identity) {
        spare_identity_ = std::move(*identity);
        identity.reset();
    }
    request_id.clear();
    keep_alive = true;
    http10 = false;
    started = {};
    deadline = {};
    answer_body.clear();
    digest.clear();
    head_text.clear();
    stream.clear();
    identity_refused = false;
}

sse::IdentityRule& ForwardPlan::set_identity() {
    if (!identity) identity.emplace(std::move(spare_identity_));
    sse::IdentityRule& rule = *identity;
    rule.kind = sse::IdentityRule::Kind::accept_globs;
    rule.globs.clear();
    rule.requested.clear();
    return rule;
}

void RequestSlot::clear() {
    parser.reset();
    head.clear();
    plan.clear();
    // One large request must not leave every spare slot large: what grew
    // past the usual sizes is released (the next request of that size pays
    // for it again).
    buffer.clear();
    if (buffer.capacity() > 16 * 1024) buffer.shrink_to_fit();
    for (std::string* kept : {&body, &plan.body, &plan.answer_body})
        if (kept->capacity() > 64 * 1024) std::string().swap(*kept);
    // A stream's buffers hold one upstream read (up to 64 KiB, transport/)
    // and grow by doubling: kept up to twice that, so a stream that fills
    // its reads costs no allocation on the next request.
    for (std::string* kept : {&plan.stream.held, &plan.stream.out.storage(), &plan.stream.decoded})
        if (kept->capacity() > 128 * 1024) std::string().swap(*kept);
    if (plan.head_text.capacity() > 16 * 1024) std::string().swap(plan.head_text);
    if (plan.upstream_head.capacity() > 16 * 1024) std::string().swap(plan.upstream_head);
    plan.stream.reader.reset();  // releases buffers grown past its own limit
}

Task<bool> run_turn(Worker& worker, Socket& client, ClientWait& wait, ForwardPlan& plan) {
    worker.shared().inflight_turns.fetch_add(1);
    struct Done {
        Shared& shared;
        ~Done() { shared.inflight_turns.fetch_sub(1); }
    } done{worker.shared()};

    // A client that hangs up ends the turn at once, aborting the upstream
    // request (docs/behaviour.md section 6); so does the drain limit. Either
    // emits `cut`, the session coroutine's cancellation signal, which
    // completes the turn's pending wait (a socket read or write, a timer) at
    // once; the turn then sees its watch's reason and returns. The turn runs
    // in the session's own coroutine: a coroutine of its own, only so that it
    // had a slot of its own to cut, cost a spawn, two frames and two
    // scheduler passes per request. The watch is the connection's own
    // (ClientWait, turn_watch.hpp): a turn costs no allocation for it.
    TurnWatch& watch = wait.begin_turn(client);
    // The turn's end, however it ends (an exception included): the watch
    // stops cutting before the session goes on.
    struct Finish {
        TurnWatch& watch;
        ~Finish() { watch.finish(); }
    };
    TurnRun turn(worker, client, plan, watch, worker.shared().turn_clock);
    worker.running_turns().push_back(watch);
    TurnWatch::Reason reason = TurnWatch::Reason::none;
    bool answered = false;
    {
        Finish finish{watch};
        // Not a conditional expression inside co_await (g++ 12 hazard).
        if (plan.wants_stream) {
            answered = co_await turn.run_with_ticker();
        } else {
            answered = co_await turn.run();
        }
        reason = turn.ended() ? TurnWatch::Reason::none : watch.reason;
    }
    if (reason == TurnWatch::Reason::none) co_return answered;
    if (reason == TurnWatch::Reason::drain_limit) {
        // The cut left this coroutine's cancellation state cancelled: a
        // fresh one, so that the closing writes are not refused as cut.
        co_await asio::this_coro::reset_cancellation_state();
        co_await turn.end_at_drain_limit();
        co_return false;
    }
    // The client hung up: the turn was cut.
    turn.record_cancelled();
    co_return false;
}

}  // namespace modelproxy::proxy
