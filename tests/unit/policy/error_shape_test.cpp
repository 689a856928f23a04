#include "policy/error_shape.hpp"

#include <catch2/catch.hpp>

#include <string>

using modelproxy::policy::anthropic_error_type;
using modelproxy::policy::error_shape_for_target;
using modelproxy::policy::ErrorShape;

TEST_CASE("error_shape_for_target: Anthropic's under /v1/messages, OpenAI's elsewhere", "[error_shape]") {
    auto [target, shape] = GENERATE(table<std::string, ErrorShape>({
        {"/v1/messages", ErrorShape::anthropic},
        {"/v1/messages?beta=true", ErrorShape::anthropic},
        {"/v1/messages/count_tokens", ErrorShape::anthropic},
        {"/v1/messages/batches/b1/results", ErrorShape::anthropic},
        {"/v1/messagesx", ErrorShape::openai},
        {"/v1/messages-x", ErrorShape::openai},
        {"/v1/chat/completions", ErrorShape::openai},
        {"/v1/responses", ErrorShape::openai},
        {"/messages", ErrorShape::openai},
        {"/v2/messages", ErrorShape::openai},
        {"/v1/chat/completions?x=/v1/messages", ErrorShape::openai},
        {"", ErrorShape::openai},
    }));
    CAPTURE(target);
    CHECK(error_shape_for_target(target) == shape);
}

TEST_CASE("anthropic_error_type: one of Anthropic's types per status", "[error_shape]") {
    auto [status, type] = GENERATE(table<unsigned, std::string>({
        {400, "invalid_request_error"},
        {401, "authentication_error"},
        {403, "permission_error"},
        {404, "not_found_error"},
        {405, "invalid_request_error"},
        {408, "invalid_request_error"},
        {413, "request_too_large"},
        {415, "invalid_request_error"},
        {429, "rate_limit_error"},
        {431, "invalid_request_error"},
        {500, "api_error"},
        {502, "api_error"},
        {503, "overloaded_error"},
        {504, "timeout_error"},
        {529, "overloaded_error"},
    }));
    CAPTURE(status);
    CHECK(anthropic_error_type(status) == type);
}
