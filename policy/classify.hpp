// Failure classification, docs/behaviour.md section 5 (and section 7's structured error
// events): from one observed attempt outcome to {class, retryable, timeout
// source, rule}. Pure: no I/O, no clocks, never reads an error message.
//
// `retryable` says whether the class is replayed in the turn on this endpoint
// (section 4's last column). It does not know what was published: a stream
// failure is only replayable while nothing is published, and that is the
// caller's knowledge. Whether a retry may happen now (bounds, deadline) is the
// decision's business (policy/decision.hpp).
#pragma once

#include "policy/endpoint.hpp"
#include "policy/error_class.hpp"
#include "policy/provider_error.hpp"

#include <string_view>
#include <variant>

namespace modelproxy::policy {

// What the transport saw, when no HTTP status decides.
enum class Transport {
    tls_verify_failed,    // certificate or host-name verification failed
    dns_failed,           // host name does not resolve
    connect_refused,      // counts as an attempt
    connect_reset,        // reset while connecting (TCP or TLS handshake)
    connect_timeout,      // connect_timeout_ms fired
    dropped_before_head,  // connection dropped before or while the response head transfers
    dropped_in_body,      // connection dropped while a body (or a stream) transfers
    deadline_fired,       // the turn deadline cut the attempt
    stream_idle_fired,    // stream_idle_timeout_ms fired
    first_byte_fired,     // first_byte_timeout_ms fired (section 13)
    first_token_fired,    // first_token_timeout_ms fired (section 13)
};

std::string_view to_string(Transport t);  // "tls-verify-failed", ...

// A non-2xx response head. `error` is what its body declared (empty when the
// body had none); it can change the class among terminal 400/422 rows only.
// `status` is the HTTP status line, never a status found inside a body.
struct HttpAnswer {
    int status = 0;
    ProviderError error;
};

// A 200 stream that ended cleanly after at least one event, without its
// endpoint's end marker.
struct StreamIncomplete {};

// A 200 stream carrying a structured error event (section 7).
struct StreamErrorEvent {
    ProviderError error;
};

using Observation = std::variant<Transport, HttpAnswer, StreamIncomplete, StreamErrorEvent>;

struct Classification {
    ErrorClass cls = ErrorClass::network;
    bool retryable = false;           // replayed in the turn on this endpoint
    TimeoutSource timeout_source = TimeoutSource::none;
    std::string_view rule;            // stable id of the row that matched (static storage)

    friend bool operator==(const Classification&, const Classification&) = default;
};

// First matching row of section 5 wins. On Endpoint::other only connect
// failures and HTTP 429 stay retryable; any other row that would be retryable
// keeps its class and timeout source, becomes terminal, and its rule is
// "other-endpoint".
Classification classify(const Observation& observation, Endpoint endpoint);

Classification classify_transport(Transport t, Endpoint endpoint);

// The status decides; the body can only pick content-filter over
// invalid-request on a 400/422. 3xx (not followed, 502 upstream_redirect) is
// network and terminal; a status outside 300..599 is network and terminal.
Classification classify_http(int status, const ProviderError& body, Endpoint endpoint);

Classification classify_stream_incomplete(Endpoint endpoint);

// Section 7: an integer error.code is a declared status (504 timeout, other
// 5xx server, both retryable; 429 rate-limit, terminal; other 4xx as section
// 5). Without one, error.type in the closed server-fault list is server,
// retryable. Anything else is terminal, with the class named by a small closed
// list of well-known code/type spellings, else `client` (see classify.cpp).
Classification classify_error_event(const ProviderError& event, Endpoint endpoint);

// Section 5's content-filter test: error code, type or inner code is exactly
// content_filter, content_policy_violation or ResponsibleAIPolicyViolation.
bool is_content_filter(const ProviderError& error);

}  // namespace modelproxy::policy
