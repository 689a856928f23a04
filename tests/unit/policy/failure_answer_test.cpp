#include "policy/failure_answer.hpp"

#include "policy/error_shape.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>

using namespace modelproxy::policy;

namespace {

using K = FailureKind;
using F = AnswerForm;
using C = ErrorClass;
using V = Verdict;
using B = Bound;
using H = ClientHas;

// One expected answer, as the client and the records see it.
struct Seen {
    F form;
    int status;
    std::string type;
    std::string code;
    std::string message;
    C cls;
    std::string decision;
    std::string bound;
    std::string outcome;
    std::optional<int> record_status;
    std::string record_decision = "";  // "" -> the same as `decision`
};

struct Row {
    FailureFacts facts;
    Seen seen;
};

FailureFacts facts(K kind, C cls, V verdict = V::terminal, B bound = B::none, H client = H::nothing,
                   int upstream_status = 0) {
    FailureFacts f;
    f.kind = kind;
    f.cls = cls;
    f.verdict = verdict;
    f.bound = bound;
    f.client = client;
    f.upstream_status = upstream_status;
    return f;
}

void check(const Row& row) {
    const FailureAnswer a = failure_answer(row.facts);
    const Seen& s = row.seen;
    CHECK(a.form == s.form);
    CHECK(a.status == s.status);
    CHECK(std::string(a.type) == s.type);
    CHECK(std::string(a.code) == s.code);
    CHECK(std::string(a.message) == s.message);
    CHECK(to_string(a.cls) == to_string(s.cls));
    CHECK(std::string(a.decision) == s.decision);
    CHECK(std::string(a.bound) == s.bound);
    CHECK(std::string(a.outcome) == s.outcome);
    CHECK(a.record_status == s.record_status);
    CHECK(std::string(a.record_decision) == (s.record_decision.empty() ? s.decision : s.record_decision));
}

}  // namespace

// Section 9: no upstream answer to pass on. The envelope's status, type,
// code and message, as tests/integration/ assert them through the binary.
TEST_CASE("failure_answer: the envelope of each failure with nothing sent to the client", "[failure-answer]") {
    const Row row = GENERATE(values<Row>({
        {facts(K::connect_failed, C::network, V::exhausted, B::max_attempts),
         {F::envelope, 502, "modelproxy_error", "connect_failed", "the upstream could not be reached", C::network,
          "exhausted", "max_attempts", "exhausted", 502}},
        {facts(K::dns_failed, C::network),
         {F::envelope, 502, "modelproxy_error", "dns_failed", "the upstream host name does not resolve", C::network,
          "terminal", "", "terminal", 502}},
        {facts(K::tls_verification_failed, C::network),
         {F::envelope, 502, "modelproxy_error", "tls_verification_failed",
          "the upstream's TLS certificate could not be verified", C::network, "terminal", "", "terminal", 502}},
        {facts(K::connection_dropped, C::network, V::exhausted, B::max_total_delay_ms),
         {F::envelope, 502, "modelproxy_error", "connection_dropped",
          "the upstream dropped the connection before its answer was complete", C::network, "exhausted",
          "max_total_delay_ms", "exhausted", 502}},
        // The deadline: 504, class timeout, decision and bound deadline.
        {facts(K::deadline, C::timeout, V::deadline, B::deadline),
         {F::envelope, 504, "modelproxy_error", "deadline", "the upstream did not answer before the turn deadline",
          C::timeout, "deadline", "deadline", "deadline", 504}},
        // A deadline that ended the turn after a network failure is a timeout to the client.
        {facts(K::connection_dropped, C::network, V::deadline, B::deadline),
         {F::envelope, 504, "modelproxy_error", "connection_dropped",
          "the upstream dropped the connection before its answer was complete", C::timeout, "deadline", "deadline",
          "deadline", 504}},
        {facts(K::unsupported_encoding, C::network),
         {F::envelope, 502, "modelproxy_error", "unsupported_encoding",
          "the upstream answered with a content coding other than identity, gzip or deflate", C::network, "terminal",
          "", "terminal", 502}},
        {facts(K::upstream_redirect, C::network),
         {F::envelope, 502, "modelproxy_error", "upstream_redirect",
          "the upstream answered with a redirect, which is never followed", C::network, "terminal", "", "terminal",
          502}},
        {facts(K::stream_ended_early, C::stream_incomplete, V::exhausted, B::max_attempts),
         {F::envelope, 502, "modelproxy_error", "stream_incomplete", "the upstream stream ended before its end marker",
          C::stream_incomplete, "exhausted", "max_attempts", "exhausted", 502}},
        // An upstream answer that echoed a key: its status, the proxy's envelope.
        {facts(K::key_echoed, C::authentication, V::terminal, B::none, H::nothing, 401),
         {F::envelope, 401, "modelproxy_error", "credential_in_response",
          "the upstream answer carried credential material", C::authentication, "terminal", "", "terminal", 401}},
        // Section 8 refusals: 502 with their code, outcome refused, decision terminal.
        {facts(K::not_a_stream, C::identity),
         {F::envelope, 502, "modelproxy_error", "not_a_stream",
          "the client asked for a stream and the upstream answered 200 without one", C::identity, "terminal", "",
          "refused", 502}},
        {facts(K::credential_in_body, C::credential),
         {F::envelope, 502, "modelproxy_error", "credential_in_response",
          "the upstream answer carried credential material", C::credential, "terminal", "", "refused", 502}},
        {facts(K::credential_in_stream, C::credential),
         {F::envelope, 502, "modelproxy_error", "credential_in_response",
          "the upstream stream carried credential material", C::credential, "terminal", "", "refused", 502}},
        {facts(K::unparseable_event, C::identity),
         {F::envelope, 502, "modelproxy_error", "unparseable_event",
          "the upstream stream carried a data line that is not JSON", C::identity, "terminal", "", "refused", 502}},
        {facts(K::empty_stream, C::identity),
         {F::envelope, 502, "modelproxy_error", "empty_stream",
          "the upstream answered 200 with a stream that carried no event", C::identity, "terminal", "", "refused",
          502}},
        {facts(K::body_too_large, C::network),
         {F::envelope, 502, "modelproxy_error", "response_too_large",
          "the upstream answer is larger than max_response_body_bytes", C::network, "terminal", "", "refused", 502}},
        {facts(K::held_too_large, C::network),
         {F::envelope, 502, "modelproxy_error", "response_too_large",
          "the upstream stream held more than max_response_body_bytes before answer text", C::network, "terminal", "",
          "refused", 502}},
        {facts(K::line_too_large, C::network),
         {F::envelope, 502, "modelproxy_error", "response_too_large",
          "an upstream stream line is longer than max_event_bytes", C::network, "terminal", "", "refused", 502}},
        {facts(K::event_too_large, C::network),
         {F::envelope, 502, "modelproxy_error", "response_too_large",
          "an upstream stream event is longer than max_response_body_bytes", C::network, "terminal", "", "refused",
          502}},
        // The proxy's own.
        {facts(K::replay_digest_mismatch, C::client),
         {F::envelope, 500, "modelproxy_error", "replay_digest_mismatch",
          "the replay's payload differs from the first attempt's; it was not sent", C::client, "terminal", "",
          "terminal", 500}},
        {facts(K::drain_limit, C::cancelled),
         {F::envelope, 503, "modelproxy_error", "drain_limit", "the proxy is shutting down and its drain limit passed",
          C::cancelled, "terminal", "", "cancelled", 503, "cancelled"}},
        {facts(K::circuit_open, C::server),
         {F::envelope, 503, "modelproxy_error", "circuit_open",
          "every candidate of this model is held back by its circuit breaker", C::server, "unavailable", "",
          "unavailable", 503}},
        {facts(K::admission_timeout, C::rate_limit),
         {F::envelope, 429, "modelproxy_error", "admission_timeout",
          "no capacity for this request upstream in time: the provider is rate limiting or overloaded",
          C::rate_limit, "rejected", "", "rejected", 429}},
        {facts(K::quota_timeout, C::rate_limit),
         {F::envelope, 429, "modelproxy_error", "quota_timeout",
          "the route's quota (requests or tokens per minute) has no room for this request in time", C::rate_limit,
          "rejected", "", "rejected", 429}},
    }));
    CAPTURE(static_cast<int>(row.facts.kind));
    check(row);
}

TEST_CASE("failure_answer: a model_identity_mismatch shows the message it is given", "[failure-answer]") {
    auto f = facts(K::model_identity_mismatch, C::identity);
    f.message = "the upstream answered with model `x`; accepted: `m`";
    check({f,
           {F::envelope, 502, "modelproxy_error", "model_identity_mismatch", std::string(f.message), C::identity,
            "terminal", "", "refused", 502}});
    // A refusal is not decided on: terminal, no bound, whatever the caller passed.
    f.verdict = V::exhausted;
    f.bound = B::max_attempts;
    const FailureAnswer a = failure_answer(f);
    CHECK(a.decision == "terminal");
    CHECK(a.bound.empty());
}

TEST_CASE("failure_answer: an upstream answer is passed on with its status, an error stream as it is",
          "[failure-answer]") {
    check({facts(K::upstream_answer, C::server, V::exhausted, B::max_attempts, H::nothing, 503),
           {F::upstream_answer, 503, "", "", "", C::server, "exhausted", "max_attempts", "exhausted", 503}});
    check({facts(K::upstream_answer, C::invalid_request, V::terminal, B::none, H::nothing, 400),
           {F::upstream_answer, 400, "", "", "", C::invalid_request, "terminal", "", "terminal", 400}});
    // A 429 the deadline ended is still the upstream's answer, class rate-limit.
    check({facts(K::upstream_answer, C::rate_limit, V::deadline, B::deadline, H::nothing, 429),
           {F::upstream_answer, 429, "", "", "", C::rate_limit, "deadline", "deadline", "deadline", 429}});
    // Section 7: an error-only stream arrives as the 200 stream holding its event.
    check({facts(K::upstream_error_event, C::server, V::exhausted, B::max_attempts),
           {F::held_stream, 200, "", "upstream_error_event", "", C::server, "exhausted", "max_attempts", "exhausted",
            200}});
}

// Section 7: once the hold limit sent the head, the turn ends inside the
// stream with the closing error event: its type is the refusal code,
// stream_incomplete, or the last failure's class with its status.
TEST_CASE("failure_answer: after the hold limit's head, the closing error event", "[failure-answer]") {
    const Row row = GENERATE(values<Row>({
        {facts(K::upstream_answer, C::server, V::exhausted, B::max_attempts, H::head, 503),
         {F::closing_event, 503, "server", "", "the upstream failed", C::server, "exhausted", "max_attempts",
          "exhausted", 200}},
        {facts(K::upstream_answer, C::rate_limit, V::exhausted, B::throttled_max_attempts, H::head, 429),
         {F::closing_event, 429, "rate-limit", "", "the upstream failed", C::rate_limit, "exhausted",
          "throttled_max_attempts", "exhausted", 200}},
        {facts(K::deadline, C::timeout, V::deadline, B::deadline, H::head),
         {F::closing_event, 504, "timeout", "deadline", "the upstream did not answer before the turn deadline",
          C::timeout, "deadline", "deadline", "deadline", 200}},
        {facts(K::connection_dropped, C::network, V::exhausted, B::max_attempts, H::head),
         {F::closing_event, 502, "network", "connection_dropped",
          "the upstream dropped the connection before its answer was complete", C::network, "exhausted",
          "max_attempts", "exhausted", 200}},
        {facts(K::stream_ended_early, C::stream_incomplete, V::exhausted, B::max_attempts, H::head),
         {F::closing_event, 502, "stream_incomplete", "stream_incomplete",
          "the upstream stream ended before its end marker", C::stream_incomplete, "exhausted", "max_attempts",
          "exhausted", 200}},
        {facts(K::key_echoed, C::authentication, V::terminal, B::none, H::head, 401),
         {F::closing_event, 401, "authentication", "credential_in_response",
          "the upstream answer carried credential material", C::authentication, "terminal", "", "terminal", 200}},
        {facts(K::not_a_stream_after_hold, C::identity, V::terminal, B::none, H::head),
         {F::closing_event, 502, "not_a_stream", "not_a_stream", "the upstream answered 200 without a stream",
          C::identity, "terminal", "", "refused", 200}},
        {facts(K::unparseable_event, C::identity, V::terminal, B::none, H::head),
         {F::closing_event, 502, "unparseable_event", "unparseable_event",
          "the upstream stream carried a data line that is not JSON", C::identity, "terminal", "", "refused", 200}},
        {facts(K::held_too_large, C::network, V::terminal, B::none, H::head),
         {F::closing_event, 502, "response_too_large", "response_too_large",
          "the upstream stream held more than max_response_body_bytes before answer text", C::network, "terminal", "",
          "refused", 200}},
        {facts(K::upstream_error_event, C::server, V::exhausted, B::max_attempts, H::head),
         {F::held_stream, 200, "", "upstream_error_event", "", C::server, "exhausted", "max_attempts", "exhausted",
          200}},
        {facts(K::drain_limit, C::cancelled, V::terminal, B::none, H::head),
         {F::closing_event, 502, "stream_incomplete", "drain_limit",
          "the proxy is shutting down and its drain limit passed", C::cancelled, "terminal", "", "cancelled", 200,
          "cancelled"}},
    }));
    CAPTURE(static_cast<int>(row.facts.kind));
    check(row);
}

// Section 7: after answer text nothing is decided; a break or a refusal ends
// the stream with the closing error event (code 502, decision terminal), a
// forwarded upstream error event with nothing more.
TEST_CASE("failure_answer: after answer text, the closing error event", "[failure-answer]") {
    const Row row = GENERATE(values<Row>({
        {facts(K::stream_cut, C::network, V::terminal, B::none, H::answer_text),
         {F::closing_event, 502, "stream_incomplete", "stream_incomplete", "the upstream stream broke before its end",
          C::network, "terminal", "", "terminal", 200}},
        {facts(K::stream_cut, C::timeout, V::terminal, B::none, H::answer_text),
         {F::closing_event, 502, "stream_incomplete", "stream_incomplete", "the upstream stream broke before its end",
          C::timeout, "terminal", "", "terminal", 200}},
        {facts(K::stream_cut, C::stream_incomplete, V::terminal, B::none, H::answer_text),
         {F::closing_event, 502, "stream_incomplete", "stream_incomplete", "the upstream stream broke before its end",
          C::stream_incomplete, "terminal", "", "terminal", 200}},
        {facts(K::unparseable_event, C::identity, V::terminal, B::none, H::answer_text),
         {F::closing_event, 502, "unparseable_event", "unparseable_event",
          "the upstream stream carried a data line that is not JSON", C::identity, "terminal", "", "refused", 200}},
        {facts(K::credential_in_stream, C::credential, V::terminal, B::none, H::answer_text),
         {F::closing_event, 502, "credential_in_response", "credential_in_response",
          "the upstream stream carried credential material", C::credential, "terminal", "", "refused", 200}},
        {facts(K::line_too_large, C::network, V::terminal, B::none, H::answer_text),
         {F::closing_event, 502, "response_too_large", "response_too_large",
          "an upstream stream line is longer than max_event_bytes", C::network, "terminal", "", "refused", 200}},
        {facts(K::upstream_error_event, C::server, V::terminal, B::none, H::answer_text),
         {F::stream_end, 200, "", "upstream_error_event", "", C::server, "terminal", "", "terminal", 200}},
        {facts(K::drain_limit, C::cancelled, V::terminal, B::none, H::answer_text),
         {F::closing_event, 502, "stream_incomplete", "drain_limit",
          "the proxy is shutting down and its drain limit passed", C::cancelled, "terminal", "", "cancelled", 200,
          "cancelled"}},
    }));
    CAPTURE(static_cast<int>(row.facts.kind));
    check(row);
}

TEST_CASE("failure_answer: the Anthropic envelope type follows the status", "[failure-answer]") {
    CHECK(anthropic_error_type(static_cast<unsigned>(
              failure_answer(facts(K::connection_dropped, C::network, V::exhausted, B::max_attempts)).status)) ==
          "api_error");
    CHECK(anthropic_error_type(
              static_cast<unsigned>(failure_answer(facts(K::deadline, C::timeout, V::deadline, B::deadline)).status)) ==
          "timeout_error");
    CHECK(anthropic_error_type(static_cast<unsigned>(failure_answer(facts(K::drain_limit, C::cancelled)).status)) ==
          "overloaded_error");
    CHECK(anthropic_error_type(static_cast<unsigned>(
              failure_answer(facts(K::admission_timeout, C::rate_limit)).status)) == "rate_limit_error");
}

TEST_CASE("failure row: refusals are fixed-class and never replayed, observed failures are classified",
          "[failure-answer]") {
    for (K k : {K::not_a_stream, K::not_a_stream_after_hold, K::credential_in_body, K::credential_in_stream,
                K::model_identity_mismatch, K::unparseable_event, K::empty_stream, K::body_too_large,
                K::held_too_large, K::line_too_large, K::event_too_large}) {
        CAPTURE(static_cast<int>(k));
        CHECK(row(k).refusal);
        REQUIRE(row(k).fixed);
        CHECK_FALSE(row(k).fixed->retryable);
    }
    for (K k : {K::connect_failed, K::dns_failed, K::tls_verification_failed, K::connection_dropped, K::deadline,
                K::upstream_redirect, K::stream_ended_early, K::upstream_answer, K::key_echoed,
                K::upstream_error_event, K::stream_cut}) {
        CAPTURE(static_cast<int>(k));
        CHECK_FALSE(row(k).refusal);
        CHECK_FALSE(row(k).fixed);
    }
    CHECK(row(K::unsupported_encoding).fixed->rule == "unsupported-encoding");
    CHECK(row(K::drain_limit).fixed->cls == C::cancelled);
}
