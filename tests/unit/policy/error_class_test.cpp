#include "policy/error_class.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy::policy;

TEST_CASE("every error class has the spelling of docs/behaviour.md section 1", "[error_class]") {
    auto [cls, spelling] = GENERATE(table<ErrorClass, std::string>({
        {ErrorClass::network, "network"},
        {ErrorClass::timeout, "timeout"},
        {ErrorClass::server, "server"},
        {ErrorClass::rate_limit, "rate-limit"},
        {ErrorClass::stream_incomplete, "stream-incomplete"},
        {ErrorClass::content_filter, "content-filter"},
        {ErrorClass::authentication, "authentication"},
        {ErrorClass::invalid_request, "invalid-request"},
        {ErrorClass::not_found, "not-found"},
        {ErrorClass::client, "client"},
        {ErrorClass::identity, "identity"},
        {ErrorClass::credential, "credential"},
        {ErrorClass::cancelled, "cancelled"},
    }));
    CHECK(to_string(cls) == spelling);
}

TEST_CASE("timeout sources have their record spelling", "[error_class]") {
    auto [source, spelling] = GENERATE(table<TimeoutSource, std::string>({
        {TimeoutSource::none, "none"},
        {TimeoutSource::attempt_deadline, "attempt-deadline"},
        {TimeoutSource::provider_timeout, "provider-timeout"},
        {TimeoutSource::stream_idle, "stream-idle"},
        {TimeoutSource::first_byte, "first-byte"},
        {TimeoutSource::first_token, "first-token"},
    }));
    CHECK(to_string(source) == spelling);
}
