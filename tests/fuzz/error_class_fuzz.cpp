// libFuzzer target for the error classifier: policy::classify_http and
// policy::classify_error_event (policy/classify.hpp) over what sse/ extracts
// from a provider's error body or structured error event. inspect_fuzz checks
// the extraction; this checks what the classes made of it are.
//
// Input: 2 bytes picking an HTTP status (0..999), then the body / data line.
// The error it declares comes from sse::parse_error_body and from the
// Inspector on every endpoint (with event name "error", as an Anthropic
// `event: error` line), plus a ProviderError built from the raw bytes, so
// values no JSON parser would produce are classified too.
//
// Checked (abort() on failure) against docs/behaviour.md sections 5 and 7, written out
// here as an independent table:
//  - an HTTP status decides class, replay and timeout source; a body can only
//    turn invalid-request into content-filter on a 400/422 (section 5: the
//    status line decides);
//  - on Endpoint::other only connect failures and 429 stay replayable;
//  - an event's integer code is a declared status (504 timeout, other 5xx and
//    425 server, 429 rate-limit but terminal, other 4xx as section 5); without
//    one, error.type in the closed server-fault list is server; anything else
//    is terminal, content-filter exactly when a content-filter name is there;
//  - timeout source provider-timeout exactly on class timeout; every rule and
//    class spelling is non-empty.
#include "check.hpp"

#include "policy/classify.hpp"
#include "policy/endpoint.hpp"
#include "policy/error_class.hpp"
#include "policy/provider_error.hpp"
#include "sse/inspect.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace modelproxy::policy;
using modelproxy::fuzz::all_endpoints;

bool content_filter_name(std::string_view s) {
    return s == "content_filter" || s == "content_policy_violation" || s == "ResponsibleAIPolicyViolation";
}

bool declares_content_filter(const ProviderError& e) {
    return content_filter_name(e.code) || content_filter_name(e.type) || content_filter_name(e.inner_code);
}

bool server_fault_type(std::string_view t) {
    return t == "server_error" || t == "service_unavailable" || t == "overloaded_error" || t == "api_error" ||
           t == "internal_error" || t == "timeout_error";
}

struct Expected {
    ErrorClass cls;
    bool replayable;  // on an endpoint that replays every class
    bool everywhere;  // also on Endpoint::other
};

// Section 5's rows for an HTTP status line in 400..599.
Expected http_error_row(int status, const ProviderError& body) {
    if (status == 408 || status == 504) return {ErrorClass::timeout, true, false};
    if (status == 429) return {ErrorClass::rate_limit, true, true};
    if (status == 425 || status >= 500) return {ErrorClass::server, true, false};
    if (status == 401 || status == 403) return {ErrorClass::authentication, false, false};
    if (status == 404) return {ErrorClass::not_found, false, false};
    if (status == 400 || status == 422)
        return {declares_content_filter(body) ? ErrorClass::content_filter : ErrorClass::invalid_request, false, false};
    return {ErrorClass::client, false, false};
}

void check_common(const Classification& c) {
    MP_FUZZ_CHECK(!c.rule.empty());
    MP_FUZZ_CHECK(!to_string(c.cls).empty());
    MP_FUZZ_CHECK((c.timeout_source == TimeoutSource::provider_timeout) == (c.cls == ErrorClass::timeout));
    // An answer's status names only the provider's timer, never one of the proxy's.
    MP_FUZZ_CHECK(c.timeout_source == TimeoutSource::none || c.timeout_source == TimeoutSource::provider_timeout);
}

void check_against(const Classification& c, const Expected& want, Endpoint endpoint) {
    check_common(c);
    MP_FUZZ_CHECK_THAT(c.cls == want.cls, "the class differs from docs/behaviour.md section 5/7's table");
    const bool replayed = want.replayable && (want.everywhere || replays_every_class(endpoint));
    MP_FUZZ_CHECK_THAT(c.retryable == replayed, "replay differs from docs/behaviour.md section 5/7's table");
    if (want.replayable && !replayed) MP_FUZZ_CHECK(c.rule == "other-endpoint");
}

void check_http(int status, const ProviderError& body, Endpoint endpoint) {
    const Classification c = classify_http(status, body, endpoint);
    MP_FUZZ_CHECK(c == classify(HttpAnswer{status, body}, endpoint));
    if (status >= 400 && status <= 599) {
        check_against(c, http_error_row(status, body), endpoint);
    } else {
        // 3xx is not followed (502 upstream_redirect); anything else is no answer.
        check_common(c);
        MP_FUZZ_CHECK(c.cls == ErrorClass::network && !c.retryable);
    }
    // The status line decides: the body changes nothing but content-filter
    // against invalid-request on a 400/422.
    const Classification bare = classify_http(status, ProviderError{}, endpoint);
    MP_FUZZ_CHECK(c.retryable == bare.retryable && c.timeout_source == bare.timeout_source);
    if (c.cls != bare.cls)
        MP_FUZZ_CHECK((status == 400 || status == 422) && c.cls == ErrorClass::content_filter &&
                      bare.cls == ErrorClass::invalid_request);
}

void check_event(const ProviderError& event, Endpoint endpoint) {
    const Classification c = classify_error_event(event, endpoint);
    MP_FUZZ_CHECK(c == classify(StreamErrorEvent{event}, endpoint));
    if (event.code_int) {
        const std::int64_t code = *event.code_int;
        if (code >= 400 && code <= 599) {
            Expected want = http_error_row(static_cast<int>(code), event);
            // A rate limit without an HTTP 429 is terminal (section 5).
            if (code == 429) want = {ErrorClass::rate_limit, false, false};
            check_against(c, want, endpoint);
        } else {
            check_against(c, {ErrorClass::client, false, false}, endpoint);
        }
        return;
    }
    if (server_fault_type(event.type)) {
        check_against(c, {ErrorClass::server, true, false}, endpoint);
        return;
    }
    // Anything else is terminal; its class is named by a well-known spelling.
    check_common(c);
    MP_FUZZ_CHECK_THAT(!c.retryable, "an error event without a declared status or server type is replayed");
    MP_FUZZ_CHECK(c.timeout_source == TimeoutSource::none);
    MP_FUZZ_CHECK((c.cls == ErrorClass::content_filter) == declares_content_filter(event));
    MP_FUZZ_CHECK(c.cls == ErrorClass::content_filter || c.cls == ErrorClass::rate_limit ||
                  c.cls == ErrorClass::authentication || c.cls == ErrorClass::not_found ||
                  c.cls == ErrorClass::invalid_request || c.cls == ErrorClass::client);
}

// A ProviderError straight from the bytes: three '\0'-separated strings and,
// when the status byte pair is odd, an integer code from the status.
ProviderError raw_error(std::string_view bytes, int status, bool with_code) {
    ProviderError e;
    std::array<std::string*, 3> fields{&e.code, &e.type, &e.inner_code};
    for (std::string* field : fields) {
        const std::size_t end = bytes.find('\0');
        *field = std::string(bytes.substr(0, end));
        bytes.remove_prefix(end == std::string_view::npos ? bytes.size() : end + 1);
    }
    if (with_code) e.code_int = status;
    return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    if (size < 2) return 0;
    const unsigned pick = (static_cast<unsigned>(bytes[0]) << 8) | bytes[1];
    const int status = static_cast<int>(pick % 1000);
    const std::string_view body(reinterpret_cast<const char*>(bytes + 2), size - 2);

    std::vector<ProviderError> errors;
    errors.push_back(raw_error(body, status, pick & 0x8000));
    if (auto declared = modelproxy::sse::parse_error_body(body)) errors.push_back(*declared);

    modelproxy::sse::Inspector inspector;
    for (const Endpoint endpoint : all_endpoints) {
        const auto& info = inspector.inspect(body, endpoint, "error");
        if (info.structured_error) errors.push_back(info.error);
    }

    for (const Endpoint endpoint : all_endpoints) {
        for (const ProviderError& e : errors) {
            check_http(status, e, endpoint);
            check_event(e, endpoint);
        }
        // Every transport observation classifies (section 5's first rows).
        for (const Transport t : {Transport::tls_verify_failed, Transport::dns_failed, Transport::connect_refused,
                                  Transport::connect_reset, Transport::connect_timeout, Transport::dropped_before_head,
                                  Transport::dropped_in_body, Transport::deadline_fired,
                                  Transport::stream_idle_fired}) {
            const Classification c = classify_transport(t, endpoint);
            MP_FUZZ_CHECK(!c.rule.empty() && !to_string(t).empty());
            const bool timer = t == Transport::deadline_fired || t == Transport::stream_idle_fired;
            MP_FUZZ_CHECK(c.cls == (timer ? ErrorClass::timeout : ErrorClass::network));
            MP_FUZZ_CHECK((c.timeout_source == TimeoutSource::attempt_deadline) == (t == Transport::deadline_fired));
            MP_FUZZ_CHECK((c.timeout_source == TimeoutSource::stream_idle) == (t == Transport::stream_idle_fired));
            const bool connect = t == Transport::connect_refused || t == Transport::connect_reset ||
                                 t == Transport::connect_timeout;
            const bool verify = t == Transport::tls_verify_failed || t == Transport::dns_failed;
            MP_FUZZ_CHECK(c.retryable == (!verify && (connect || replays_every_class(endpoint))));
        }
        const Classification incomplete = classify_stream_incomplete(endpoint);
        MP_FUZZ_CHECK(incomplete.cls == ErrorClass::stream_incomplete &&
                      incomplete.retryable == replays_every_class(endpoint));
    }
    return 0;
}
