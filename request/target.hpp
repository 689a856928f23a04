// The request target (docs/behaviour.md section 4): the checks of an origin-form target,
// what serves a checked path, and the target sent upstream.
// Pure functions over plain values; no I/O.
#pragma once

#include "config/config.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace modelproxy::request {

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

// "/v1/models" or "/v1/models/{id}" with a non-empty id.
bool is_models_path(std::string_view path);

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
// target string).
void upstream_target(std::string& out, const config::Route& route, std::string_view client_path,
                     std::string_view client_query);

// RFC 3986 percent-encoding of everything but unreserved characters, upper-case hex.
std::string percent_encode(std::string_view text);

}  // namespace modelproxy::request
