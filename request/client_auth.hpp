// The client token check (docs/behaviour.md section 12): which configured token a
// request presents, and which header fields carry one.
// Pure functions over plain values; no I/O. Tokens are compared in
// constant time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::request {

enum class ClientAuth {
    open,     // no tokens configured: every request passes
    bearer,   // Authorization: Bearer <token> matched
    api_key,  // x-api-key: <token> matched
    refused,  // tokens configured and neither header matched: 401 unauthorized
};

// Section 12. authorization and x_api_key are the header values (nullopt when
// absent). The Bearer scheme is case-insensitive; surrounding spaces are
// ignored. Every configured token is compared in constant time, and all of
// them always are. Empty configured tokens never match.
ClientAuth authorize_client(std::optional<std::string_view> authorization,
                            std::optional<std::string_view> x_api_key,
                            const std::vector<std::string>& tokens);

// authorize_client(...) != ClientAuth::refused.
bool client_authorized(std::optional<std::string_view> authorization,
                       std::optional<std::string_view> x_api_key,
                       const std::vector<std::string>& tokens);

// "authorization" for bearer, "x-api-key" for api_key, else "": the
// CredentialRule::client_token_header of an authorized request.
std::string_view token_header(ClientAuth auth);

// Whether a request header's value carries one of the configured client
// tokens anywhere in it (compared byte for byte; empty tokens never match).
// Such a header is never forwarded (section 4: whichever header the token
// came in, Authorization, x-api-key, api-key or any other, and every one of
// repeated fields).
bool carries_client_token(std::string_view value, const std::vector<std::string>& tokens);

}  // namespace modelproxy::request
