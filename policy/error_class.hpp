// The error classes of docs/behaviour.md section 1 and the timeout sources of section 5,
// as closed enums with their exact record spellings. Pure values.
#pragma once

#include <string_view>

namespace modelproxy::policy {

enum class ErrorClass {
    network,
    timeout,
    server,
    rate_limit,          // "rate-limit"
    stream_incomplete,   // "stream-incomplete"
    content_filter,      // "content-filter"
    authentication,
    invalid_request,     // "invalid-request"
    not_found,           // "not-found"
    client,              // any other 4xx, and a terminal error event no rule names
    identity,
    credential,
    cancelled,
};

// The spelling used in records, headers and envelopes (`rate-limit`, ...).
std::string_view to_string(ErrorClass c);

// Which timer ended an attempt (sections 5 and 13): the proxy's own (turn
// deadline, stream idle, first byte, first token) or the provider's (HTTP
// 408/504, a declared 504).
enum class TimeoutSource { none, attempt_deadline, provider_timeout, stream_idle, first_byte, first_token };

// "none", "attempt-deadline", "provider-timeout", "stream-idle", "first-byte",
// "first-token". A record writes null for none.
std::string_view to_string(TimeoutSource s);

}  // namespace modelproxy::policy
