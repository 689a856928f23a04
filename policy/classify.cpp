#include "policy/classify.hpp"

#include <array>
#include <initializer_list>

namespace modelproxy::policy {
namespace {

// A row of section 5 before the endpoint is considered. `everywhere` marks the
// rows section 5 keeps replayable on endpoints that replay little (connect
// failures and HTTP 429).
struct Row {
    ErrorClass cls;
    bool retryable;
    TimeoutSource timeout_source;
    std::string_view rule;
    bool everywhere = false;
};

Classification on_endpoint(const Row& row, Endpoint endpoint) {
    if (row.retryable && !row.everywhere && !replays_every_class(endpoint)) {
        // Section 4: a path that may create jobs, files or runs is not
        // repeated after the request may have reached the provider.
        return {row.cls, false, row.timeout_source, "other-endpoint"};
    }
    return {row.cls, row.retryable, row.timeout_source, row.rule};
}

template <class Names>
bool is_any_of(std::string_view value, const Names& names) {
    if (value.empty()) return false;
    for (std::string_view n : names) {
        if (value == n) return true;
    }
    return false;
}

// Rules of a status, whether an HTTP status line or a status declared by a
// stream error event; the two differ in rule ids and in 429, whose
// replayability needs a real HTTP 429 (section 5: a rate limit without an
// HTTP 429 is terminal).
struct StatusRules {
    std::string_view r408, r504, r429, r425, r5xx, rauth, r404, rfilter, rinvalid, r4xx;
    bool rate_limit_retryable;
};

constexpr StatusRules http_rules{"http-408", "http-504", "http-429", "http-425",
                                 "http-5xx", "http-401-403", "http-404",
                                 "http-content-filter", "http-400-422", "http-4xx", true};
constexpr StatusRules event_rules{"event-408", "event-504", "event-429", "event-425",
                                  "event-5xx", "event-401-403", "event-404",
                                  "event-content-filter", "event-400-422", "event-4xx", false};

// Caller guarantees 400 <= status <= 599.
Row error_status_row(int status, const ProviderError& body, const StatusRules& r) {
    using C = ErrorClass;
    using T = TimeoutSource;
    if (status == 408) return {C::timeout, true, T::provider_timeout, r.r408};
    if (status == 504) return {C::timeout, true, T::provider_timeout, r.r504};
    if (status == 429) return {C::rate_limit, r.rate_limit_retryable, T::none, r.r429, true};
    if (status == 425 || status >= 500) {
        return {C::server, true, T::none, status == 425 ? r.r425 : r.r5xx};
    }
    if (status == 401 || status == 403) return {C::authentication, false, T::none, r.rauth};
    if (status == 404) return {C::not_found, false, T::none, r.r404};
    if (status == 400 || status == 422) {
        if (is_content_filter(body)) return {C::content_filter, false, T::none, r.rfilter};
        return {C::invalid_request, false, T::none, r.rinvalid};
    }
    return {C::client, false, T::none, r.r4xx};
}

// Section 7, no integer code: the closed list of server-fault types.
constexpr std::array<std::string_view, 6> server_fault_types = {
    "server_error", "service_unavailable", "overloaded_error",
    "api_error",    "internal_error",      "timeout_error"};

// A terminal event still gets the class its well-known spelling names, so the
// record says `rate-limit` for a quota inside a 200 stream (section 5) rather
// than a catch-all. Matched against error.code or error.type, exactly.
Row terminal_event_row(const ProviderError& e) {
    using C = ErrorClass;
    using T = TimeoutSource;
    auto names = [&](std::initializer_list<std::string_view> list) {
        return is_any_of(e.code, list) || is_any_of(e.type, list);
    };
    if (is_content_filter(e)) return {C::content_filter, false, T::none, "event-content-filter"};
    if (names({"rate_limit_error", "rate_limit_exceeded", "insufficient_quota"})) {
        return {C::rate_limit, false, T::none, "event-rate-limit"};
    }
    if (names({"authentication_error", "permission_error"})) {
        return {C::authentication, false, T::none, "event-authentication"};
    }
    if (names({"not_found_error"})) return {C::not_found, false, T::none, "event-not-found"};
    if (names({"invalid_request_error"})) {
        return {C::invalid_request, false, T::none, "event-invalid-request"};
    }
    return {C::client, false, T::none, "event-unrecognized"};
}

}  // namespace

std::string_view to_string(Transport t) {
    switch (t) {
        case Transport::tls_verify_failed: return "tls-verify-failed";
        case Transport::dns_failed: return "dns-failed";
        case Transport::connect_refused: return "connect-refused";
        case Transport::connect_reset: return "connect-reset";
        case Transport::connect_timeout: return "connect-timeout";
        case Transport::dropped_before_head: return "dropped-before-head";
        case Transport::dropped_in_body: return "dropped-in-body";
        case Transport::deadline_fired: return "deadline-fired";
        case Transport::stream_idle_fired: return "stream-idle-fired";
        case Transport::first_byte_fired: return "first-byte-fired";
        case Transport::first_token_fired: return "first-token-fired";
    }
    return "unknown";
}

bool is_content_filter(const ProviderError& error) {
    constexpr std::array<std::string_view, 3> names = {
        "content_filter", "content_policy_violation", "ResponsibleAIPolicyViolation"};
    return is_any_of(error.code, names) || is_any_of(error.type, names) ||
           is_any_of(error.inner_code, names);
}

Classification classify_transport(Transport t, Endpoint endpoint) {
    using C = ErrorClass;
    using T = TimeoutSource;
    switch (t) {
        case Transport::tls_verify_failed:
            return on_endpoint({C::network, false, T::none, "tls-verify"}, endpoint);
        case Transport::dns_failed:
            return on_endpoint({C::network, false, T::none, "dns"}, endpoint);
        case Transport::connect_refused:
        case Transport::connect_reset:
        case Transport::connect_timeout:
            // Nothing reached the provider: safe to repeat on every endpoint.
            return on_endpoint({C::network, true, T::none, "connect-failed", true}, endpoint);
        case Transport::dropped_before_head:
            return on_endpoint({C::network, true, T::none, "dropped-before-head"}, endpoint);
        case Transport::dropped_in_body:
            return on_endpoint({C::network, true, T::none, "dropped-in-body"}, endpoint);
        case Transport::deadline_fired:
            // Retryable "when time is left": the decision sees none is, and
            // ends the turn with bound deadline (policy/decision.hpp).
            return on_endpoint({C::timeout, true, T::attempt_deadline, "turn-deadline"}, endpoint);
        case Transport::stream_idle_fired:
            return on_endpoint({C::timeout, true, T::stream_idle, "stream-idle"}, endpoint);
        case Transport::first_byte_fired:
            return on_endpoint({C::timeout, true, T::first_byte, "first-byte"}, endpoint);
        case Transport::first_token_fired:
            return on_endpoint({C::timeout, true, T::first_token, "first-token"}, endpoint);
    }
    return {C::network, false, T::none, "unknown-transport"};
}

Classification classify_http(int status, const ProviderError& body, Endpoint endpoint) {
    if (status >= 400 && status <= 599) {
        return on_endpoint(error_status_row(status, body, http_rules), endpoint);
    }
    if (status >= 300 && status <= 399) {
        // Section 4: not followed and not replayed (502 upstream_redirect).
        return {ErrorClass::network, false, TimeoutSource::none, "http-3xx"};
    }
    return {ErrorClass::network, false, TimeoutSource::none, "http-unexpected-status"};
}

Classification classify_stream_incomplete(Endpoint endpoint) {
    return on_endpoint(
        {ErrorClass::stream_incomplete, true, TimeoutSource::none, "stream-incomplete"}, endpoint);
}

Classification classify_error_event(const ProviderError& event, Endpoint endpoint) {
    if (event.code_int) {
        const std::int64_t code = *event.code_int;
        if (code >= 400 && code <= 599) {
            return on_endpoint(error_status_row(static_cast<int>(code), event, event_rules),
                               endpoint);
        }
        // An integer that is no error status: a declared code, but not one
        // section 7 maps; "anything else -> terminal". The type is not read,
        // since section 7 applies the type list only without an integer code.
        return {ErrorClass::client, false, TimeoutSource::none, "event-code-not-status"};
    }
    if (is_any_of(event.type, server_fault_types)) {
        return on_endpoint({ErrorClass::server, true, TimeoutSource::none, "event-server-type"},
                           endpoint);
    }
    return on_endpoint(terminal_event_row(event), endpoint);
}

Classification classify(const Observation& observation, Endpoint endpoint) {
    struct Visitor {
        Endpoint endpoint;
        Classification operator()(Transport t) const { return classify_transport(t, endpoint); }
        Classification operator()(const HttpAnswer& a) const {
            return classify_http(a.status, a.error, endpoint);
        }
        Classification operator()(const StreamIncomplete&) const {
            return classify_stream_incomplete(endpoint);
        }
        Classification operator()(const StreamErrorEvent& e) const {
            return classify_error_event(e.error, endpoint);
        }
    };
    return std::visit(Visitor{endpoint}, observation);
}

}  // namespace modelproxy::policy
