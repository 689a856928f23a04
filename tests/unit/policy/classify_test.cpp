#include "policy/classify.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>

using namespace modelproxy::policy;

namespace {

using C = ErrorClass;
using T = TimeoutSource;
constexpr auto chat = Endpoint::chat_completions;
constexpr auto other = Endpoint::other;

ProviderError body(std::string code = "", std::string type = "", std::string inner = "",
                   std::optional<std::int64_t> code_int = std::nullopt) {
    return ProviderError{code_int, std::move(code), std::move(type), std::move(inner)};
}

}  // namespace

TEST_CASE("transport observations, section 5 rows 1 to 3", "[classify]") {
    auto [transport, endpoint, cls, retryable, source, rule] =
        GENERATE(table<Transport, Endpoint, C, bool, T, std::string>({
            {Transport::tls_verify_failed, chat, C::network, false, T::none, "tls-verify"},
            {Transport::dns_failed, chat, C::network, false, T::none, "dns"},
            {Transport::connect_refused, chat, C::network, true, T::none, "connect-failed"},
            {Transport::connect_reset, chat, C::network, true, T::none, "connect-failed"},
            {Transport::connect_timeout, chat, C::network, true, T::none, "connect-failed"},
            {Transport::dropped_before_head, chat, C::network, true, T::none, "dropped-before-head"},
            {Transport::dropped_in_body, chat, C::network, true, T::none, "dropped-in-body"},
            {Transport::deadline_fired, chat, C::timeout, true, T::attempt_deadline, "turn-deadline"},
            {Transport::stream_idle_fired, chat, C::timeout, true, T::stream_idle, "stream-idle"},
            // Every replayable endpoint replays every retryable class.
            {Transport::dropped_in_body, Endpoint::completions, C::network, true, T::none, "dropped-in-body"},
            {Transport::dropped_in_body, Endpoint::responses, C::network, true, T::none, "dropped-in-body"},
            {Transport::dropped_in_body, Endpoint::messages, C::network, true, T::none, "dropped-in-body"},
            {Transport::dropped_in_body, Endpoint::embeddings, C::network, true, T::none, "dropped-in-body"},
            {Transport::dropped_in_body, Endpoint::moderations, C::network, true, T::none, "dropped-in-body"},
            // Endpoint::other replays connect failures only (and HTTP 429).
            {Transport::tls_verify_failed, other, C::network, false, T::none, "tls-verify"},
            {Transport::dns_failed, other, C::network, false, T::none, "dns"},
            {Transport::connect_refused, other, C::network, true, T::none, "connect-failed"},
            {Transport::connect_reset, other, C::network, true, T::none, "connect-failed"},
            {Transport::connect_timeout, other, C::network, true, T::none, "connect-failed"},
            {Transport::dropped_before_head, other, C::network, false, T::none, "other-endpoint"},
            {Transport::dropped_in_body, other, C::network, false, T::none, "other-endpoint"},
            {Transport::deadline_fired, other, C::timeout, false, T::attempt_deadline, "other-endpoint"},
            {Transport::stream_idle_fired, other, C::timeout, false, T::stream_idle, "other-endpoint"},
        }));
    CAPTURE(to_string(transport), endpoint);
    const Classification c = classify(Observation{transport}, endpoint);
    CHECK(to_string(c.cls) == to_string(cls));
    CHECK(c.retryable == retryable);
    CHECK(to_string(c.timeout_source) == to_string(source));
    CHECK(c.rule == rule);
}

TEST_CASE("HTTP statuses, section 5: the status line decides", "[classify]") {
    auto [status, error, endpoint, cls, retryable, source, rule] =
        GENERATE(table<int, ProviderError, Endpoint, C, bool, T, std::string>({
            {408, body(), chat, C::timeout, true, T::provider_timeout, "http-408"},
            {504, body(), chat, C::timeout, true, T::provider_timeout, "http-504"},
            {429, body(), chat, C::rate_limit, true, T::none, "http-429"},
            {425, body(), chat, C::server, true, T::none, "http-425"},
            {500, body(), chat, C::server, true, T::none, "http-5xx"},
            {502, body(), chat, C::server, true, T::none, "http-5xx"},
            {503, body(), chat, C::server, true, T::none, "http-5xx"},
            {529, body(), chat, C::server, true, T::none, "http-5xx"},
            {599, body(), chat, C::server, true, T::none, "http-5xx"},
            {401, body(), chat, C::authentication, false, T::none, "http-401-403"},
            {403, body(), chat, C::authentication, false, T::none, "http-401-403"},
            {404, body(), chat, C::not_found, false, T::none, "http-404"},
            {400, body(), chat, C::invalid_request, false, T::none, "http-400-422"},
            {422, body("invalid_value", "invalid_request_error"), chat, C::invalid_request, false, T::none, "http-400-422"},
            {400, body("content_filter"), chat, C::content_filter, false, T::none, "http-content-filter"},
            {400, body("", "content_filter"), chat, C::content_filter, false, T::none, "http-content-filter"},
            {422, body("content_policy_violation"), chat, C::content_filter, false, T::none, "http-content-filter"},
            {400, body("", "content_policy_violation"), chat, C::content_filter, false, T::none, "http-content-filter"},
            {400, body("content_filter", "invalid_request_error", "ResponsibleAIPolicyViolation"), chat, C::content_filter, false, T::none, "http-content-filter"},
            {400, body("", "", "ResponsibleAIPolicyViolation"), chat, C::content_filter, false, T::none, "http-content-filter"},
            {400, body("ResponsibleAIPolicyViolation"), chat, C::content_filter, false, T::none, "http-content-filter"},
            // Exact spellings only.
            {400, body("Content_Filter"), chat, C::invalid_request, false, T::none, "http-400-422"},
            {400, body("content_filter_x"), chat, C::invalid_request, false, T::none, "http-400-422"},
            {409, body(), chat, C::client, false, T::none, "http-4xx"},
            {418, body(), chat, C::client, false, T::none, "http-4xx"},
            {413, body(), chat, C::client, false, T::none, "http-4xx"},
            {499, body(), chat, C::client, false, T::none, "http-4xx"},
            // Content filter only on 400/422: on another status the body is not read.
            {403, body("content_filter"), chat, C::authentication, false, T::none, "http-401-403"},
            {409, body("content_filter"), chat, C::client, false, T::none, "http-4xx"},
            {500, body("content_filter"), chat, C::server, true, T::none, "http-5xx"},
            // Status beats body, both ways.
            {400, body("timeout", "server_error"), chat, C::invalid_request, false, T::none, "http-400-422"},
            {400, body("", "overloaded_error", "", 503), chat, C::invalid_request, false, T::none, "http-400-422"},
            {503, body("invalid_request", "invalid_request_error", "", 400), chat, C::server, true, T::none, "http-5xx"},
            {429, body("insufficient_quota", "insufficient_quota"), chat, C::rate_limit, true, T::none, "http-429"},
            {504, body("", "invalid_request_error"), chat, C::timeout, true, T::provider_timeout, "http-504"},
            // Not an error status: redirects are not followed nor replayed.
            {301, body(), chat, C::network, false, T::none, "http-3xx"},
            {307, body(), chat, C::network, false, T::none, "http-3xx"},
            {200, body(), chat, C::network, false, T::none, "http-unexpected-status"},
            {600, body(), chat, C::network, false, T::none, "http-unexpected-status"},
            // Endpoint::other: 429 only.
            {429, body(), other, C::rate_limit, true, T::none, "http-429"},
            {408, body(), other, C::timeout, false, T::provider_timeout, "other-endpoint"},
            {504, body(), other, C::timeout, false, T::provider_timeout, "other-endpoint"},
            {425, body(), other, C::server, false, T::none, "other-endpoint"},
            {500, body(), other, C::server, false, T::none, "other-endpoint"},
            {503, body(), other, C::server, false, T::none, "other-endpoint"},
            {529, body(), other, C::server, false, T::none, "other-endpoint"},
            {401, body(), other, C::authentication, false, T::none, "http-401-403"},
            {404, body(), other, C::not_found, false, T::none, "http-404"},
            {400, body("content_filter"), other, C::content_filter, false, T::none, "http-content-filter"},
            {400, body(), other, C::invalid_request, false, T::none, "http-400-422"},
            {409, body(), other, C::client, false, T::none, "http-4xx"},
            {429, body(), Endpoint::embeddings, C::rate_limit, true, T::none, "http-429"},
            {503, body(), Endpoint::messages, C::server, true, T::none, "http-5xx"},
        }));
    CAPTURE(status, error.code, error.type, error.inner_code, endpoint);
    const Classification c = classify(Observation{HttpAnswer{status, error}}, endpoint);
    CHECK(to_string(c.cls) == to_string(cls));
    CHECK(c.retryable == retryable);
    CHECK(to_string(c.timeout_source) == to_string(source));
    CHECK(c.rule == rule);
}

TEST_CASE("a 200 stream that ends without its end marker", "[classify]") {
    auto [endpoint, retryable, rule] = GENERATE(table<Endpoint, bool, std::string>({
        {Endpoint::chat_completions, true, "stream-incomplete"},
        {Endpoint::completions, true, "stream-incomplete"},
        {Endpoint::responses, true, "stream-incomplete"},
        {Endpoint::messages, true, "stream-incomplete"},
        {Endpoint::other, false, "other-endpoint"},
    }));
    const Classification c = classify(Observation{StreamIncomplete{}}, endpoint);
    CHECK(c.cls == C::stream_incomplete);
    CHECK(c.retryable == retryable);
    CHECK(c.timeout_source == T::none);
    CHECK(c.rule == rule);
}

TEST_CASE("structured error events, section 7", "[classify]") {
    auto [error, endpoint, cls, retryable, source, rule] =
        GENERATE(table<ProviderError, Endpoint, C, bool, T, std::string>({
            // An integer code is a declared status.
            {body("", "", "", 504), chat, C::timeout, true, T::provider_timeout, "event-504"},
            {body("", "service_unavailable", "", 503), chat, C::server, true, T::none, "event-5xx"},
            {body("", "", "", 500), chat, C::server, true, T::none, "event-5xx"},
            {body("", "", "", 529), chat, C::server, true, T::none, "event-5xx"},
            {body("", "invalid_request_error", "", 502), chat, C::server, true, T::none, "event-5xx"},
            // A declared 429 is a rate limit without an HTTP 429: terminal.
            {body("", "rate_limit_error", "", 429), chat, C::rate_limit, false, T::none, "event-429"},
            {body("", "", "", 429), other, C::rate_limit, false, T::none, "event-429"},
            // Other 4xx as section 5.
            {body("", "", "", 408), chat, C::timeout, true, T::provider_timeout, "event-408"},
            {body("", "", "", 425), chat, C::server, true, T::none, "event-425"},
            {body("", "", "", 401), chat, C::authentication, false, T::none, "event-401-403"},
            {body("", "", "", 403), chat, C::authentication, false, T::none, "event-401-403"},
            {body("", "", "", 404), chat, C::not_found, false, T::none, "event-404"},
            {body("", "", "", 400), chat, C::invalid_request, false, T::none, "event-400-422"},
            {body("", "content_filter", "", 400), chat, C::content_filter, false, T::none, "event-content-filter"},
            {body("", "", "ResponsibleAIPolicyViolation", 422), chat, C::content_filter, false, T::none, "event-content-filter"},
            {body("", "", "", 409), chat, C::client, false, T::none, "event-4xx"},
            // The declared status beats the type.
            {body("", "server_error", "", 400), chat, C::invalid_request, false, T::none, "event-400-422"},
            // An integer that is no error status: terminal; the type is not read.
            {body("", "server_error", "", 200), chat, C::client, false, T::none, "event-code-not-status"},
            {body("", "server_error", "", 1001), chat, C::client, false, T::none, "event-code-not-status"},
            // No integer code: the closed list of server-fault types.
            {body("", "server_error"), chat, C::server, true, T::none, "event-server-type"},
            {body("", "service_unavailable"), chat, C::server, true, T::none, "event-server-type"},
            {body("", "overloaded_error"), chat, C::server, true, T::none, "event-server-type"},
            {body("", "api_error"), chat, C::server, true, T::none, "event-server-type"},
            {body("", "internal_error"), chat, C::server, true, T::none, "event-server-type"},
            {body("", "timeout_error"), chat, C::server, true, T::none, "event-server-type"},
            {body("server_error"), chat, C::client, false, T::none, "event-unrecognized"},   // a code is not a type
            {body("", "Server_Error"), chat, C::client, false, T::none, "event-unrecognized"},
            {body("503", "invalid_request_error"), chat, C::invalid_request, false, T::none, "event-invalid-request"},  // a string "503" is no integer code
            // Anything else: terminal, its class named by a well-known spelling.
            {body("", "rate_limit_error"), chat, C::rate_limit, false, T::none, "event-rate-limit"},
            {body("insufficient_quota", "insufficient_quota"), chat, C::rate_limit, false, T::none, "event-rate-limit"},
            {body("rate_limit_exceeded", "requests"), chat, C::rate_limit, false, T::none, "event-rate-limit"},
            {body("content_filter"), chat, C::content_filter, false, T::none, "event-content-filter"},
            {body("", "", "ResponsibleAIPolicyViolation"), chat, C::content_filter, false, T::none, "event-content-filter"},
            {body("", "authentication_error"), chat, C::authentication, false, T::none, "event-authentication"},
            {body("", "permission_error"), chat, C::authentication, false, T::none, "event-authentication"},
            {body("", "not_found_error"), chat, C::not_found, false, T::none, "event-not-found"},
            {body("", "invalid_request_error"), chat, C::invalid_request, false, T::none, "event-invalid-request"},
            {body("", "some_new_error"), chat, C::client, false, T::none, "event-unrecognized"},
            {body(), chat, C::client, false, T::none, "event-unrecognized"},
            // Endpoint::other replays nothing an event declares.
            {body("", "", "", 503), other, C::server, false, T::none, "other-endpoint"},
            {body("", "", "", 504), other, C::timeout, false, T::provider_timeout, "other-endpoint"},
            {body("", "overloaded_error"), other, C::server, false, T::none, "other-endpoint"},
            {body("", "overloaded_error"), Endpoint::messages, C::server, true, T::none, "event-server-type"},
            {body("", "server_error"), Endpoint::responses, C::server, true, T::none, "event-server-type"},
        }));
    CAPTURE(error.code_int.value_or(-1), error.code, error.type, error.inner_code, endpoint);
    const Classification c = classify(Observation{StreamErrorEvent{error}}, endpoint);
    CHECK(to_string(c.cls) == to_string(cls));
    CHECK(c.retryable == retryable);
    CHECK(to_string(c.timeout_source) == to_string(source));
    CHECK(c.rule == rule);
}

TEST_CASE("the direct entry points agree with classify(Observation)", "[classify]") {
    const ProviderError filter = body("content_filter");
    CHECK(classify_transport(Transport::connect_reset, other) ==
          classify(Observation{Transport::connect_reset}, other));
    CHECK(classify_http(400, filter, chat) == classify(Observation{HttpAnswer{400, filter}}, chat));
    CHECK(classify_stream_incomplete(chat) == classify(Observation{StreamIncomplete{}}, chat));
    CHECK(classify_error_event(filter, chat) == classify(Observation{StreamErrorEvent{filter}}, chat));
}

TEST_CASE("transport kinds have stable names", "[classify]") {
    auto [t, name] = GENERATE(table<Transport, std::string>({
        {Transport::tls_verify_failed, "tls-verify-failed"},
        {Transport::dns_failed, "dns-failed"},
        {Transport::connect_refused, "connect-refused"},
        {Transport::connect_reset, "connect-reset"},
        {Transport::connect_timeout, "connect-timeout"},
        {Transport::dropped_before_head, "dropped-before-head"},
        {Transport::dropped_in_body, "dropped-in-body"},
        {Transport::deadline_fired, "deadline-fired"},
        {Transport::stream_idle_fired, "stream-idle-fired"},
    }));
    CHECK(to_string(t) == name);
}
