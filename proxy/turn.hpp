// One turn: a client request forwarded to its route, attempt by attempt, and
// the answer relayed to the client (SPEC sections 5, 6, 7, 9, 10).
//
// The session hands over a ForwardPlan (the request, already checked and
// routed by the pure rules of request_rules.hpp) and the client socket; the
// turn owns the socket until it returns. Decisions (classification, replay,
// bounds) are policy/'s pure functions; this file only does the I/O they ask for.
#pragma once

#include "policy/endpoint.hpp"
#include "proxy/server.hpp"
#include "sse/identity.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace modelproxy::proxy {

struct ForwardPlan {
    std::shared_ptr<const Runtime> runtime;   // the generation this turn runs on
    std::size_t route_index = 0;
    std::string client_model;                 // what the client sent ("" when none)
    std::string method;
    std::string target;                       // the upstream request target
    std::string upstream_head;                // the serialized upstream request head
    std::string body;                         // what is sent (model rewritten)
    bool wants_stream = false;                // "stream": true in the JSON body
    bool head_request = false;                // HEAD: the answer has no body
    policy::Endpoint endpoint = policy::Endpoint::other;
    // SPEC section 8: the identities accepted for this turn; nullopt where the
    // endpoint or the route's dialect (generic) checks none.
    std::optional<sse::IdentityRule> identity;
    std::string request_id;
    bool keep_alive = true;                   // the client allows keep-alive
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point deadline;
};

// Runs the turn and writes the whole answer. Returns whether the client
// connection may carry another request.
boost::asio::awaitable<bool> run_turn(Worker& worker, boost::asio::ip::tcp::socket& client, ForwardPlan& plan);

}  // namespace modelproxy::proxy
