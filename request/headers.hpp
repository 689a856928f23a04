// Which header fields pass the proxy (docs/behaviour.md section 4): hop-by-hop fields,
// Connection tokens, credentials and the proxy's own fields, for requests
// sent upstream and answers sent to the client.
// Pure functions over plain values; no I/O.
#pragma once

#include "policy/ascii.hpp"

#include <string_view>

namespace modelproxy::request {

// Names and Connection tokens are compared ASCII case-insensitively.

using policy::iequals;

// Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade.
bool is_hop_by_hop(std::string_view name);

// Whether one Connection header value lists `name` among its tokens
// (case-insensitive). The tokens are read in place: nothing is copied or
// collected, so the relay can ask per header field. A message with
// several Connection field lines lists `name` when any of them does.
enum class ConnectionListed : bool { no, yes };
ConnectionListed connection_lists(std::string_view connection_value, std::string_view name);

// One Connection value asked about every field of a message (prepare,
// ResponseHead::copy_upstream): connection_lists' answers, but a value whose
// tokens are only keep-alive and close, as nearly every one is, is read once,
// not once per field: it can list only a field of one of those
// names.
class ConnectionTokens {
public:
    explicit ConnectionTokens(std::string_view connection_value);
    ConnectionListed lists(std::string_view name) const;

private:
    std::string_view value_;
    bool only_usual_;  // no token but keep-alive and close
};

// Authorization, x-api-key, api-key.
bool is_client_credential(std::string_view name);

// x-modelproxy-*: the proxy's own request controls and response annotations.
bool is_modelproxy_header(std::string_view name);

// Which credentials a request carries and which the route replaces.
struct CredentialRule {
    // The route's api_key_header when the route injects a key, else empty.
    std::string_view injected_key_header;
    // The header that carried the client's modelproxy token (token_header()),
    // else empty. Never forwarded (section 12), even when the route passes
    // client credentials through.
    std::string_view client_token_header;
};

// Whether a client request header is copied upstream. Never copied:
//  - hop-by-hop headers and those the Connection header names;
//  - Host: the sender writes the upstream's;
//  - Content-Length: the sender recomputes it (the body may be rewritten);
//  - Expect: the proxy answers 100-continue itself;
//  - Accept-Encoding: the sender writes "identity";
//  - x-modelproxy-*;
//  - the header that carried the client's token;
//  - when the route injects a key: Authorization, x-api-key, api-key and the
//    route's own key header (the sender writes the route's key).
// `listed`: whether the request's Connection header lists `name` (connection_lists).
bool forward_request_header(std::string_view name, ConnectionListed listed, const CredentialRule& credentials);

// Whether an upstream response header is copied to the client. Never copied:
//  - hop-by-hop headers and those the upstream's Connection header names;
//  - Content-Length: the relay writes its own (a decoded or held body, or chunked);
//  - Content-Encoding: the relay always sends the body decoded (gzip and deflate
//    are decoded, any other coding is 502 unsupported_encoding before this);
//  - x-modelproxy-*: the relay writes the proxy's own (an upstream that is
//    itself a modelproxy must not be mistaken for this one).
// x-should-retry is copied here; on a non-success answer the relay replaces it
// with "false" (section 6).
// `listed`: whether the upstream's Connection header lists `name`.
bool forward_response_header(std::string_view name, ConnectionListed listed);

}  // namespace modelproxy::request
