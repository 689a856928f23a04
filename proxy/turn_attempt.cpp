// One attempt of a turn: sent to its candidate, its answer read, and either
// relayed (the turn is answered) or read into the failure the turn decides on.
#include "policy/classify.hpp"
#include "policy/retry_after.hpp"
#include "proxy/turn_run.hpp"
#include "sse/inspect.hpp"

namespace modelproxy::proxy {

using transport::Fault;
using K = policy::FailureKind;

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
        case Fault::first_byte_timeout: return policy::Transport::first_byte_fired;
        case Fault::first_token_timeout: return policy::Transport::first_token_fired;
        default: return policy::Transport::connect_reset;
    }
}

// One attempt: sent, and its answer relayed (the turn is then answered) or
// read into `failed` for run()'s decision. Its own coroutine so that neither
// its frame nor run()'s grows past the 1 KiB the recycling lists keep
// (transport/recycling.hpp).
Task<TurnRun::AttemptEnd> TurnRun::try_attempt(Attempt& a, Failed& failed) {
    // Opened, sent and the head read here, not in a coroutine of its own: a
    // coroutine awaited costs its frame and two resumptions.
    {
        transport::Target target{&route_->upstream, plan_.runtime->tls[plan_.route_index].context.get(),
                                 std::chrono::milliseconds(route_->connect_timeout_ms)};
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
                worker_.counters(slot_)
                    .connects[metrics::connect_kind(a.connection->is_plain(), a.connection->tls_resumed())]
                    .fetch_add(1, std::memory_order_relaxed);
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
            if (a.fault == Fault::none) {
                // docs/behaviour.md section 13: a stream's first byte within
                // first_byte_timeout_ms of the request's last byte.
                std::optional<Clock::time_point> first_byte;
                if (plan_.wants_stream && route_->first_byte_timeout_ms > 0)
                    first_byte = clock_.now() + std::chrono::milliseconds(route_->first_byte_timeout_ms);
                a.fault = co_await a.exchange->read_head(plan_.deadline, first_byte);
            }
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
        attempt_status_ = status;
        if (admission_on() && route_->admission.honour_ratelimit_headers) note_ratelimit(ex.head());
        if (status >= 300 && status < 400) {
            failed = failure(K::upstream_redirect, policy::classify_http(status, {}, plan_.endpoint));
        } else if (status >= 200 && status < 300 && ex.event_stream()) {
            if (head_carries_key(ex)) {
                // docs/behaviour.md section 8: refused before any event is read.
                failed = failure(K::credential_in_body);
            } else {
                const AttemptEnd end = co_await stream_attempt(a, failed);
                if (end.answered) co_return end;
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
                       route_->dialect != config::Dialect::generic && policy::has_stream_rules(plan_.endpoint)) {
                // docs/behaviour.md section 8: a 200 that is not a stream when
                // the client asked for one.
                failed = failure(K::not_a_stream);
            } else if (status >= 200 && status < 300) {
                if (!check_body(ex, body, failed)) {
                    if (phase_ == Phase::head_out) {
                        // The hold limit sent a stream head before this
                        // whole body came: it cannot follow that head.
                        failed = failure(K::not_a_stream_after_hold);
                        const bool open = co_await end_turn(failed, policy::refusal_decision, false);
                        co_return AttemptEnd{true, open};
                    }
                    std::size_t taken = 0;
                    if (auto open = answer_success(a, body, taken)) co_return AttemptEnd{true, *open};
                    const bool written = co_await finish_write(answer_buffers(body), taken);
                    co_return AttemptEnd{true, written && keep_alive()};
                }
            } else {
                answer_failure(a, status, body, failed);
            }
        }
    }
    co_return AttemptEnd{};
}

// A non-2xx answer, read whole into `body`: the failure it is, holding the
// answer to pass on (and `a`'s connection with it). A plain function, so
// that its locals stay off try_attempt's frame, which lives as long as a
// stream does.
void TurnRun::answer_failure(Attempt& a, int status, std::string& body, Failed& failed) {
    const transport::Exchange& ex = *a.exchange;
    auto error = sse::parse_error_body(body).value_or(policy::ProviderError{});
    // docs/behaviour.md section 8: an answer that echoes an upstream key, in
    // its head or its body, keeps its status (and its classification) but is
    // never passed on.
    const bool key_echoed =
        head_carries_key(ex) || (plan_.runtime->secrets && plan_.runtime->secrets->key_in_body(body));
    failed = failure(key_echoed ? K::key_echoed : K::upstream_answer,
                     policy::classify_http(status, error, plan_.endpoint));
    failed.status = status;
    failed.error = std::move(error);
    const auto now_unix =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    failed.retry_after_ms = policy::retry_after_ms(ex.fields().retry_after_ms, ex.fields().retry_after, now_unix);
    failed.body = std::move(body);
    failed.attempt = std::move(a);
}

TurnRun::Failed TurnRun::failure(K kind) {
    Failed f;
    f.kind = kind;
    if (const auto& fixed = policy::row(kind).fixed) f.classification = *fixed;
    return f;
}

TurnRun::Failed TurnRun::failure(K kind, const policy::Classification& c) {
    Failed f;
    f.kind = kind;
    f.classification = c;
    return f;
}

TurnRun::Failed TurnRun::transport_failure(Fault fault) {
    switch (fault) {
        case Fault::unsupported_encoding: return failure(K::unsupported_encoding);
        // A section 8 refusal, as a stream's line or held bytes past their
        // limits are: recorded `refused`, counted, never retried.
        case Fault::body_too_large: return failure(K::body_too_large);
        default: break;
    }
    const policy::Classification c = policy::classify(transport_of(fault), plan_.endpoint);
    switch (fault) {
        case Fault::deadline: return failure(K::deadline, c);
        case Fault::tls_verify_failed: return failure(K::tls_verification_failed, c);
        case Fault::dns_failed: return failure(K::dns_failed, c);
        case Fault::connect_refused:
        case Fault::connect_reset:
        case Fault::connect_timeout: return failure(K::connect_failed, c);
        default: return failure(K::connection_dropped, c);
    }
}

bool TurnRun::head_carries_key(const transport::Exchange& ex) const {
    return plan_.runtime->secrets && plan_.runtime->secrets->key_in_head(ex.head().bytes());
}

// docs/behaviour.md section 8 on a whole 2xx body, before any byte reaches the client:
// model identity (on the endpoints that name one) and the credential scan,
// of the body whatever its Content-Type says, and of the head for the keys.
bool TurnRun::check_body(transport::Exchange& ex, const std::string& body, Failed& failed) {
    // The body's `usage` counts whatever the verdict: the upstream spent the
    // tokens. The identity walk reads it; without one, one more parse.
    if (plan_.identity) {
        const sse::BodyIdentity& seen = worker_.inspector().body_identity(body, plan_.endpoint);
        metrics::count_usage(worker_.counters(slot_), seen.usage);
        note_usage(seen.usage);
        std::string_view answered;
        if (const auto verdict = sse::check_body_identity(seen, *plan_.identity, &answered); sse::refused(verdict)) {
            failed = identity_refusal(verdict, answered);
            return true;
        }
    } else if (plan_.endpoint != policy::Endpoint::other) {
        const sse::Usage& usage = worker_.inspector().inspect(body, plan_.endpoint).usage;
        metrics::count_usage(worker_.counters(slot_), usage);
        note_usage(usage);
    }
    if (plan_.runtime->secrets && (plan_.runtime->secrets->contains_secret(body) || head_carries_key(ex))) {
        failed = failure(K::credential_in_body);
        return true;
    }
    return false;
}

TurnRun::Failed TurnRun::identity_refusal(sse::IdentityVerdict verdict, std::string_view answered) {
    sse::describe_refusal(verdict, answered, *plan_.identity, plan_.identity_refusal);
    plan_.identity_refused = true;
    Failed f = failure(K::model_identity_mismatch);
    f.detail = plan_.identity_refusal.message;
    return f;
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

}  // namespace modelproxy::proxy
