#include "policy/error_class.hpp"

namespace modelproxy::policy {

std::string_view to_string(ErrorClass c) {
    switch (c) {
        case ErrorClass::network: return "network";
        case ErrorClass::timeout: return "timeout";
        case ErrorClass::server: return "server";
        case ErrorClass::rate_limit: return "rate-limit";
        case ErrorClass::stream_incomplete: return "stream-incomplete";
        case ErrorClass::content_filter: return "content-filter";
        case ErrorClass::authentication: return "authentication";
        case ErrorClass::invalid_request: return "invalid-request";
        case ErrorClass::not_found: return "not-found";
        case ErrorClass::client: return "client";
        case ErrorClass::identity: return "identity";
        case ErrorClass::credential: return "credential";
        case ErrorClass::cancelled: return "cancelled";
    }
    return "unknown";
}

std::string_view to_string(TimeoutSource s) {
    switch (s) {
        case TimeoutSource::none: return "none";
        case TimeoutSource::attempt_deadline: return "attempt-deadline";
        case TimeoutSource::provider_timeout: return "provider-timeout";
        case TimeoutSource::stream_idle: return "stream-idle";
        case TimeoutSource::first_byte: return "first-byte";
        case TimeoutSource::first_token: return "first-token";
    }
    return "unknown";
}

}  // namespace modelproxy::policy
