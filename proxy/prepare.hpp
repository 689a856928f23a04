// What a client request comes to, decided before any I/O: a refusal, a local
// answer (health, readiness, models, metrics), or a forward plan with the
// upstream request head written (SPEC section 4's routing, path mapping and
// header rules, section 12's client tokens). A plain function, so that its
// many locals live on the stack and the calling coroutine's frame stays under
// the 1020 bytes Asio recycles (issue 2).
#pragma once

#include "proxy/local_answers.hpp"
#include "proxy/server.hpp"
#include "proxy/turn.hpp"

#include <string>

namespace modelproxy::proxy {

struct Reply {
    enum class Kind { refuse, local, metrics, forward };
    Kind kind = Kind::forward;
    ClientError error{};   // refuse
    bool with_id = false;  // the answer and record carry plan.request_id
    std::string message;   // refuse: the envelope message, "" for the default
    LocalAnswer answer;    // local, metrics
    bool keep_alive = false;  // the connection may carry another request (set by prepare)

    static Reply refusal(ClientError error, bool with_id, std::string message = {}) {
        return Reply{Kind::refuse, error, with_id, std::move(message), {}};
    }
};

// Clears `plan` and fills it for a forwarded request (whose body it takes
// from `body`); the other kinds leave only plan.request_id set (when the path
// is under /v1). `fields` are scan_request(head), the head's alone (a
// chunked body's trailer fields are dropped). Sets the reply's keep_alive: the
// request's own (transport::keep_alive) unless the proxy is draining. `runtime` is
// the config generation the request is served under (Worker::runtime()).
Reply prepare(Shared& shared, const std::shared_ptr<const Runtime>& runtime, const transport::RequestHead& head,
              const transport::RequestFields& fields, std::string& body, ForwardPlan& plan);

}  // namespace modelproxy::proxy
