// What a client request's head alone decides, before any byte of its body is
// read (docs/behaviour.md sections 4 and 12): whether the proxy refuses it at once, and
// what the rest of the request's handling needs to know of its head.
//
// The session asks this right after the head is parsed, by either reader
// (transport/whole_request.hpp or Beast's), so a request the proxy will
// refuse on its head is never sent `100 Continue`, and its body is never
// read or buffered: a stranger without a client token cannot make the proxy
// hold a 32 MiB upload, and a connection over max_connections is read for
// one head and no more.
//
// Pure: no I/O, no shared state; the tokens are compared in constant time
// (authorize_client).
#pragma once

#include "request/client_auth.hpp"
#include "request/head.hpp"
#include "request/local_answers.hpp"
#include "request/target.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::request {

// The head's facts that admit() reads.
struct HeadFacts {
    std::string_view target;  // as sent
    RequestHead framing;      // method, version, Host count, framing fields
    std::optional<std::string_view> authorization;  // the first field's value
    std::optional<std::string_view> x_api_key;      // the first field's value
    bool keep_alive = true;   // the request lets the connection carry another (transport::keep_alive)
    bool over_limit = false;  // the connection is beyond max_connections (section 12)
};

struct Admission {
    Target target;  // check_path's; views into the head, valid while it is
    Dispatch dispatch = Dispatch::not_found;
    ClientAuth auth = ClientAuth::open;
    // Answered at once, before any body byte is read; nullopt: read the body
    // and go on (prepare.hpp).
    std::optional<ClientError> refusal;
    bool with_id = false;     // the refusal's answer and record carry the request id
    bool keep_alive = false;  // after this request's answer the connection may carry another
    bool send_continue = false;  // answer `100 Continue` before reading the body
};

// The head's verdict, first matching row:
//
//   over_limit: a GET or HEAD of /healthz, /readyz or /metrics without a
//     body is answered (then the connection closes); anything else is 503
//     too_many_connections;
//   check_request_head's refusals (400 strict framing, 413, 415);
//   400 invalid_path (check_path);
//   404 not_found, 405 method_not_allowed (dispatch);
//   401 unauthorized, when the path needs a client token and none of
//     `tokens` is presented (with_id: the request id is the client's or a
//     new one, as for any turn under /v1/);
//   go on: read the body, after `100 Continue` when the client asked for it.
//
// After a refusal the connection stays open only when the request allowed
// it, has no body, and the refusal is one of routing (invalid_path,
// not_found, method_not_allowed, unauthorized): a body left unread, or a
// head whose framing is in doubt, ends the connection.
Admission admit(const HeadFacts& head, const std::vector<std::string>& tokens, std::uint64_t max_body_bytes);

}  // namespace modelproxy::request
