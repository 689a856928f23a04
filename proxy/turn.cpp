// The turn loop: attempt after attempt, each sent and read, its failure
// decided by policy/ (replay, wait, or end), until the turn is answered.
#include "proxy/turn.hpp"

#include "policy/classify.hpp"
#include "policy/decision.hpp"
#include "policy/retry_after.hpp"
#include "proxy/digest.hpp"
#include "proxy/turn_run.hpp"
#include "proxy/turn_watch.hpp"
#include "sse/inspect.hpp"

#include <boost/asio/this_coro.hpp>

#include <random>

namespace modelproxy::proxy {

using transport::Fault;

policy::Transport transport_of(Fault fault) {
    switch (fault) {
        case Fault::dns_failed: return policy::Transport::dns_failed;
        case Fault::tls_verify_failed: return policy::Transport::tls_verify_failed;
        case Fault::connect_refused: return policy::Transport::connect_refused;
        case Fault::connect_timeout: return policy::Transport::connect_timeout;
        case Fault::dropped_before_head:
        case Fault::stale_connection:
        case Fault::bad_response: return policy::Transport::dropped_before_head;
        case Fault::dropped_in_body: return policy::Transport::dropped_in_body;
        case Fault::deadline: return policy::Transport::deadline_fired;
        case Fault::idle_timeout: return policy::Transport::stream_idle_fired;
        default: return policy::Transport::connect_reset;
    }
}

// One attempt: sent, and its answer relayed (the turn is then answered) or
// read into `failed` for run()'s decision. Its own coroutine so that neither
// its frame nor run()'s grows past the 1 KiB the recycling lists keep
// (transport/recycling.hpp).
Task<TurnRun::AttemptEnd> TurnRun::try_attempt(Attempt& a, Failed& failed) {
    // Opened, sent and the head read here, not in a coroutine of its own: a
    // coroutine awaited costs its frame and two resumptions (issue 7).
    {
        transport::Target target{&route_.upstream, plan_.runtime->tls[plan_.route_index].context.get(),
                                 std::chrono::milliseconds(route_.connect_timeout_ms)};
        auto& pool = worker_.pool(plan_.runtime->pool_keys[plan_.route_index]);
        a.connection = pool.take(attempt_started_);
        note_idle(pool);
        auto& busy = worker_.counters(slot_).busy_connections;
        if (a.connection) a.busy.hold(busy);
        // A reused connection the provider had already closed is re-sent at
        // once on a new one; that does not count as an attempt
        // (docs/behaviour.md section 4; which failures those are:
        // transport/stale.hpp).
        bool settled = false;
        for (int round = 0; round < 2 && !settled; ++round) {
            if (!a.connection) {
                auto connected = co_await transport::connect(target, plan_.deadline);
                if (connected.fault != Fault::none) {
                    a.fault = connected.fault;
                    a.detail = std::move(connected.detail);
                    settled = true;
                    break;
                }
                a.connection = std::move(connected.connection);
                a.busy.hold(busy);
            }
            a.exchange.emplace(*a.connection);
            if (plan_.head_request) a.exchange->expect_no_body();
            a.exchange->set_endpoint_replayed(policy::replays_every_class(plan_.endpoint));
            // The send, the body and the answer below try what needs no wait
            // first (the `_at_once` and `body_from_buffer` steps).
            std::size_t taken = 0;
            if (auto sent = a.exchange->send_at_once(plan_.upstream_head, plan_.body, taken)) {
                a.fault = *sent;
            } else {
                a.fault = co_await a.exchange->send_rest(plan_.upstream_head, plan_.body, taken, plan_.deadline);
            }
            if (a.fault == Fault::none) a.fault = co_await a.exchange->read_head(plan_.deadline);
            if (a.fault != Fault::stale_connection) {
                settled = true;
                break;
            }
            a.exchange.reset();
            a.connection.reset();
            a.busy.release();
        }
        if (!settled) a.fault = Fault::dropped_before_head;
    }
    if (watch_cut()) co_return AttemptEnd{true, false};
    if (a.fault != Fault::none) {
        failed = transport_failure(a.fault);
    } else {
        transport::Exchange& ex = *a.exchange;
        const int status = static_cast<int>(ex.head().result_int());
        if (status >= 300 && status < 400) {
            failed.classification = policy::classify_http(status, {}, plan_.endpoint);
            failed.code = "upstream_redirect";
            failed.message = "the upstream answered with a redirect, which is never followed";
        } else if (status >= 200 && status < 300 && ex.event_stream()) {
            if (head_carries_key(ex)) {
                // SPEC section 8: refused before any event is read.
                failed = credential_refusal();
            } else {
                StreamEnd end = co_await stream_attempt(a, failed);
                if (end.finished) co_return AttemptEnd{true, end.keep_alive};
            }
            failed.stream_status = 200;
        } else {
            // A whole body: read it (nothing reaches the client until it is complete).
            std::string& body = plan_.answer_body;  // reused: see ForwardPlan
            body.clear();
            Fault fault = Fault::none;
            for (bool done = false; !done;) {
                if (auto buffered = ex.body_from_buffer(body, nullptr, done)) {
                    fault = *buffered;
                } else {
                    fault = co_await ex.read_some(body, done, plan_.deadline, Fault::deadline);
                }
                if (watch_cut()) co_return AttemptEnd{true, false};
                if (fault == Fault::none &&
                    static_cast<std::int64_t>(body.size()) > limits_.max_response_body_bytes)
                    fault = Fault::body_too_large;
                if (fault != Fault::none) break;
            }
            if (fault != Fault::none) {
                failed = transport_failure(fault);
            } else if (status >= 200 && status < 300 && plan_.wants_stream &&
                       route_.dialect != config::Dialect::generic && policy::has_stream_rules(plan_.endpoint)) {
                // SPEC section 8: a 200 that is not a stream when the client asked for one.
                failed = refusal("not-a-stream", "not_a_stream",
                                 "the client asked for a stream and the upstream answered 200 without one",
                                 policy::ErrorClass::identity);
            } else if (status >= 200 && status < 300) {
                if (!check_body(ex, body, failed)) {
                    if (head_out_) {
                        const bool open = co_await refuse_after_hold();
                        co_return AttemptEnd{true, open};
                    }
                    std::size_t taken = 0;
                    if (auto open = answer_success(a, body, taken)) co_return AttemptEnd{true, *open};
                    const bool written = co_await finish_write(answer_buffers(body), taken);
                    co_return AttemptEnd{true, written && keep_alive()};
                }
            } else {
                auto error = sse::parse_error_body(body).value_or(policy::ProviderError{});
                failed.classification = policy::classify_http(status, error, plan_.endpoint);
                failed.status = status;
                const auto now_unix = std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count();
                failed.retry_after_ms =
                    policy::retry_after_ms(ex.fields().retry_after_ms, ex.fields().retry_after, now_unix);
                // SPEC section 8: an answer that echoes an upstream key, in
                // its head or its body, keeps its status (and its
                // classification) but is never passed on (end_answer).
                if (head_carries_key(ex) || (plan_.runtime->secrets && plan_.runtime->secrets->key_in_body(body))) {
                    failed.key_echoed = true;
                    failed.code = "credential_in_response";
                    failed.message = "the upstream answer carried credential material";
                }
                failed.body = std::move(body);
                failed.attempt = std::move(a);
            }
        }
    }
    co_return AttemptEnd{};
}

Task<bool> TurnRun::run() {
    co_await asio::this_coro::throw_if_cancelled(false);
    payload_digest(digest_, plan_.method, plan_.target, plan_.body);
    std::int64_t waited_ms = 0;
    // Made for the first wait only (see write_gate_): most turns never wait.
    std::optional<Timer> wait_timer;

    for (attempts_ = 1;; ++attempts_) {
        if (attempts_ > 1) {
            // Payload identity (SPEC section 6): a replay sends exactly what
            // attempt 1 sent, or nothing.
            if (!replay_matches(digest_, plan_.method, plan_.target, plan_.body)) co_return co_await digest_mismatch();
        }
        Failed failed;
        // Declared here, not in try_attempt: an attempt's connection stays
        // with the turn until the decision and any wait are over.
        Attempt a;
        // Attempt 1 starts with the turn (prepare() read the clock a few
        // microseconds ago); a replay reads it again.
        attempt_started_ = attempts_ == 1 ? plan_.started : Clock::now();
        const AttemptEnd end = co_await try_attempt(a, failed);
        if (end.answered) co_return end.keep_alive;

        if (failed.refusal) co_return co_await end_turn(failed, {policy::Verdict::terminal, policy::Bound::none, 0, "refused"}, false);
        const auto failure =
            policy::failure_of(failed.classification, failed.status, failed.retry_after_ms);
        const std::int64_t left = ms_between(Clock::now(), plan_.deadline);
        auto decision = policy::decide({attempts_, waited_ms}, failure, route_.retry, left, draw());
        if (decision.verdict == policy::Verdict::retry) {
            record_attempt(failed.record_status(), &failed.classification, failed.code, "retry", decision.wait_ms);
            // An upstream answer read whole leaves its connection reusable.
            if (failed.attempt.exchange && failed.attempt.exchange->reusable()) give_back(failed.attempt);
            waited_ms += decision.wait_ms;
            if (!wait_timer) wait_timer.emplace(client_.get_executor());
            wait_timer->expires_after(std::chrono::milliseconds(decision.wait_ms));
            co_await wait_timer->async_wait(use_tuple);
            if (watch_cut()) co_return false;
            // Checked again before the send: the wait may have overrun.
            auto again = policy::recheck_before_send(ms_between(Clock::now(), plan_.deadline), route_.retry);
            if (again.verdict == policy::Verdict::retry) continue;
            // The turn ends at the deadline after the wait, on the failure it
            // waited for: no further attempt is sent.
            co_return co_await end_turn(failed, again, true);
        }
        co_return co_await end_turn(failed, decision, false);
    }
}

TurnRun::Failed TurnRun::transport_failure(Fault fault) {
    Failed f;
    if (fault == Fault::unsupported_encoding) {
        f.classification = {policy::ErrorClass::network, false, policy::TimeoutSource::none, "unsupported-encoding"};
        f.code = "unsupported_encoding";
        f.message = "the upstream answered with a content coding other than identity, gzip or deflate";
        return f;
    }
    if (fault == Fault::body_too_large) {
        // A section 8 refusal, as a stream's line or held bytes past their
        // limits are: recorded `refused`, counted, never retried.
        f.classification = {policy::ErrorClass::network, false, policy::TimeoutSource::none, "response-too-large"};
        f.code = "response_too_large";
        f.message = "the upstream answer is larger than max_response_body_bytes";
        f.refusal = true;
        return f;
    }
    f.classification = policy::classify(transport_of(fault), plan_.endpoint);
    switch (fault) {
        case Fault::deadline:
            f.code = "deadline";
            f.message = "the upstream did not answer before the turn deadline";
            break;
        case Fault::tls_verify_failed:
            f.code = "tls_verification_failed";
            f.message = "the upstream's TLS certificate could not be verified";
            break;
        case Fault::dns_failed:
            f.code = "dns_failed";
            f.message = "the upstream host name does not resolve";
            break;
        case Fault::connect_refused:
        case Fault::connect_reset:
        case Fault::connect_timeout:
            f.code = "connect_failed";
            f.message = "the upstream could not be reached";
            break;
        default:
            f.code = "connection_dropped";
            f.message = "the upstream dropped the connection before its answer was complete";
            break;
    }
    return f;
}

TurnRun::Failed TurnRun::refusal(std::string_view rule, std::string_view code, std::string_view message,
                                 policy::ErrorClass cls) {
    Failed f;
    f.classification = {cls, false, policy::TimeoutSource::none, rule};
    f.code = std::string(code);
    f.message = std::string(message);
    f.refusal = true;
    return f;
}

TurnRun::Failed TurnRun::credential_refusal() {
    return refusal("credential", "credential_in_response", "the upstream answer carried credential material",
                   policy::ErrorClass::credential);
}

bool TurnRun::head_carries_key(const transport::Exchange& ex) const {
    return plan_.runtime->secrets && plan_.runtime->secrets->key_in_head(ex.head().bytes());
}

// SPEC section 8 on a whole 2xx body, before any byte reaches the client:
// model identity (on the endpoints that name one) and the credential scan,
// of the body whatever its Content-Type says, and of the head for the keys.
bool TurnRun::check_body(transport::Exchange& ex, const std::string& body, Failed& failed) {
    // The body's `usage` counts whatever the verdict: the upstream spent the
    // tokens. The identity walk reads it; without one, one more parse.
    if (plan_.identity) {
        const sse::BodyIdentity& seen = worker_.inspector().body_identity(body, plan_.endpoint);
        metrics::count_usage(worker_.counters(slot_), seen.usage);
        std::string_view answered;
        if (const auto verdict = sse::check_body_identity(seen, *plan_.identity, &answered); sse::refused(verdict)) {
            failed = identity_refusal(verdict, answered);
            return true;
        }
    } else if (plan_.endpoint != policy::Endpoint::other) {
        metrics::count_usage(worker_.counters(slot_), worker_.inspector().inspect(body, plan_.endpoint).usage);
    }
    if (plan_.runtime->secrets && (plan_.runtime->secrets->contains_secret(body) || head_carries_key(ex))) {
        failed = credential_refusal();
        return true;
    }
    return false;
}

TurnRun::Failed TurnRun::identity_refusal(sse::IdentityVerdict verdict, std::string_view answered) {
    sse::describe_refusal(verdict, answered, *plan_.identity, plan_.identity_refusal);
    plan_.identity_refused = true;
    return refusal("model-identity", "model_identity_mismatch", plan_.identity_refusal.message,
                   policy::ErrorClass::identity);
}

void TurnRun::give_back(Attempt& a, Clock::time_point now) {
    a.exchange.reset();
    a.busy.release();
    // A turn of a config generation that a reload replaced finds its pool
    // gone: the connection closes instead of refilling a pool nothing uses.
    transport::Pool* pool = worker_.pool_if_kept(plan_.runtime->pool_keys[plan_.route_index]);
    if (!pool) {
        a.connection.reset();
        return;
    }
    pool->give_back(std::move(a.connection), now);
    note_idle(*pool);
}

double TurnRun::draw() {
    thread_local std::mt19937_64 random{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(random);
}

namespace {

// A turn the client cut by hanging up: recorded as cancelled, not as a
// provider failure. A plain function, so the records are on the stack and
// not in run_turn's coroutine frame (kept small enough for Asio to recycle).
void record_client_left(Worker& worker, const ForwardPlan& plan, const TurnRun& turn) {
    AttemptRecord a;
    a.request_id = plan.request_id;
    a.route = plan.runtime->config.routes[plan.route_index].name;
    a.model = plan.client_model;
    a.attempt = std::max(1, turn.attempts());
    a.error_class = "cancelled";
    a.decision = "cancelled";
    a.remaining_ms = std::max<std::int64_t>(0, ms_between(Clock::now(), plan.deadline));
    TurnRecord r;
    r.attempts = std::max(1, turn.attempts());
    r.request_id = plan.request_id;
    r.route = plan.runtime->config.routes[plan.route_index].name;
    r.model = plan.client_model;
    r.outcome = "cancelled";
    r.error_class = "cancelled";
    r.stream = plan.wants_stream;
    r.duration_ms = ms_between(plan.started, Clock::now());
    const std::uint16_t slot = plan.runtime->metric_slots[plan.route_index];
    worker.write_attempt_and_turn(slot, a, ms_between(turn.attempt_started(), Clock::now()), r);
}

}  // namespace

void ForwardPlan::clear() {
    runtime.reset();
    route_index = 0;
    client_model.clear();
    method.clear();
    target.clear();
    upstream_head.clear();
    body.clear();
    wants_stream = false;
    head_request = false;
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
    // its reads costs no allocation on the next request (issue 2).
    for (std::string* kept : {&plan.stream.held, &plan.stream.out.storage(), &plan.stream.decoded})
        if (kept->capacity() > 128 * 1024) std::string().swap(*kept);
    if (plan.head_text.capacity() > 16 * 1024) std::string().swap(plan.head_text);
    if (plan.upstream_head.capacity() > 16 * 1024) std::string().swap(plan.upstream_head);
    plan.stream.reader.reset();  // releases buffers grown past its own limit
}

Task<bool> run_turn(Worker& worker, Socket& client, ForwardPlan& plan, asio::cancellation_signal& cut) {
    worker.shared().inflight_turns.fetch_add(1);
    struct Done {
        Shared& shared;
        ~Done() { shared.inflight_turns.fetch_sub(1); }
    } done{worker.shared()};

    // A client that hangs up ends the turn at once, aborting the upstream
    // request (SPEC section 6); so does the drain limit. Either emits `cut`,
    // the session coroutine's cancellation signal, which completes the
    // turn's pending wait (a socket read or write, a timer) at once; the
    // turn then sees its watch's reason and returns. The turn runs in the
    // session's own coroutine: a coroutine of its own, only so that it had a
    // slot of its own to cut, cost a spawn, two frames and two scheduler
    // passes per request (issue 7). Recycled memory (recycling.hpp): a turn
    // costs no allocation for its watch.
    auto watch = std::allocate_shared<TurnWatch>(transport::RecyclingAllocator<TurnWatch>(), cut);
    // The turn's end, however it ends (an exception included): the watch
    // stops cutting before the session goes on.
    struct Finish {
        TurnWatch& watch;
        ~Finish() { watch.finish(); }
    };
    TurnRun turn(worker, client, plan, *watch);
    watch_client(client, watch);
    worker.running_turns().push_back(*watch);
    TurnWatch::Reason reason = TurnWatch::Reason::none;
    bool answered = false;
    {
        Finish finish{*watch};
        // Not a conditional expression inside co_await (g++ 12 hazard).
        if (plan.wants_stream) {
            answered = co_await turn.run_with_ticker();
        } else {
            answered = co_await turn.run();
        }
        reason = turn.recorded() ? TurnWatch::Reason::none : watch->reason;
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
    record_client_left(worker, plan, turn);
    co_return false;
}

}  // namespace modelproxy::proxy
