// One turn: a client request forwarded to its route, attempt by attempt, and
// the answer relayed to the client (docs/behaviour.md sections 5, 6, 7, 9, 10).
//
// The session hands over a ForwardPlan (the request, already checked and
// routed by the pure rules of request/) and the client socket; the
// turn owns the socket until it returns. Decisions (classification, replay,
// bounds) are policy/'s pure functions; this file only does the I/O they ask for.
#pragma once

#include "policy/endpoint.hpp"
#include "proxy/request.hpp"
#include "policy/error_shape.hpp"
#include "proxy/server.hpp"
#include "proxy/stream_relay.hpp"
#include "sse/identity.hpp"
#include "transport/field_scan.hpp"
#include "transport/recycling.hpp"
#include "transport/request_parser.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace modelproxy::proxy {

struct ForwardPlan {
    std::shared_ptr<const Runtime> runtime;   // the generation this turn runs on
    std::size_t route_index = 0;              // the route the payload below is built for
    const config::Model* model = nullptr;     // ... and its model entry (nullptr: the "*" route)
    std::string client_model;                 // what the client sent ("" when none)
    std::string method;
    std::string target;                       // the upstream request target
    std::string upstream_head;                // the serialized upstream request head
    std::string body;                         // what is sent (model rewritten)
    bool wants_stream = false;                // "stream": true in the JSON body
    bool head_request = false;                // HEAD: the answer has no body
    // docs/behaviour.md section 16: what a resume of a cut stream needs of
    // the request: one choice (`n` absent or 1), and temperature 0 or a seed.
    bool one_choice = true;
    bool deterministic = false;
    policy::Endpoint endpoint = policy::Endpoint::other;
    // The shape of the proxy's own envelopes and closing error event for
    // this request's SDK (docs/behaviour.md sections 7 and 9).
    policy::ErrorShape error_shape = policy::ErrorShape::openai;
    // docs/behaviour.md section 8: the identities accepted for this turn; nullopt where the
    // endpoint or the route's dialect (generic) checks none.
    std::optional<sse::IdentityRule> identity;
    std::string request_id;
    bool keep_alive = true;                   // the client allows keep-alive
    bool http10 = false;                      // an HTTP/1.0 client: a stream goes unframed, until close
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point deadline;

    // The turn's candidates (docs/behaviour.md section 13): the requested
    // model's list, nullptr when the "*" route serves it (one candidate).
    const ModelCandidates* candidates = nullptr;
    bool fallback_off = false;  // the client sent x-modelproxy-fallback: off
    // What another candidate's payload is built from (build_payload): the
    // client's request, kept only when the list has more than one candidate.
    // The head, fields and admission are the request slot's, which outlives the turn.
    std::string client_body;
    BodyFacts facts;
    const transport::RequestHead* client_head = nullptr;
    const transport::RequestFields* client_fields = nullptr;
    const Admission* admission = nullptr;

    // Scratch of the turn, here rather than in the turn so that its
    // capacity is reused: the upstream's whole (non-stream) body, the
    // payload digest, the head of the answer to the client, and a stream
    // attempt's relay state (its reader, held events, outgoing chunk and
    // last upstream read).
    std::string answer_body;
    std::string digest;
    std::string head_text;
    StreamRelay stream;
    // What a model_identity_mismatch said, for its message and attempt
    // record (docs/behaviour.md section 9); `identity_refused` while it holds this turn's.
    sse::IdentityRefusal identity_refusal;
    bool identity_refused = false;

    // Every field back to its default for the next request. The strings and
    // the identity rule keep their capacity (a reused plan costs no
    // allocation); clear() then set_identity() builds over the last rule.
    void clear();
    sse::IdentityRule& set_identity();

private:
    sse::IdentityRule spare_identity_;  // the last rule's storage while identity is nullopt
};

namespace beast = boost::beast;
namespace http = beast::http;
using transport::RequestParser;

// What a client connection needs only while one of its requests is in
// progress: the read buffer, the parser, the request's head and the plan. A connection borrows
// one from its worker when a request's first bytes arrive and gives it back
// when it has read all it was sent (Worker::take_slot, give_back), so an idle
// keep-alive connection holds none of this, and the worker's spare
// slots keep their buffers' capacity from request to request.
struct RequestSlot {
    beast::flat_buffer buffer;    // the client's bytes (pipelined ones too)
    transport::RequestHead head;  // the parser's
    std::string body;             // the parser's; prepare() moves it to the plan
    transport::RequestFields fields;  // the head's, as prepare() reads them (session.cpp)
    Admission admission;              // what the head decided before the body was read (session.cpp)
    std::optional<RequestParser> parser;
    ForwardPlan plan;

    // Ready for another connection: parser gone, plan cleared, and
    // buffers that one large request grew are released rather than kept.
    void clear();
};

class ClientWait;  // turn_watch.hpp

// Runs the turn and writes the whole answer. Returns whether the client
// connection may carry another request.
// Runs inside the session's coroutine; `wait` is the session's wait on
// `client`, whose TurnWatch cuts the turn through the session's cancellation
// signal (run_session).
Task<bool> run_turn(Worker& worker, Socket& client, ClientWait& wait, ForwardPlan& plan);

}  // namespace modelproxy::proxy
