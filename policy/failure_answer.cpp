#include "policy/failure_answer.hpp"

namespace modelproxy::policy {

namespace {

constexpr Classification fixed(ErrorClass cls, std::string_view rule) {
    return {cls, false, TimeoutSource::none, rule};
}

constexpr FailureRow observed(std::string_view code, std::string_view message) { return {code, message, false, {}}; }

constexpr FailureRow refusal(std::string_view code, std::string_view message, Classification c) {
    return {code, message, true, c};
}

constexpr Classification too_large = fixed(ErrorClass::network, "response-too-large");

}  // namespace

const FailureRow& row(FailureKind kind) {
    using K = FailureKind;
    static constexpr FailureRow connect_failed = observed("connect_failed", "the upstream could not be reached");
    static constexpr FailureRow dns_failed = observed("dns_failed", "the upstream host name does not resolve");
    static constexpr FailureRow tls = observed("tls_verification_failed",
                                               "the upstream's TLS certificate could not be verified");
    static constexpr FailureRow dropped =
        observed("connection_dropped", "the upstream dropped the connection before its answer was complete");
    static constexpr FailureRow deadline =
        observed("deadline", "the upstream did not answer before the turn deadline");
    static constexpr FailureRow encoding{
        "unsupported_encoding", "the upstream answered with a content coding other than identity, gzip or deflate",
        false, fixed(ErrorClass::network, "unsupported-encoding")};
    static constexpr FailureRow redirect =
        observed("upstream_redirect", "the upstream answered with a redirect, which is never followed");
    static constexpr FailureRow ended_early =
        observed("stream_incomplete", "the upstream stream ended before its end marker");
    static constexpr FailureRow upstream_answer = observed("", "");
    static constexpr FailureRow key_echoed =
        observed("credential_in_response", "the upstream answer carried credential material");
    static constexpr FailureRow error_event = observed("upstream_error_event", "");
    static constexpr FailureRow cut = observed("stream_incomplete", "the upstream stream broke before its end");
    static constexpr FailureRow not_a_stream =
        refusal("not_a_stream", "the client asked for a stream and the upstream answered 200 without one",
                fixed(ErrorClass::identity, "not-a-stream"));
    static constexpr FailureRow not_a_stream_after_hold = refusal(
        "not_a_stream", "the upstream answered 200 without a stream", fixed(ErrorClass::identity, "not-a-stream"));
    static constexpr FailureRow credential_in_body =
        refusal("credential_in_response", "the upstream answer carried credential material",
                fixed(ErrorClass::credential, "credential"));
    static constexpr FailureRow credential_in_stream =
        refusal("credential_in_response", "the upstream stream carried credential material",
                fixed(ErrorClass::credential, "credential"));
    static constexpr FailureRow identity =
        refusal("model_identity_mismatch", "", fixed(ErrorClass::identity, "model-identity"));
    static constexpr FailureRow unparseable =
        refusal("unparseable_event", "the upstream stream carried a data line that is not JSON",
                fixed(ErrorClass::identity, "unparseable-event"));
    static constexpr FailureRow empty =
        refusal("empty_stream", "the upstream answered 200 with a stream that carried no event",
                fixed(ErrorClass::identity, "empty-stream"));
    static constexpr FailureRow body_too_large =
        refusal("response_too_large", "the upstream answer is larger than max_response_body_bytes", too_large);
    static constexpr FailureRow held_too_large = refusal(
        "response_too_large", "the upstream stream held more than max_response_body_bytes before answer text",
        too_large);
    static constexpr FailureRow line_too_large =
        refusal("response_too_large", "an upstream stream line is longer than max_event_bytes", too_large);
    static constexpr FailureRow event_too_large = refusal(
        "response_too_large", "an upstream stream event is longer than max_response_body_bytes", too_large);
    static constexpr FailureRow digest{"replay_digest_mismatch",
                                       "the replay's payload differs from the first attempt's; it was not sent",
                                       false, fixed(ErrorClass::client, "digest-mismatch")};
    static constexpr FailureRow drain{"drain_limit", "the proxy is shutting down and its drain limit passed", false,
                                      fixed(ErrorClass::cancelled, "drain-limit")};
    static constexpr FailureRow circuit{"circuit_open",
                                        "every candidate of this model is held back by its circuit breaker",
                                        false, fixed(ErrorClass::server, "circuit-open")};
    static constexpr FailureRow admission{"admission_timeout",
                                          "no capacity for this request upstream in time: the provider is "
                                          "rate limiting or overloaded",
                                          false, fixed(ErrorClass::rate_limit, "admission-timeout")};
    static constexpr FailureRow quota{"quota_timeout",
                                      "the route's quota (requests or tokens per minute) has no room for this "
                                      "request in time",
                                      false, fixed(ErrorClass::rate_limit, "quota-timeout")};
    switch (kind) {
        case K::connect_failed: return connect_failed;
        case K::dns_failed: return dns_failed;
        case K::tls_verification_failed: return tls;
        case K::connection_dropped: return dropped;
        case K::deadline: return deadline;
        case K::unsupported_encoding: return encoding;
        case K::upstream_redirect: return redirect;
        case K::stream_ended_early: return ended_early;
        case K::upstream_answer: return upstream_answer;
        case K::key_echoed: return key_echoed;
        case K::upstream_error_event: return error_event;
        case K::stream_cut: return cut;
        case K::not_a_stream: return not_a_stream;
        case K::not_a_stream_after_hold: return not_a_stream_after_hold;
        case K::credential_in_body: return credential_in_body;
        case K::credential_in_stream: return credential_in_stream;
        case K::model_identity_mismatch: return identity;
        case K::unparseable_event: return unparseable;
        case K::empty_stream: return empty;
        case K::body_too_large: return body_too_large;
        case K::held_too_large: return held_too_large;
        case K::line_too_large: return line_too_large;
        case K::event_too_large: return event_too_large;
        case K::replay_digest_mismatch: return digest;
        case K::drain_limit: return drain;
        case K::circuit_open: return circuit;
        case K::admission_timeout: return admission;
        case K::quota_timeout: return quota;
    }
    return dropped;
}

FailureAnswer failure_answer(const FailureFacts& facts) {
    const FailureRow& r = row(facts.kind);
    FailureAnswer a;
    a.code = r.code;
    a.message = r.message.empty() ? facts.message : r.message;
    // After publication nothing is decided: the stream ends, terminal.
    const bool published = facts.client == ClientHas::answer_text;
    const Verdict verdict = published || r.refusal ? Verdict::terminal : facts.verdict;
    a.decision = to_string(verdict);
    a.bound = published || r.refusal || facts.bound == Bound::none ? std::string_view() : to_string(facts.bound);
    a.record_decision = a.decision;
    a.outcome = r.refusal ? "refused" : a.decision;
    if (facts.kind == FailureKind::drain_limit) a.record_decision = a.outcome = "cancelled";
    if (facts.kind == FailureKind::circuit_open) a.decision = a.record_decision = a.outcome = "unavailable";
    if (facts.kind == FailureKind::admission_timeout || facts.kind == FailureKind::quota_timeout)
        a.decision = a.record_decision = a.outcome = "rejected";
    // A deadline that ended the turn is a timeout to the client, whatever the
    // last attempt's class, unless the upstream's answer is passed on
    // (section 6: 504, decision and bound deadline).
    a.cls = verdict == Verdict::deadline && facts.upstream_status == 0 ? ErrorClass::timeout : facts.cls;

    if (facts.kind == FailureKind::upstream_error_event && facts.client != ClientHas::nothing) {
        // Held until now and passed on inside the stream, or already forwarded
        // (after answer text), where it ended the stream.
        a.form = published ? AnswerForm::stream_end : AnswerForm::held_stream;
        a.status = 200;
        a.record_status = 200;
        return a;
    }
    if (facts.client != ClientHas::nothing) {
        // A 200 stream head is out: the turn ends inside it, with the closing
        // error event (section 7), never a second head.
        a.form = AnswerForm::closing_event;
        const bool own_type = r.refusal || facts.kind == FailureKind::stream_cut ||
                              facts.kind == FailureKind::drain_limit || a.cls == ErrorClass::stream_incomplete;
        a.type = r.refusal ? r.code : own_type ? std::string_view("stream_incomplete") : to_string(a.cls);
        a.status = own_type                   ? 502
                   : facts.upstream_status    ? facts.upstream_status
                   : a.cls == ErrorClass::timeout ? 504
                                                  : 502;
        if (a.message.empty()) a.message = "the upstream failed";
        a.record_status = 200;
        return a;
    }
    if (facts.kind == FailureKind::upstream_error_event) {
        a.form = AnswerForm::held_stream;
        a.status = 200;
        a.record_status = 200;
        return a;
    }
    if (facts.kind == FailureKind::upstream_answer) {
        a.form = AnswerForm::upstream_answer;
        a.status = facts.upstream_status;
        a.record_status = facts.upstream_status;
        return a;
    }
    // No upstream answer to pass on: the envelope. An upstream answer that
    // echoed a key keeps its status, none of its headers or body (section 8).
    a.form = AnswerForm::envelope;
    a.type = modelproxy_error;
    a.status = facts.kind == FailureKind::key_echoed              ? facts.upstream_status
               : facts.kind == FailureKind::replay_digest_mismatch ? 500
               : facts.kind == FailureKind::drain_limit            ? 503
               : facts.kind == FailureKind::circuit_open           ? 503
               : facts.kind == FailureKind::admission_timeout      ? 429
               : facts.kind == FailureKind::quota_timeout          ? 429
               : a.cls == ErrorClass::timeout                      ? 504
                                                                   : 502;
    a.record_status = a.status;
    return a;
}

}  // namespace modelproxy::policy
