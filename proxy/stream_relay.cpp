// A stream attempt's relay (docs/behaviour.md section 7): the coroutine that
// reads and writes, publication and the stream's end. The work of each read
// (the events, the stream rules) is in stream_events.cpp; the head hold
// ticker in hold_ticker.cpp.
//
// stream_attempt is a short coroutine: it reads, and writes what the plain
// relay_* functions ask for. They do the work of each read on the plan's
// StreamRelay, so that no big local lives in the coroutine frame (Asio
// recycles frames of up to 1020 bytes only).
#include "proxy/stream_relay.hpp"

#include "policy/classify.hpp"
#include "proxy/request.hpp"
#include "proxy/response_head.hpp"
#include "proxy/turn_run.hpp"
#include "sse/end_rule.hpp"
#include "sse/inspect.hpp"
#include "sse/sequence_number.hpp"

#include <optional>

namespace modelproxy::proxy {

using transport::Fault;

void RelayOut::add_view(std::string_view bytes) {
    if (bytes.empty()) return;
    if (view_.empty()) {
        view_ = bytes;
    } else if (view_.data() + view_.size() == bytes.data()) {
        view_ = std::string_view(view_.data(), view_.size() + bytes.size());
    } else {
        text_ += view_;
        view_ = bytes;
    }
}

void RelayOut::add_copy(std::string_view bytes) {
    text_ += view_;
    view_ = {};
    text_ += bytes;
}

void RelayOut::take(std::string& held) {
    text_.clear();
    text_.swap(held);
    view_ = {};
}

void RelayOut::cut_to(std::size_t n) {
    if (n <= text_.size()) {
        text_.resize(n);
        view_ = {};
    } else {
        view_ = view_.substr(0, n - text_.size());
    }
}

void RelayOut::clear() {
    text_.clear();
    view_ = {};
}

void StreamRelay::start(bool stream_rules, sse::Reader::Limits limits, const sse::IdentityRule* identity_rule,
                        const sse::CredentialScanner* scanner) {
    reader.reset();
    reader.set_limits(limits);
    memo.forget();
    held.clear();
    out.clear();
    piece = {};
    decoded.clear();
    rules = stream_rules;
    saw_done = saw_end = saw_finish = saw_event = false;
    error_event.reset();
    last_sequence.reset();
    if (resume) {
        resume->resumable = false;
        resume->error_event.clear();
    }
    started = std::chrono::steady_clock::now();
    identity = nullptr;
    if (identity_rule) {
        if (identity_) {
            identity_->reset(*identity_rule);
        } else {
            identity_.emplace(*identity_rule);
        }
        identity = &*identity_;
    }
    if (scanner) secrets.emplace(scanner->stream_scan());
}

void StreamRelay::clear() {
    if (resume) resume->clear();
    held.clear();
    out.clear();
    piece = {};
    decoded.clear();
}

// The first answer text (or a complete stream without any): the head,
// unless the hold limit already sent one, is built now and written with the
// held events, which move to `out` to go out with the rest of this read's
// events: one write, not one for the head, one for the held events and one
// per read after them.
void TurnRun::publish(transport::Exchange& ex) {
    if (!first_byte_at_) first_byte_at_ = clock_.now();
    StreamRelay& relay = plan_.stream;
    const bool head_out = phase_ == Phase::head_out;
    // docs/behaviour.md section 13: the hold limit's head named another
    // candidate than the one whose events follow.
    if (head_out && head_named_ != current().ref) {
        std::string note = ": x-modelproxy-model ";
        note.append(answering_model()).append(" ").append(answering_route()).append("\n\n");
        relay.held.insert(0, note);
    }
    relay.out.take(relay.held);  // `out` is empty until publication
    start_answering();
    // A probe succeeds at its first answer text (section 13).
    if (admitted_ == policy::Admit::probe || fleet_probe_) settle(policy::BreakerFacts{.ok_2xx = true});
    if (head_out) return;
    client_status_ = static_cast<int>(ex.head().result_int());
    ResponseHead head(ex.head().result_int(), ex.head().reason(), std::move(plan_.head_text));
    head.copy_upstream(ex);
    head.add_modelproxy(replays_.attempts(), plan_.request_id, answering_model(), answering_route());
    stream_framing(head);
    plan_.head_text = head.finish();
    head_pending_ = plan_.head_text;
}

Task<bool> TurnRun::write_out(std::string_view after) {
    StreamRelay& relay = plan_.stream;
    const std::string_view head = head_pending_;
    head_pending_ = {};
    const bool ok = co_await write_chunk(relay.out.text(), relay.out.view(), head, {}, after);
    relay.out.clear();
    co_return ok;
}

// Ends the client stream after publication, as plan_.stream.close says: the
// checked events of this read, the closing error event and the last chunk,
// in one write once the records are written.
Task<TurnRun::AttemptEnd> TurnRun::close_published() {
    end_published();
    const bool ok = co_await write_out("0\r\n\r\n");
    co_return AttemptEnd{true, ok && keep_alive()};
}

void TurnRun::end_published() {
    StreamRelay& relay = plan_.stream;
    const StreamRelay::Close& close = relay.close;
    policy::FailureFacts facts;
    facts.kind = close.failure;
    facts.cls = close.classification.cls;
    facts.client = policy::ClientHas::answer_text;
    facts.message = close.detail;
    const policy::FailureAnswer a = policy::failure_answer(facts);
    if (a.form == policy::AnswerForm::closing_event) relay.out.add_copy(closing_event(a, replays_.attempts()));
    record_end({200, &close.classification, a.code, a.record_decision, a.outcome, a.record_status,
                policy::to_string(a.cls), a.bound});
}

// docs/behaviour.md section 7. The head and the events before the first
// answer text are held; a retryable failure before then is replayed
// invisibly (the held bytes are dropped). After the first answer text every event is forwarded as it
// completes, and a break ends the client stream with one closing error event,
// never a [DONE]. Nothing after [DONE] is forwarded.
Task<TurnRun::AttemptEnd> TurnRun::stream_attempt(Attempt& a, Failed& failed) {
    transport::Exchange& ex = *a.exchange;
    StreamRelay& relay = start_relay();
    // The relay's end, however the attempt ends (the credential scan's
    // streams go back to the thread's spares).
    struct End {
        StreamRelay& relay;
        ~End() { relay.end(); }
    } end{relay};
    // The stream's `usage` (section 10's token counts), counted when this
    // attempt's relay ends, however it ends.
    metrics::UsageTally usage(worker_.counters(slot_));
    // docs/behaviour.md section 13: first_token_timeout_ms runs from the
    // head while a later usable candidate exists and `timeout` is in
    // fallback_on; the last usable candidate is never cut by it.
    first_token_until_.reset();
    if (route_->first_token_timeout_ms > 0 && phase_ != Phase::answering &&
        fallback_on().has(policy::ErrorClass::timeout)) {
        const auto now = clock_.now();
        if (next_usable(now)) first_token_until_ = now + std::chrono::milliseconds(route_->first_token_timeout_ms);
    }
    for (;;) {
        relay.decoded.clear();
        bool done = false;
        const ReadLimit limit = read_limit();
        Fault fault = Fault::none;
        if (auto buffered = ex.body_from_buffer(relay.decoded, &relay.piece, done)) {
            fault = *buffered;
        } else {
            fault = co_await ex.read_piece(relay.piece, relay.decoded, done, limit.until, limit.on_timeout);
        }
        if (watch_cut()) co_return AttemptEnd{true, false};
        RelayStep step = relay_read(done, fault, failed, usage);
        if (step == RelayStep::publish) {
            publish(ex);
            step = relay_events(fault != Fault::none, failed, usage);  // never publish again
        }
        if (step == RelayStep::read_on) step = relay_end(fault, done, limit.capped, failed);
        // Section 16: a resume's stream that ended before its seam said less
        // than the client has.
        if (step == RelayStep::complete && catching_up()) step = abandon_resume(metrics::ResumeResult::diverged);
        switch (step) {
            case RelayStep::read_on:
            case RelayStep::publish:  // not after publication
                if (!relay.out.empty() || !head_pending_.empty()) {
                    if (!co_await write_out()) co_return AttemptEnd{true, false};
                }
                continue;
            case RelayStep::close:
                note_usage(usage.latest());
                usage.count();  // before the records and the last bytes
                // Section 16: a break before a resume's seam ends it; a break
                // a resume may continue is tried first (the turn loop sends
                // the resume's attempt); else the held-back error event goes
                // out as section 7 says.
                if (catching_up()) {
                    abandon_resume(metrics::ResumeResult::broken);
                } else if (relay.resume && relay.resume->resumable && resume_break(failed)) {
                    // This read's events before the break go out first.
                    if (!relay.out.empty() && !co_await write_out()) co_return AttemptEnd{true, false};
                    co_return AttemptEnd{};
                } else if (relay.resume && !relay.resume->error_event.empty()) {
                    relay.out.add_copy(relay.resume->error_event);
                    relay.close.failure = policy::FailureKind::upstream_error_event;
                }
                co_return co_await close_published();
            case RelayStep::fail:
                co_return AttemptEnd{};
            case RelayStep::held_error:  // the upstream answer goes with it
                failed.attempt = std::move(a);
                co_return AttemptEnd{};
            case RelayStep::complete:
                break;
        }
        if (phase_ != Phase::answering) publish(ex);
        note_usage(usage.latest());
        usage.count();  // before the records and the last bytes
        record_end({200, nullptr, "", "ok", "ok", 200, "", ""});
        // `out` may view the connection's buffer (RelayOut): the connection
        // goes back to the pool once it is written.
        const bool ok = co_await write_out("0\r\n\r\n");
        if (ex.reusable()) give_back(a);
        co_return AttemptEnd{true, ok && keep_alive()};
    }
}

StreamRelay& TurnRun::start_relay() {
    const bool rules = route_->dialect != config::Dialect::generic && policy::has_stream_rules(plan_.endpoint);
    const sse::IdentityRule* identity = rules && plan_.identity ? &*plan_.identity : nullptr;
    // docs/behaviour.md section 8: one line within max_event_bytes; one
    // event, which the reader buffers whole, within max_response_body_bytes.
    const sse::Reader::Limits limits{static_cast<std::size_t>(limits_.max_event_bytes),
                                     static_cast<std::size_t>(limits_.max_response_body_bytes)};
    plan_.stream.start(rules, limits, identity, plan_.runtime->secrets ? &*plan_.runtime->secrets : nullptr);
    start_resume(plan_.stream);
    return plan_.stream;
}

// Before publication (and while a resume catches up) the turn deadline
// bounds the wait too; after it, only stream_idle_timeout_ms and
// max_stream_ms end a stream.
TurnRun::ReadLimit TurnRun::read_limit() const {
    ReadLimit limit{Clock::now() + std::chrono::milliseconds(route_->stream_idle_timeout_ms)};
    // A resume's catch-up (section 16) is bounded by the deadline too.
    const bool answering = phase_ == Phase::answering && !catching_up();
    if (!answering && plan_.deadline < limit.until) {
        limit.until = plan_.deadline;
        limit.on_timeout = Fault::deadline;
    }
    if (!answering && first_token_until_ && *first_token_until_ < limit.until) {
        limit.until = *first_token_until_;
        limit.on_timeout = Fault::first_token_timeout;
    }
    if (answering && route_->max_stream_ms > 0) {
        auto cap = plan_.stream.started + std::chrono::milliseconds(route_->max_stream_ms);
        if (cap < limit.until) {
            limit.until = cap;
            limit.capped = true;
        }
    }
    return limit;
}

sse::StreamFacts TurnRun::stream_facts() const {
    const StreamRelay& r = plan_.stream;
    sse::StreamFacts facts;
    facts.rules = r.rules;
    facts.published = phase_ == Phase::answering;
    facts.after_done = r.saw_done;
    facts.error_held = r.error_event.has_value();
    facts.max_held_bytes = static_cast<std::size_t>(limits_.max_response_body_bytes);
    return facts;
}

}  // namespace modelproxy::proxy
