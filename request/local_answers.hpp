// The answers the proxy writes itself (docs/behaviour.md sections 4 and 9): the error
// envelope, bad-input refusals, the model list, liveness and readiness.
//
// Pure functions returning plain values; no I/O, no Asio or Beast types. Every
// body is a complete JSON document, to be sent with
// `Content-Type: application/json`. The session adds the transport headers
// (Content-Length, `x-should-retry: false` on every non-2xx answer per section
// 6, `Allow` on a 405, `Connection: close` while draining).
#pragma once

#include "config/config.hpp"
#include "policy/endpoint.hpp"
#include "policy/error_shape.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace modelproxy::request {

// The envelope `type` of a bad request (section 9) and of a failure the proxy
// answers itself because no upstream answer can be passed on.
inline constexpr std::string_view invalid_request_error_type = "invalid_request_error";
inline constexpr std::string_view modelproxy_error_type = "modelproxy_error";

// Everything the proxy refuses on its own before a request is forwarded. Each
// has one status, one envelope `code` and one default human message.
enum class ClientError {
    bad_request,                   // 400 bad_request: not parseable as HTTP/1.1
    invalid_json,                  // 400 invalid_json
    missing_model,                 // 400 missing_model
    duplicate_model,               // 400 duplicate_model
    invalid_path,                  // 400 invalid_path
    unauthorized,                  // 401 unauthorized (section 12)
    not_found,                     // 404 not_found: outside /v1/ and no local endpoint
    model_not_found,               // 404 model_not_found
    no_route,                      // 404 no_route
    method_not_allowed,            // 405 method_not_allowed
    request_timeout,               // 408 request_timeout: head not complete in header_timeout_ms
    payload_too_large,             // 413 payload_too_large: max_request_body_bytes
    unsupported_content_encoding,  // 415 unsupported_content_encoding: request Content-Encoding
    header_too_large,              // 431 header_too_large: max_header_bytes
    too_many_connections,          // 503 too_many_connections: max_connections
};

unsigned status_of(ClientError error);
std::string_view code_of(ClientError error);
std::string_view default_message(ClientError error);
// invalid_request_error for all but too_many_connections, which is the
// proxy's own condition, not the client's mistake: modelproxy_error.
std::string_view type_of(ClientError error);

// A complete local answer: status and JSON body.
struct LocalAnswer {
    unsigned status = 200;
    std::string body;
};

// The optional members of the section 9 envelope; each is written only when set.
struct EnvelopeDetails {
    std::optional<std::string_view> error_class;  // "class": network, timeout, ...
    std::optional<int> attempts;                  // "attempts": N
    std::optional<std::string_view> decision;     // "decision": terminal | exhausted | deadline
    std::optional<std::string_view> bound;        // "bound": max_attempts, deadline, ...
};

// {"error":{"message":..,"type":..,"code":..[,"class":..][,"attempts":N]
// [,"decision":..][,"bound":..]}} in exactly that member order. Strings are
// written by append_json_string (json_string.hpp): valid JSON whatever bytes
// they hold (a message may carry client-supplied text: a path, a model).
std::string error_envelope(std::string_view message, std::string_view type, std::string_view code,
                           const EnvelopeDetails& details = {});

// The same envelope in the shape the client's SDK reads (policy/error_shape.hpp):
// ErrorShape::openai is error_envelope() above; ErrorShape::anthropic is
// {"type":"error","error":{"type":<anthropic_error_type(status)>,"message":..,
// "code":..[,"class":..][,"attempts":N][,"decision":..][,"bound":..]}}: the
// same members, with Anthropic's type for `status` in place of `type`.
std::string error_envelope(policy::ErrorShape shape, unsigned status, std::string_view message,
                           std::string_view type, std::string_view code, const EnvelopeDetails& details = {});

// The bad-input envelope (type invalid_request_error) with an explicit status.
LocalAnswer client_error(unsigned status, std::string_view code, std::string_view message);
// The refusal with its own status, code, type and default message.
LocalAnswer client_error(ClientError error);
// The same with a more specific message.
LocalAnswer client_error(ClientError error, std::string_view message);
// The refusal in `shape` (Anthropic's on /v1/messages: docs/behaviour.md section 9);
// an empty `message` is the default one.
LocalAnswer client_error(ClientError error, policy::ErrorShape shape, std::string_view message = {});

// What the closing error event of a stream says (docs/behaviour.md section 7).
struct ClosingError {
    std::string_view message;
    std::string_view type;          // stream_incomplete, a section 8 refusal code, or the last failure's class
    int code = 502;                 // the status it stands for
    std::string_view error_class;
    std::string_view decision;
    std::string_view bound;         // "" -> null
    int attempts = 0;
    std::uint64_t sequence_number = 0;  // /responses: one past the last forwarded event's (0: none was)
};

// The closing error event, an SSE event with its blank line, in the shape of
// the client's endpoint:
//  - /responses: `event: error` + `data: {"type":"error","code":<type>,
//    "message":..,"param":null,"sequence_number":N,"class":..,
//    "decision":..,"bound":..,"attempts":N}` (the Responses API's error event);
//  - Anthropic's shape (ErrorShape::anthropic: /v1/messages): `event: error` +
//    `data: {"type":"error","error":{"type":"api_error","message":..,
//    "code":<type>,"class":..,"decision":..,"bound":..,"attempts":N}}`;
//  - any other: `data: {"error":{"type":<type>,"code":<code>,"message":..,
//    "class":..,"decision":..,"bound":..,"attempts":N}}`.
std::string closing_error_event(policy::Endpoint endpoint, policy::ErrorShape shape, const ClosingError& error);

// The model_not_found message naming the model the client asked for.
std::string model_not_found_message(std::string_view model);

// GET /v1/models: 200 {"object":"list","data":[{"id":..,"object":"model",
// "created":0,"owned_by":<route name>},...]} with every configured client
// model name once, routes and models in file order: a name several routes
// list (its deployments, section 13) appears at its first route. A "*" route
// lists nothing: it has no names of its own.
LocalAnswer models_list(const config::Config& config);

// GET /v1/models/{id} (id already percent-decoded): 200 with the model object
// of models_list, or 404 model_not_found. Answered locally even when a "*"
// route exists (section 4 answers both model paths locally), so an id that no
// route names is 404 although the "*" route would forward a turn for it.
LocalAnswer model_object(const config::Config& config, std::string_view id);

// GET /healthz: 200 {"status":"ok"} while the process serves.
LocalAnswer healthz();

enum class Readiness { ready, draining };
// GET /readyz: 200 {"status":"ready"}, or 503 {"status":"draining"} after
// SIGTERM/SIGINT. Never 503 because an upstream is down.
LocalAnswer readyz(Readiness readiness);

}  // namespace modelproxy::request
