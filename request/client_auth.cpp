#include "request/client_auth.hpp"

#include "request/text.hpp"

#include <algorithm>

namespace modelproxy::request {

namespace {

// Equal in time that depends only on the lengths, never on where the bytes differ.
bool constant_time_equal(std::string_view presented, std::string_view expected) {
    unsigned char diff = presented.size() == expected.size() ? 0 : 1;
    const std::size_t n = std::max(presented.size(), expected.size());
    for (std::size_t i = 0; i < n; ++i) {
        const auto a = static_cast<unsigned char>(i < presented.size() ? presented[i] : 0);
        const auto b = static_cast<unsigned char>(i < expected.size() ? expected[i] : 0);
        diff |= static_cast<unsigned char>(a ^ b);
    }
    return diff == 0;
}

// The token of "Bearer <token>" (scheme case-insensitive), else nullopt.
std::optional<std::string_view> bearer_token(std::string_view authorization) {
    authorization = trim_ows(authorization);
    const std::size_t space = authorization.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    if (!iequals(authorization.substr(0, space), "bearer")) return std::nullopt;
    return trim_ows(authorization.substr(space + 1));
}

bool matches_any(std::string_view presented, const std::vector<std::string>& tokens) {
    bool matched = false;
    for (const auto& token : tokens) {
        const bool equal = constant_time_equal(presented, token);
        matched = matched || (equal && !token.empty());
    }
    return matched;
}

}  // namespace

ClientAuth authorize_client(std::optional<std::string_view> authorization,
                            std::optional<std::string_view> x_api_key,
                            const std::vector<std::string>& tokens) {
    if (tokens.empty()) return ClientAuth::open;
    // Both candidates are compared against every token, so the time taken
    // does not tell which header or which token came close.
    const std::optional<std::string_view> bearer =
        authorization ? bearer_token(*authorization) : std::nullopt;
    const bool bearer_ok = matches_any(bearer.value_or(std::string_view{}), tokens) && bearer.has_value();
    const std::string_view api_key = x_api_key ? trim_ows(*x_api_key) : std::string_view{};
    const bool api_key_ok = matches_any(api_key, tokens) && x_api_key.has_value();
    if (bearer_ok) return ClientAuth::bearer;
    if (api_key_ok) return ClientAuth::api_key;
    return ClientAuth::refused;
}

bool client_authorized(std::optional<std::string_view> authorization,
                       std::optional<std::string_view> x_api_key,
                       const std::vector<std::string>& tokens) {
    return authorize_client(authorization, x_api_key, tokens) != ClientAuth::refused;
}

std::string_view token_header(ClientAuth auth) {
    switch (auth) {
    case ClientAuth::bearer: return "authorization";
    case ClientAuth::api_key: return "x-api-key";
    default: return {};
    }
}

bool carries_client_token(std::string_view value, const std::vector<std::string>& tokens) {
    for (const auto& token : tokens)
        if (!token.empty() && value.find(token) != std::string_view::npos) return true;
    return false;
}

}  // namespace modelproxy::request
