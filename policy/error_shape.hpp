// Which shape the proxy's own error answers take, so that the client's SDK
// can read them (docs/behaviour.md sections 7 and 9). Pure values.
//
// OpenAI's SDKs read `{"error":{"message":..,"type":..,"code":..}}`;
// Anthropic's SDK reads `{"type":"error","error":{"type":..,"message":..}}`,
// with `type` one of Anthropic's error types, and shows the message only
// when the envelope has that shape.
#pragma once

#include <string_view>

namespace modelproxy::policy {

enum class ErrorShape { openai, anthropic };

// The shape for a client request target (path, with its "/v1", and any
// query): Anthropic's for `/v1/messages` and every path below it (the
// Anthropic SDK's Messages, token counting and batches calls), OpenAI's for
// everything else. Bad client input is shaped the same way as failures: the
// SDK reads both.
constexpr ErrorShape error_shape_for_target(std::string_view target) {
    const std::size_t query = target.find('?');
    if (query != std::string_view::npos) target = target.substr(0, query);
    constexpr std::string_view messages = "/v1/messages";
    if (!target.starts_with(messages)) return ErrorShape::openai;
    target.remove_prefix(messages.size());
    return target.empty() || target.front() == '/' ? ErrorShape::anthropic : ErrorShape::openai;
}

// Anthropic's error `type` for a status the proxy answers with: 401
// authentication_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, any other 4xx
// invalid_request_error; 503 and 529 overloaded_error, 504 timeout_error,
// any other status api_error.
constexpr std::string_view anthropic_error_type(unsigned status) {
    switch (status) {
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 503:
        case 529: return "overloaded_error";
        case 504: return "timeout_error";
        default: break;
    }
    return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
}

}  // namespace modelproxy::policy
