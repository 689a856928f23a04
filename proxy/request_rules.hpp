// The rules that decide what happens to a client request (SPEC sections 4, 9
// and 12), as pure functions over plain values: the request target, the body,
// the routing decision, the header rules and the client token check.
//
// No I/O, no Asio or Beast types, no exceptions, no shared state: every call
// is safe from any thread. inspect_json_body holds, for the call's duration,
// a padded copy of the body plus simdjson's structural index and string
// buffer (roughly 6 bytes per body byte, ~200 MiB for a 32 MiB body);
// nothing is kept afterwards.
//
// Order the session applies them in, so that nothing of a bad request is
// forwarded (section 9) and no body of an unauthenticated client is read
// (section 12). On the head, before any body byte (admission.hpp's admit;
// the head's size and read timeouts, 431/408, are the session's):
//   1. check_request_head(head, max_body)   -> 400, 413, 415, or 100 Continue later
//   2. check_path(target)                   -> 400 invalid_path
//   3. dispatch(method, path)               -> local endpoint, 404 not_found, 405, or forward
//   4. authorize_client(...) when needs_client_token(dispatch) -> 401 unauthorized
// Then, with the body:
//   5. inspect_body(content_type, body); decide_route(method, path, facts, config)
//   6. upstream_target(route, path, query), upstream_body(body, facts, upstream_model),
//      forward_request_header(name, ...) for each client header.
#pragma once

#include "config/config.hpp"
#include "policy/ascii.hpp"
#include "proxy/local_answers.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace modelproxy::proxy {

// ---------------------------------------------------------------- the target

enum class TargetStatus {
    ok,
    not_origin_form,       // does not start with '/', or has a '#' (absolute-form, "*", fragment)
    dot_dot_segment,       // a path segment is exactly ".."
    encoded_dot_or_slash,  // "%2e" or "%2f" in the path, any case (section 4)
    backslash,             // '\' or "%5c" in the path: another spelling of a separator
};

// The request target split at its first '?'. path and query are views into
// the target; query excludes the '?'.
struct Target {
    TargetStatus status = TargetStatus::ok;
    std::string_view path;
    std::string_view query;
};

// Checks an origin-form request target. Every status other than ok is a 400
// invalid_path. Only the path is checked; the query is passed on as it is.
// A "." segment is allowed: it cannot climb above the route's base path.
Target check_path(std::string_view target);

// "/v1" itself or a path starting with "/v1/".
bool under_v1(std::string_view path);

// What serves a checked path (section 4's table, top to bottom).
enum class Dispatch {
    healthz,             // GET|HEAD /healthz
    readyz,              // GET|HEAD /readyz
    metrics,             // GET|HEAD /metrics
    models_list,         // GET|HEAD /v1/models
    model_object,        // GET|HEAD /v1/models/{id} (id non-empty, may contain '/')
    forward,             // anything else under /v1/: decide_route
    not_found,           // 404 not_found
    method_not_allowed,  // 405 on /healthz, /readyz, /metrics; Allow: allowed_methods()
};

// HEAD is answered like GET without a body (RFC 9110 section 9.3.2). Other
// methods on /v1/models[/{id}] are forwarded (to the "*" route, or by a body
// model), and decide_route answers 405 when nothing serves them.
Dispatch dispatch(std::string_view method, std::string_view path);

// The value of the Allow header on a 405: "GET, HEAD".
std::string_view allowed_methods();

// Section 12: every request under /v1/ needs a client token when tokens are
// configured; /healthz, /readyz, /metrics and unknown paths need none.
bool needs_client_token(Dispatch dispatch);

// The percent-decoded {id} of /v1/models/{id}; nullopt when path is not of
// that form or an escape is malformed.
std::optional<std::string> model_id_from_path(std::string_view path);

// The upstream request target (section 4): the route's base path (a trailing
// '/' ignored) + client_path less its leading "/v1" + '?' + client_query +
// the route's static query parameters, each percent-encoded (RFC 3986
// unreserved characters kept) as key=value and '&'-joined after the client's
// own. No '?' when both are empty; "/" when the path would be empty. A static
// parameter the client also sent is appended, not replaced.
//   base "/v1", "/v1/chat/completions", "x=1", {api-version: 2024-06-01}
//   -> "/v1/chat/completions?x=1&api-version=2024-06-01"
std::string upstream_target(const config::Route& route, std::string_view client_path,
                            std::string_view client_query);
// The same target written into `out` (its capacity reused: the plan's
// target string, issue 2).
void upstream_target(std::string& out, const config::Route& route, std::string_view client_path,
                     std::string_view client_query);

// RFC 3986 percent-encoding of everything but unreserved characters, upper-case hex.
std::string percent_encode(std::string_view text);

// ------------------------------------------------------------------ the body

// A byte range of the body.
struct Span {
    std::size_t offset = 0;
    std::size_t size = 0;
    friend bool operator==(const Span&, const Span&) = default;
};

enum class JsonShape {
    invalid,  // not one RFC 8259 JSON value (trailing bytes, bad escape, BOM), or nested deeper than 512
    object,   // a JSON object
    other,    // valid JSON that is not an object (array, string, number, ...)
};

enum class ModelField {
    absent,      // no top-level model
    string,      // exactly one top-level model, a string
    not_string,  // exactly one top-level model, not a string
    duplicate,   // the top-level model key appears more than once (any values)
};

struct JsonBody {
    JsonShape shape = JsonShape::invalid;
    ModelField model = ModelField::absent;
    std::string model_name;  // decoded, when model == string
    Span model_span;         // the string value including its quotes, when model == string
    bool stream = false;     // the last top-level "stream" is the literal true
    bool background = false; // the last top-level "background" is the literal true
};

// Validates body as JSON (with simdjson on-demand, every value visited) and
// reads its top-level routing members. Keys are compared decoded, so
// "mod\u0065l" is a model key; nested model keys are not routing information.
// String escapes are checked by grammar only: a lone surrogate escape such as
// "\ud800" is accepted (JavaScript clients send them; the providers' parsers
// take them) and decodes to U+FFFD in model_name.
// `readable`: how many bytes from body.data() may be read (a string's
// capacity). With simdjson's padding there past the body, the body is read
// in place; else a padded copy is made (a large body read with its declared
// length has the room: transport::RequestParser reserves it).
JsonBody inspect_json_body(std::string_view body, std::size_t readable = 0);
// The bytes past a JSON body that reading it in place needs.
inline constexpr std::size_t json_padding = 64;

// body with the bytes of span replaced by new_model as a JSON string (quoted,
// escaped); every other byte is unchanged. span must come from
// inspect_json_body on the same body.
std::string rewrite_model(std::string_view body, Span span, std::string_view new_model);

struct MultipartModel {
    ModelField model = ModelField::absent;  // absent also when the body is not well-formed
    std::string model_name;                 // the part's content, when model == string
    Span model_span;                        // the part's content bytes, no CRLF
};

// The value of the part named "model" (Content-Disposition: form-data;
// name="model", quoted or not, any case) in a multipart/form-data body, whose
// boundary comes from content_type (quoted or not). Lines must end in CRLF
// (RFC 7578/2046). Two model parts are ModelField::duplicate.
MultipartModel multipart_model(std::string_view content_type, std::string_view body);

enum class BodyKind {
    none,       // an empty body, whatever its Content-Type
    json,       // application/json or application/<x>+json, parameters and case ignored
    multipart,  // multipart/form-data
    other,      // any other or no Content-Type
};

BodyKind body_kind(std::string_view content_type, std::size_t body_size);

// The body facts routing needs: only the member matching kind is filled.
struct BodyFacts {
    BodyKind kind = BodyKind::none;
    JsonBody json;
    MultipartModel multipart;

    // The top-level model as routing sees it, whichever the kind.
    ModelField model() const;
    const std::string& model_name() const;
    // Section 4: the client wants a stream iff its JSON body has "stream": true.
    bool wants_stream() const { return kind == BodyKind::json && json.stream; }
};

BodyFacts inspect_body(std::string_view content_type, std::string_view body, std::size_t readable = 0);

// The body to send upstream: body with the model value replaced by
// upstream_model (JSON-escaped for JSON, raw bytes for multipart). A body
// whose facts carry no string model is returned unchanged.
std::string upstream_body(std::string_view body, const BodyFacts& facts,
                          std::string_view upstream_model);

// A request Content-Encoding the proxy accepts: absent (empty) or identity.
// Anything else is 415 (section 4).
bool acceptable_request_encoding(std::string_view content_encoding);

// What the session read of a request head, before its body.
struct RequestHead {
    std::string_view method;         // as sent
    unsigned version = 11;           // 10 for HTTP/1.0, 11 for HTTP/1.1
    unsigned host_fields = 1;        // how many Host fields (2 stands for any more)
    bool transfer_encoding = false;  // at least one Transfer-Encoding field
    bool chunked = false;            // its final coding is chunked (as the HTTP parser read it)
    std::optional<std::uint64_t> content_length;
    std::string_view content_encoding;  // the first field's value, "" when none
    std::string_view expect;            // the first field's value, "" when none

    // A body follows the head (chunked, or a Content-Length above 0).
    bool has_body() const { return chunked || content_length.value_or(0) > 0; }
};

// What the head alone decides, before the body is read: a refusal (the
// connection then closes), or whether to answer 100 Continue first.
struct HeadCheck {
    std::optional<ClientError> refusal;
    bool send_continue = false;
};

// Strict framing (SPEC section 4), each a 400 bad_request:
//  - a method of anything but upper-case letters, '-' and '_': methods are
//    case-sensitive, and `post` is not POST (valid_method);
//  - an HTTP/1.1 request without exactly one Host field, or any request with
//    several (RFC 9112 section 3.2);
//  - a Transfer-Encoding in an HTTP/1.0 request (RFC 9112 section 6.1: its
//    framing is faulty), or one whose final coding is not chunked (RFC 9112
//    section 6.3: the body length is unknown, so the bytes after the head
//    could be read as a body or as another request).
// Then a Content-Length over `max_body_bytes`: 413; a Content-Encoding other
// than identity: 415 (section 4). Expect: 100-continue is answered by the
// proxy, never forwarded, and never to an HTTP/1.0 client (RFC 9110 section
// 10.1.1 has it ignore the expectation).
HeadCheck check_request_head(const RequestHead& head, std::uint64_t max_body_bytes);

// A method token of upper-case ASCII letters, '-' and '_', as nginx accepts:
// every registered method is, and a case variant of one (`post`, `Get`) is
// not taken for it, nor passed on to an upstream that might.
bool valid_method(std::string_view method);

// ----------------------------------------------------------------- routing

// Forward the turn. Pointers refer into the Config given to decide_route,
// which must outlive the turn (a reload makes a new Config; section 11).
struct Forward {
    const config::Route* route = nullptr;
    const config::Model* model = nullptr;     // nullptr: the "*" route serves it
    std::string client_model;                 // as the client sent it; empty when none
    std::optional<std::string> upstream_model;  // to write into the body; nullopt: unchanged
};

// Answer locally instead.
struct Refusal {
    ClientError error;
    std::string message;  // the envelope message
};

using RouteDecision = std::variant<Forward, Refusal>;

// Section 4's routing for a checked path under /v1/ that dispatch() sent to
// Dispatch::forward. First matching row wins:
//
//   body (BodyFacts)                       method  result
//   ------------------------------------   ------  --------------------------------------------
//   json, invalid                          any     400 invalid_json (never forwarded, section 9)
//   json or multipart, model duplicate     any     400 duplicate_model
//   json or multipart, string model M      POST    route naming M (rewrite when its
//                                                  upstream_model differs), else the "*"
//                                                  route (M unchanged), else 404 model_not_found
//   anything                               any     the "*" route when there is one, unchanged
//   path is /v1/models or /v1/models/{id}  non-GET 405 method_not_allowed (known path)
//   json (valid) without a string model    any     400 missing_model (model absent, not a
//                                                  string, or the body not an object)
//   anything else                          any     404 no_route
//
// "anything else" includes an empty body (even with a JSON Content-Type:
// SDKs send one on bodiless POSTs such as cancels), a non-JSON body, a
// multipart body without a model part, and a non-POST request whose JSON
// body names a model (only POST bodies route by model).
RouteDecision decide_route(std::string_view method, std::string_view path, const BodyFacts& facts,
                           const config::Config& config);

// ---------------------------------------------------------------- headers
//
// Names and Connection tokens are compared ASCII case-insensitively.

using policy::iequals;

// Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade.
bool is_hop_by_hop(std::string_view name);

// Whether one Connection header value lists `name` among its tokens
// (case-insensitive). The tokens are read in place: nothing is copied or
// collected, so the relay can ask per header field (issue 2). A message with
// several Connection field lines lists `name` when any of them does.
enum class ConnectionListed : bool { no, yes };
ConnectionListed connection_lists(std::string_view connection_value, std::string_view name);

// One Connection value asked about every field of a message (prepare,
// ResponseHead::copy_upstream): connection_lists' answers, but a value whose
// tokens are only keep-alive and close, as nearly every one is, is read once,
// not once per field (issue 7): it can list only a field of one of those
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

// ------------------------------------------------------------ client tokens

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

}  // namespace modelproxy::proxy
