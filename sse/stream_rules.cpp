#include "sse/stream_rules.hpp"

namespace modelproxy::sse {

using policy::FailureKind;

namespace {

FailureKind refusal_kind(LineRefusal refusal) {
    switch (refusal) {
        case LineRefusal::credential: return FailureKind::credential_in_stream;
        case LineRefusal::identity: return FailureKind::model_identity_mismatch;
        case LineRefusal::unparseable: return FailureKind::unparseable_event;
        case LineRefusal::none: break;
    }
    return FailureKind::unparseable_event;
}

EndAction end_with(EndStep step, FailureKind failure = FailureKind::stream_cut,
                   const policy::Classification& c = {}) {
    return {step, failure, c};
}

}  // namespace

bool refuses(const StreamFacts& stream, LineRefusal refusal) {
    switch (refusal) {
        case LineRefusal::none: return false;
        case LineRefusal::credential:
        case LineRefusal::identity: return true;
        // Section 7's parse rule is a stream rule (not the generic dialect's),
        // and what follows [DONE] is read for section 8 only.
        case LineRefusal::unparseable: return stream.rules && !stream.after_done;
    }
    return false;
}

EventAction event_rule(const StreamFacts& stream, const EventFacts& event) {
    // Section 8: a refused event is never forwarded. Before publication the
    // attempt fails (502 with its code, never replayed); after it the client
    // stream ends with the closing error event.
    if (refuses(stream, event.refusal)) {
        return {stream.published ? EventStep::close : EventStep::fail, refusal_kind(event.refusal)};
    }
    if (stream.after_done) return {EventStep::skip};
    if (stream.published) {
        // Forwarded as it is; an upstream error event ends the client stream.
        if (event.error_event) return {EventStep::forward_and_end, FailureKind::upstream_error_event};
        return {EventStep::forward};
    }
    // Held bytes count against max_response_body_bytes.
    if (event.held_bytes > stream.max_held_bytes) return {EventStep::fail, FailureKind::held_too_large};
    // The first answer text publishes, unless an error event came first: that
    // stream ends as an error stream (section 7).
    if (event.answer_text && !stream.error_held && !event.error_event) return {EventStep::publish};
    return {EventStep::hold};
}

EndAction end_rule(const StreamFacts& stream, const EndFacts& end, policy::Endpoint endpoint) {
    if (end.read == ReadEnd::more) return end_with(EndStep::read_on);
    if (end.read == ReadEnd::broke) {
        if (stream.published) {
            // Any break after publication: the closing error event, code
            // stream_incomplete; max_stream_ms is not a provider fault.
            const policy::Classification c =
                end.capped ? policy::Classification{policy::ErrorClass::stream_incomplete, false,
                                                    policy::TimeoutSource::none, "max-stream-ms"}
                           : policy::classify_transport(end.fault, endpoint);
            return end_with(EndStep::close, FailureKind::stream_cut, c);
        }
        // Before publication a held error event decides, else the fault does.
        if (stream.error_held) return end_with(EndStep::held_error, FailureKind::upstream_error_event);
        return end_with(EndStep::fail_read, FailureKind::connection_dropped);
    }
    // The upstream stream ended cleanly.
    if (end.refusal == LineRefusal::identity || end.refusal == LineRefusal::credential) {
        return end_with(stream.published ? EndStep::close : EndStep::fail, refusal_kind(end.refusal));
    }
    if (stream.published) {
        if (end.complete) return end_with(EndStep::complete);
        return end_with(EndStep::close, FailureKind::stream_cut, policy::classify_stream_incomplete(endpoint));
    }
    if (stream.error_held) return end_with(EndStep::held_error, FailureKind::upstream_error_event);
    // Section 8: a 200 stream with no event at all is refused.
    if (!end.saw_event) return end_with(EndStep::fail, FailureKind::empty_stream);
    // A complete stream with no answer text (an empty reply) is a success.
    if (end.complete) return end_with(EndStep::complete);
    return end_with(EndStep::fail, FailureKind::stream_ended_early, policy::classify_stream_incomplete(endpoint));
}

}  // namespace modelproxy::sse
