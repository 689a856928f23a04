#include "request/headers.hpp"

#include "request/text.hpp"

#include <algorithm>

namespace modelproxy::request {

// The header rules below run for every field of every request and answer:
// each switches on the name's length first, so a name is compared with only
// the fixed names of its length.

bool is_hop_by_hop(std::string_view name) {
    switch (name.size()) {
        case 2: return iequals(name, "te");
        case 7: if (iequals(name, "trailer") || iequals(name, "upgrade")) return true; break;
        case 10: if (iequals(name, "connection") || iequals(name, "keep-alive")) return true; break;
        case 17: if (iequals(name, "transfer-encoding")) return true; break;
        default: break;
    }
    return istarts_with(name, "proxy-");
}

namespace {

// Calls `on_token` with each non-empty token of a Connection value, as sent
// (not lower-cased), until it returns true; whether one did.
template <class OnToken>
bool any_connection_token(std::string_view connection_value, OnToken on_token) {
    while (!connection_value.empty()) {
        const std::size_t comma = std::min(connection_value.find(','), connection_value.size());
        const std::string_view token = trim_ows(connection_value.substr(0, comma));
        if (!token.empty() && on_token(token)) return true;
        connection_value.remove_prefix(std::min(comma + 1, connection_value.size()));
    }
    return false;
}

}  // namespace

ConnectionListed connection_lists(std::string_view connection_value, std::string_view name) {
    const bool listed = any_connection_token(connection_value, [&](std::string_view token) { return iequals(token, name); });
    return listed ? ConnectionListed::yes : ConnectionListed::no;
}

ConnectionTokens::ConnectionTokens(std::string_view connection_value)
    : value_(connection_value),
      only_usual_(!any_connection_token(connection_value, [](std::string_view token) {
          return !iequals(token, "keep-alive") && !iequals(token, "close");
      })) {}

ConnectionListed ConnectionTokens::lists(std::string_view name) const {
    if (only_usual_ && name.size() != std::string_view("keep-alive").size() &&
        name.size() != std::string_view("close").size()) {
        return ConnectionListed::no;
    }
    return connection_lists(value_, name);
}

bool is_client_credential(std::string_view name) {
    return iequals(name, "authorization") || iequals(name, "x-api-key") || iequals(name, "api-key");
}

bool is_modelproxy_header(std::string_view name) { return istarts_with(name, "x-modelproxy-"); }

bool forward_request_header(std::string_view name, ConnectionListed listed, const CredentialRule& credentials) {
    if (is_hop_by_hop(name) || listed == ConnectionListed::yes) return false;
    switch (name.size()) {
        case 4: if (iequals(name, "host")) return false; break;
        case 6: if (iequals(name, "expect")) return false; break;
        case 14: if (iequals(name, "content-length")) return false; break;
        case 15: if (iequals(name, "accept-encoding")) return false; break;
        default: break;
    }
    if (is_modelproxy_header(name)) return false;
    if (!credentials.client_token_header.empty() && iequals(name, credentials.client_token_header)) {
        return false;
    }
    if (!credentials.injected_key_header.empty() &&
        (is_client_credential(name) || iequals(name, credentials.injected_key_header))) {
        return false;
    }
    return true;
}

bool forward_response_header(std::string_view name, ConnectionListed listed) {
    if (is_hop_by_hop(name) || listed == ConnectionListed::yes) return false;
    switch (name.size()) {
        case 14: if (iequals(name, "content-length")) return false; break;
        case 16: if (iequals(name, "content-encoding")) return false; break;
        default: break;
    }
    return !is_modelproxy_header(name);
}

}  // namespace modelproxy::request
