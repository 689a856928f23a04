// A stream attempt's relay (SPEC section 7). The head hold ticker is in
// hold_ticker.cpp.
//
// stream_attempt is a short coroutine: it reads, and writes what the plain
// relay_* functions ask for. They do the work of each read on the plan's
// StreamRelay, so that no big local lives in the coroutine frame (issue 2:
// Asio recycles frames of up to 1020 bytes only).
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
    if (!first_byte_at_) first_byte_at_ = Clock::now();
    StreamRelay& relay = plan_.stream;
    relay.out.take(relay.held);  // `out` is empty until publication
    if (head_out_) return;
    head_out_ = true;
    ResponseHead head(ex.head().result_int(), ex.head().reason(), std::move(plan_.head_text));
    head.copy_upstream(ex);
    head.add_modelproxy(attempts_, plan_.request_id);
    stream_framing(head);
    plan_.head_text = head.finish();
    head_pending_ = plan_.head_text;
    published_ = true;
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
Task<TurnRun::StreamEnd> TurnRun::close_published() {
    StreamRelay& relay = plan_.stream;
    const StreamRelay::Close& close = relay.close;
    if (!close.forwarded_error) add_closing_event();
    record_attempt_and_turn(200, "terminal", close.outcome, 200, &close.classification, close.code);
    const bool ok = co_await write_out("0\r\n\r\n");
    co_return StreamEnd{true, ok && keep_alive()};
}

void TurnRun::add_closing_event() {
    StreamRelay& relay = plan_.stream;
    const StreamRelay::Close& close = relay.close;
    const ClosingError closing{
        close.message.empty() ? std::string_view("the upstream stream broke before its end") : close.message,
        close.code, 502, policy::to_string(close.classification.cls), "terminal", "", attempts_,
        next_sequence_number()};
    relay.out.add_copy(closing_error_event(plan_.endpoint, plan_.error_shape, closing));
}

// SPEC section 7. The head and the events before the first answer text are
// held; a retryable failure before then is replayed invisibly (the held bytes
// are dropped). After the first answer text every event is forwarded as it
// completes, and a break ends the client stream with one closing error event,
// never a [DONE]. Nothing after [DONE] is forwarded.
Task<TurnRun::StreamEnd> TurnRun::stream_attempt(Attempt& a, Failed& failed) {
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
        if (watch_cut()) co_return StreamEnd{true, false};
        RelayStep step = relay_read(done, fault, failed, usage);
        if (step == RelayStep::publish) {
            publish(ex);
            answering_ = true;
            step = relay_events(fault != Fault::none, failed, usage);  // never publish again
        }
        if (step == RelayStep::read_on) step = relay_end(fault, done, limit.capped, failed);
        switch (step) {
            case RelayStep::read_on:
            case RelayStep::publish:  // not after publication
                if (!relay.out.empty() || !head_pending_.empty()) {
                    if (!co_await write_out()) co_return StreamEnd{true, false};
                }
                continue;
            case RelayStep::close:
                usage.count();  // before the records and the last bytes
                co_return co_await close_published();
            case RelayStep::fail:
                co_return StreamEnd{};
            case RelayStep::held_error:  // the upstream answer goes with it
                failed.attempt = std::move(a);
                co_return StreamEnd{};
            case RelayStep::complete:
                break;
        }
        if (!answering_) publish(ex);
        usage.count();  // before the records and the last bytes
        record_attempt_and_turn(200, "ok", "ok", 200, nullptr, "");
        // `out` may view the connection's buffer (RelayOut): the connection
        // goes back to the pool once it is written.
        const bool ok = co_await write_out("0\r\n\r\n");
        if (ex.reusable()) give_back(a);
        co_return StreamEnd{true, ok && keep_alive()};
    }
}

StreamRelay& TurnRun::start_relay() {
    const bool rules = route_.dialect != config::Dialect::generic && policy::has_stream_rules(plan_.endpoint);
    const sse::IdentityRule* identity = rules && plan_.identity ? &*plan_.identity : nullptr;
    // SPEC section 8: one line within max_event_bytes; one event, which the
    // reader buffers whole, within max_response_body_bytes.
    const sse::Reader::Limits limits{static_cast<std::size_t>(limits_.max_event_bytes),
                                     static_cast<std::size_t>(limits_.max_response_body_bytes)};
    plan_.stream.start(rules, limits, identity, plan_.runtime->secrets ? &*plan_.runtime->secrets : nullptr);
    return plan_.stream;
}

// Before publication the turn deadline bounds the wait too; after it, only
// stream_idle_timeout_ms and max_stream_ms end a stream.
TurnRun::ReadLimit TurnRun::read_limit() const {
    ReadLimit limit{Clock::now() + std::chrono::milliseconds(route_.stream_idle_timeout_ms)};
    if (!answering_ && plan_.deadline < limit.until) {
        limit.until = plan_.deadline;
        limit.on_timeout = Fault::deadline;
    }
    if (answering_ && route_.max_stream_ms > 0) {
        auto cap = plan_.stream.started + std::chrono::milliseconds(route_.max_stream_ms);
        if (cap < limit.until) {
            limit.until = cap;
            limit.capped = true;
        }
    }
    return limit;
}

RelayStep TurnRun::relay_read(bool done, Fault fault, Failed& failed, metrics::UsageTally& usage) {
    sse::Reader& reader = plan_.stream.reader;
    // The credential scan's raw channel over the whole read in one call;
    // relay_events tells it each event's size (StreamScan::feed_read).
    if (plan_.stream.secrets) plan_.stream.secrets->feed_read(plan_.stream.piece);
    if (!plan_.stream.piece.empty()) reader.feed(plan_.stream.piece);
    if (done || fault != Fault::none) reader.finish();
    return relay_events(fault != Fault::none, failed, usage);
}

// The events of one upstream read (or their rest, after publication).
// Section 8's answer-text scan is batched: each data line's answer text is
// noted as it is met and the read's notes are settled in one Vectorscan call
// per answer text, before anything the events decided takes effect (every
// return of the loop below, publish included). A secret found to end in
// line k refuses exactly as when each line was scanned as it came: the
// client gets the events before k's and nothing from it on (the buffers go
// back to their sizes at its start), and only the usage of the lines before
// k counts.
RelayStep TurnRun::relay_events(bool at_fault, Failed& failed, metrics::UsageTally& usage) {
    StreamRelay& r = plan_.stream;
    sse::Inspector& inspector = worker_.inspector();
    const auto credential_refusal = [&] {
        failed = refusal("credential", "credential_in_response", "the upstream stream carried credential material",
                         policy::ErrorClass::credential);
        return refuse_in_stream(failed);
    };
    // A data line's answer text, for the settle below.
    const auto note = [&](const sse::DataInfo& info) {
        if (r.secrets) r.secrets->note_answer_text(r.batch.line(r.out.size(), r.held.size()), info.answer_fragments);
    };
    // A data line holding an escape, scanned decoded before it is read
    // (section 8: its strings as decoded text); a memchr for any other.
    const auto decoded_leak = [&](std::string_view data) {
        return r.secrets && r.secrets->check_decoded_line(data) == sse::CredentialVerdict::credential_in_response;
    };
    r.batch.clear();
    const RelayStep step = [&]() -> RelayStep {
        while (const sse::Event* event = r.reader.next()) {
            const bool counts = sse::event_counts(*event, at_fault);
            // The raw bytes were scanned per read in relay_read; a match is
            // charged to the counted event it ends in.
            if (r.secrets && r.secrets->event_passed(event->raw.size(), counts) ==
                                 sse::CredentialVerdict::credential_in_response)
                return credential_refusal();
            if (!counts) continue;
            if (r.saw_done) {
                // Read for section 8 (credentials, identity), never forwarded.
                sse::IdentityVerdict verdict = sse::IdentityVerdict::ok;
                for (std::size_t i = 0; (r.secrets || r.identity) && i < event->data.size(); ++i) {
                    if (decoded_leak(event->data[i])) return credential_refusal();
                    const sse::DataInfo& info = inspector.inspect(*event, i, plan_.endpoint, r.memo);
                    note(info);
                    if (r.identity && !sse::refused(verdict)) verdict = r.identity->on_line(info);
                }
                if (sse::refused(verdict)) {
                    failed = identity_refusal(verdict, r.identity->foreign_model());
                    return refuse_in_stream(failed);
                }
                continue;
            }
            bool answer = false, event_error = false, done_here = false;
            policy::ProviderError declared;
            std::optional<std::uint64_t> sequence;
            for (std::size_t i = 0; i < event->data.size(); ++i) {
                if (decoded_leak(event->data[i])) return credential_refusal();
                if (plan_.endpoint == policy::Endpoint::responses) {
                    if (const auto n = sse::sequence_number(event->data[i])) sequence = n;
                }
                const sse::DataInfo& info = inspector.inspect(*event, i, plan_.endpoint, r.memo);
                note(info);
                r.batch.see(info.usage);
                if (r.identity) {
                    if (const auto verdict = r.identity->on_line(info); sse::refused(verdict)) {
                        failed = identity_refusal(verdict, r.identity->foreign_model());
                        return refuse_in_stream(failed);
                    }
                }
                if (info.kind == sse::DataKind::done) {
                    done_here = true;
                    continue;
                }
                if (info.kind == sse::DataKind::unparseable && r.rules) {
                    // SPEC section 7: every data line must parse on its own.
                    policy::Classification c{policy::ErrorClass::identity, false, policy::TimeoutSource::none,
                                             "unparseable-event"};
                    if (answering_)
                        return close_with(c, "unparseable_event", false, "refused",
                                          "the upstream stream carried a data line that is not JSON");
                    failed.classification = c;
                    failed.code = "unparseable_event";
                    failed.message = "the upstream stream carried a data line that is not JSON";
                    failed.refusal = true;
                    return RelayStep::fail;
                }
                r.saw_event = true;
                if (info.structured_error) {
                    event_error = true;
                    declared = info.error;
                }
                if (info.answer_text) answer = true;
                if (info.end_marker) r.saw_end = true;
                if (info.finish_reason) r.saw_finish = true;
            }
            if (!event->data.empty()) r.saw_event = true;
            if (sequence) r.last_sequence = sequence;

            if (answering_) {
                // Forwarded as it is; an error event ends the client stream.
                if (r.reader.in_input(event->raw)) {
                    r.out.add_view(event->raw);
                } else {
                    r.out.add_copy(event->raw);
                }
                if (event_error)
                    return close_with(policy::classify_error_event(declared, plan_.endpoint), "upstream_error_event",
                                      true);
                if (done_here) r.saw_done = true;
                continue;
            }
            if (event_error && !r.error_event) r.error_event = declared;
            r.held.append(event->raw);
            if (static_cast<std::int64_t>(r.held.size()) > limits_.max_response_body_bytes) {
                failed.classification = {policy::ErrorClass::network, false, policy::TimeoutSource::none,
                                         "response-too-large"};
                failed.code = "response_too_large";
                failed.message = "the upstream stream held more than max_response_body_bytes before answer text";
                failed.refusal = true;
                return RelayStep::fail;
            }
            if (done_here) r.saw_done = true;
            // The first answer text: publish the head and everything held.
            if (answer && !r.error_event) return RelayStep::publish;
        }
        // SPEC section 8: a line (or event) past its limit stopped the
        // reader before it was buffered to its end.
        if (const auto overflow = r.reader.overflow(); overflow != sse::Reader::Overflow::none) {
            failed = refusal("response-too-large", "response_too_large",
                             overflow == sse::Reader::Overflow::line
                                 ? "an upstream stream line is longer than max_event_bytes"
                                 : "an upstream stream event is longer than max_response_body_bytes",
                             policy::ErrorClass::network);
            return refuse_in_stream(failed);
        }
        return RelayStep::read_on;
    }();
    const std::optional<std::uint32_t> leak = r.secrets ? r.secrets->settle() : std::nullopt;
    if (!leak) {
        usage.see(r.batch.usage());
        return step;
    }
    const sse::RelayBatch::Mark& at = r.batch.at(*leak);
    r.out.cut_to(at.out);
    r.held.resize(at.held);
    usage.see(at.usage);
    return credential_refusal();
}

RelayStep TurnRun::relay_end(Fault fault, bool done, bool capped, Failed& failed) {
    StreamRelay& r = plan_.stream;
    if (fault != Fault::none) {
        if (answering_) {
            auto c = capped ? policy::Classification{policy::ErrorClass::stream_incomplete, false,
                                                     policy::TimeoutSource::none, "max-stream-ms"}
                            : policy::classify(transport_of(fault), plan_.endpoint);
            return close_with(c, "stream_incomplete", false);
        }
        if (r.error_event) return error_event_ends(failed);
        failed = transport_failure(fault);
        return RelayStep::fail;
    }
    if (!done) return RelayStep::read_on;

    // The upstream stream ended cleanly.
    if (r.identity) {
        if (const auto verdict = r.identity->finish(); sse::refused(verdict)) {
            failed = identity_refusal(verdict, r.identity->foreign_model());
            return refuse_in_stream(failed);
        }
    }
    if (r.secrets && r.secrets->finish() == sse::CredentialVerdict::credential_in_response) {
        failed = refusal("credential", "credential_in_response", "the upstream stream carried credential material",
                         policy::ErrorClass::credential);
        return refuse_in_stream(failed);
    }
    const bool complete = sse::stream_complete(plan_.endpoint, r.rules, {r.saw_done, r.saw_end, r.saw_finish});
    if (answering_) {
        if (complete) return RelayStep::complete;
        return close_with(policy::classify_stream_incomplete(plan_.endpoint), "stream_incomplete", false);
    }
    if (!r.saw_event && !r.error_event) {
        // SPEC section 8: a 200 stream with no event at all is refused.
        failed.classification = {policy::ErrorClass::identity, false, policy::TimeoutSource::none, "empty-stream"};
        failed.code = "empty_stream";
        failed.message = "the upstream answered 200 with a stream that carried no event";
        failed.refusal = true;
        return RelayStep::fail;
    }
    // A complete stream with no answer text (e.g. an empty reply): a success.
    if (!r.error_event && complete) return RelayStep::complete;
    if (!r.error_event) {
        failed.classification = policy::classify_stream_incomplete(plan_.endpoint);
        failed.code = "stream_incomplete";
        failed.message = "the upstream stream ended before its end marker";
        return RelayStep::fail;
    }
    return error_event_ends(failed);
}

// A structured error event before any answer text: classified by section 7;
// a retryable one is replayed, a terminal one (or the last) is passed on as
// the 200 stream holding it.
RelayStep TurnRun::error_event_ends(Failed& failed) {
    StreamRelay& r = plan_.stream;
    failed.classification = policy::classify_error_event(*r.error_event, plan_.endpoint);
    failed.code = "upstream_error_event";
    failed.held_stream = std::move(r.held);
    return RelayStep::held_error;
}

// A section 8 refusal inside the stream, already in `failed`: before
// publication a 502 with its code; after it, the refused event is not
// forwarded and the stream ends with the closing error event.
RelayStep TurnRun::refuse_in_stream(const Failed& failed) {
    if (answering_) return close_with(failed.classification, failed.code, false, "refused", failed.message);
    return RelayStep::fail;
}

RelayStep TurnRun::close_with(const policy::Classification& c, std::string_view code, bool forwarded_error,
                              std::string_view outcome, std::string_view message) {
    plan_.stream.close = StreamRelay::Close{c, code, forwarded_error, outcome, message};
    return RelayStep::close;
}

}  // namespace modelproxy::proxy
