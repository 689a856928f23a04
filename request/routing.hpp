// Which route serves a request, or which refusal answers it
// (docs/behaviour.md section 4's routing table), from its method, path and body facts and the config.
// A pure function; no I/O.
#pragma once

#include "config/config.hpp"
#include "request/body.hpp"
#include "request/local_answers.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace modelproxy::request {

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

}  // namespace modelproxy::request
