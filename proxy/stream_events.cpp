// The work of one upstream read of a stream attempt (docs/behaviour.md
// sections 7 and 8): its events are read, their lines inspected and scanned,
// and each event, then the read's end, is judged by the stream rules
// (sse/stream_rules.hpp); these functions gather the facts and do what the
// rules say. No coroutine: stream_attempt (stream_relay.cpp) waits.
#include "proxy/stream_relay.hpp"

#include "policy/classify.hpp"
#include "proxy/turn_run.hpp"
#include "sse/end_rule.hpp"
#include "sse/inspect.hpp"
#include "sse/sequence_number.hpp"

namespace modelproxy::proxy {

using transport::Fault;
using K = policy::FailureKind;

RelayStep TurnRun::relay_read(bool done, Fault fault, Failed& failed, metrics::UsageTally& usage) {
    sse::Reader& reader = plan_.stream.reader;
    // The credential scan's raw channel over the whole read in one call;
    // relay_events tells it each event's size (StreamScan::feed_read).
    if (plan_.stream.secrets) plan_.stream.secrets->feed_read(plan_.stream.piece);
    if (!plan_.stream.piece.empty()) reader.feed(plan_.stream.piece);
    if (done || fault != Fault::none) reader.finish();
    return relay_events(fault != Fault::none, failed, usage);
}

// One event's data lines, in order, up to the first that refuses it: what
// the stream rules judge. `verdict` is the identity check's refusal, when it
// refused; `declared` the structured error event's error.
sse::EventFacts TurnRun::event_facts(const sse::StreamFacts& stream, const sse::Event& event,
                                     sse::IdentityVerdict& verdict, bool& done, policy::ProviderError& declared) {
    StreamRelay& r = plan_.stream;
    sse::Inspector& inspector = worker_.inspector();
    sse::EventFacts facts;
    std::optional<std::uint64_t> sequence;  // /responses: the event's sequence_number
    for (std::size_t i = 0; i < event.data.size(); ++i) {
        // A line holding an escape is scanned decoded before it is read
        // (its strings as decoded text); a memchr for any other.
        if (r.secrets &&
            r.secrets->check_decoded_line(event.data[i]) == sse::CredentialVerdict::credential_in_response) {
            facts.refusal = sse::LineRefusal::credential;
            break;
        }
        if (stream.after_done && !r.identity && !r.secrets) break;  // nothing left to check
        if (plan_.endpoint == policy::Endpoint::responses && !stream.after_done) {
            if (const auto n = sse::sequence_number(event.data[i])) sequence = n;
        }
        const sse::DataInfo& info = inspector.inspect(event, i, plan_.endpoint, r.memo);
        // The line's answer text, for the read's credential settle.
        if (r.secrets) r.secrets->note_answer_text(r.batch.line(r.out.size(), r.held.size()), info.answer_fragments);
        if (stream.after_done) {
            // Read for the identity and credential checks only: its usage
            // never counts, and a credential in a later line wins.
            if (r.identity && facts.refusal == sse::LineRefusal::none &&
                sse::refused(verdict = r.identity->on_line(info)))
                facts.refusal = sse::LineRefusal::identity;
            continue;
        }
        r.batch.see(info.usage);
        if (r.identity && sse::refused(verdict = r.identity->on_line(info))) {
            facts.refusal = sse::LineRefusal::identity;
            break;
        }
        if (info.kind == sse::DataKind::done) {
            done = true;
            continue;
        }
        if (info.kind == sse::DataKind::unparseable && sse::refuses(stream, sse::LineRefusal::unparseable)) {
            facts.refusal = sse::LineRefusal::unparseable;
            break;
        }
        r.saw_event = true;
        if (info.structured_error) {
            facts.error_event = true;
            declared = info.error;
        }
        if (info.answer_text) facts.answer_text = true;
        if (info.end_marker) r.saw_end = true;
        if (info.finish_reason) r.saw_finish = true;
    }
    if (facts.refusal == sse::LineRefusal::none && !stream.after_done) {
        if (!event.data.empty()) r.saw_event = true;
        if (sequence) r.last_sequence = sequence;
    }
    return facts;
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
    r.batch.clear();
    // Forwarded as it is: a view of the read where it can be.
    const auto forward_as_is = [&r](const sse::Event& event) {
        if (r.reader.in_input(event.raw)) {
            r.out.add_view(event.raw);
        } else {
            r.out.add_copy(event.raw);
        }
    };
    const RelayStep step = [&]() -> RelayStep {
        while (const sse::Event* event = r.reader.next()) {
            const bool counts = sse::event_counts(*event, at_fault);
            // The raw bytes were scanned per read in relay_read; a match is
            // charged to the counted event it ends in.
            if (r.secrets && r.secrets->event_passed(event->raw.size(), counts) ==
                                 sse::CredentialVerdict::credential_in_response)
                return refuse_in_stream(failed, K::credential_in_stream);
            if (!counts) continue;
            sse::IdentityVerdict verdict = sse::IdentityVerdict::ok;
            bool done = false;
            policy::ProviderError declared;
            const sse::StreamFacts stream = stream_facts();
            sse::EventFacts facts = event_facts(stream, *event, verdict, done, declared);
            facts.held_bytes = r.held.size() + event->raw.size();
            const sse::EventAction action = sse::event_rule(stream, facts);
            switch (action.step) {
                case sse::EventStep::skip:
                    continue;
                case sse::EventStep::fail:
                case sse::EventStep::close:
                    return refuse_in_stream(failed, action.failure, verdict);
                case sse::EventStep::forward:
                case sse::EventStep::forward_and_end:
                    if (action.step == sse::EventStep::forward_and_end) {
                        const policy::Classification c = policy::classify_error_event(declared, plan_.endpoint);
                        // Section 16: before a resume's seam, the error event
                        // is a break there; a server-class one after
                        // publication is held back while a resume may
                        // continue the stream.
                        if (catching_up()) return abandon_resume(metrics::ResumeResult::broken);
                        if (r.resume && r.resume->track && !r.resume->spent &&
                            (c.cls == policy::ErrorClass::server || c.cls == policy::ErrorClass::timeout)) {
                            r.resume->resumable = true;
                            r.resume->error_event.assign(event->raw);
                            return close_with(c, K::stream_cut);
                        }
                        // Forwarded as it is, and it ends the client stream.
                        forward_as_is(*event);
                        return close_with(c, action.failure);
                    }
                    if (r.resume && r.resume->seam) {
                        // A resume's attempt: nothing before the seam, the
                        // rest under the first stream's ids.
                        const RelayStep step = resume_event(*event);
                        if (step != RelayStep::read_on) return step;
                        if (done) r.saw_done = true;
                        continue;
                    }
                    forward_as_is(*event);
                    if (done) r.saw_done = true;
                    track_published(*event);
                    continue;
                case sse::EventStep::hold:
                case sse::EventStep::publish:
                    if (facts.error_event && !r.error_event) r.error_event = declared;
                    r.held.append(event->raw);
                    track_published(*event);
                    if (done) r.saw_done = true;
                    // The first answer text: publish the head and everything held.
                    if (action.step == sse::EventStep::publish) return RelayStep::publish;
                    continue;
            }
        }
        // docs/behaviour.md section 8: a line (or event) past its limit
        // stopped the reader before it was buffered to its end.
        if (const auto overflow = r.reader.overflow(); overflow != sse::Reader::Overflow::none)
            return refuse_in_stream(failed, overflow == sse::Reader::Overflow::line ? K::line_too_large
                                                                                    : K::event_too_large);
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
    return refuse_in_stream(failed, K::credential_in_stream);
}

RelayStep TurnRun::relay_end(Fault fault, bool done, bool capped, Failed& failed) {
    StreamRelay& r = plan_.stream;
    sse::EndFacts end;
    end.read = fault != Fault::none ? sse::ReadEnd::broke : done ? sse::ReadEnd::clean : sse::ReadEnd::more;
    if (end.read == sse::ReadEnd::more) return RelayStep::read_on;
    end.fault = transport_of(fault);
    end.capped = capped;
    end.saw_event = r.saw_event;
    sse::IdentityVerdict verdict = sse::IdentityVerdict::ok;
    if (end.read == sse::ReadEnd::clean) {
        // The checks that need the whole stream: a model named before answer
        // text, and a secret that completed in the last bytes.
        if (r.identity && sse::refused(verdict = r.identity->finish())) {
            end.refusal = sse::LineRefusal::identity;
        } else if (r.secrets && r.secrets->finish() == sse::CredentialVerdict::credential_in_response) {
            end.refusal = sse::LineRefusal::credential;
        }
        end.complete = sse::stream_complete(plan_.endpoint, r.rules, {r.saw_done, r.saw_end, r.saw_finish});
    }
    const sse::EndAction action = sse::end_rule(stream_facts(), end, plan_.endpoint);
    switch (action.step) {
        case sse::EndStep::read_on: return RelayStep::read_on;
        case sse::EndStep::complete: return RelayStep::complete;
        case sse::EndStep::held_error: return error_event_ends(failed);
        case sse::EndStep::fail_read:
            failed = transport_failure(fault);
            return RelayStep::fail;
        case sse::EndStep::close:
        case sse::EndStep::fail:
            break;
    }
    if (policy::row(action.failure).refusal) return refuse_in_stream(failed, action.failure, verdict);
    // A stream cut after publication, or ended early before it. A resume
    // (section 16) may continue a cut, not one max_stream_ms ended.
    if (action.step == sse::EndStep::close) {
        if (r.resume) r.resume->resumable = action.failure == K::stream_cut && !capped;
        return close_with(action.classification, action.failure);
    }
    failed = failure(action.failure, action.classification);
    return RelayStep::fail;
}

// A structured error event before any answer text: classified by section 7;
// a retryable one is replayed, a terminal one (or the last) is passed on as
// the 200 stream holding it.
RelayStep TurnRun::error_event_ends(Failed& failed) {
    StreamRelay& r = plan_.stream;
    failed = failure(K::upstream_error_event, policy::classify_error_event(*r.error_event, plan_.endpoint));
    failed.error = *r.error_event;
    failed.held_stream = std::move(r.held);
    return RelayStep::held_error;
}

RelayStep TurnRun::refuse_in_stream(Failed& failed, K kind, sse::IdentityVerdict verdict) {
    StreamRelay& r = plan_.stream;
    failed = kind == K::model_identity_mismatch ? identity_refusal(verdict, r.identity->foreign_model())
                                                : failure(kind);
    if (phase_ == Phase::answering) return close_with(failed.classification, kind, failed.detail);
    return RelayStep::fail;
}

RelayStep TurnRun::close_with(const policy::Classification& c, K kind, std::string_view detail) {
    plan_.stream.close = StreamRelay::Close{c, kind, detail};
    return RelayStep::close;
}

}  // namespace modelproxy::proxy
