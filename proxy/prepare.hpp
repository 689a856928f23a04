// What a client request comes to, decided before any I/O: a refusal, a local
// answer (health, readiness, models, metrics), or a forward plan with the
// upstream request head written (docs/behaviour.md section 4's routing, path mapping and
// header rules, section 12's client tokens), in two steps: the head's
// (admit_request, before the body is read) and the rest (prepare). Plain
// functions, so that their many locals live on the stack and the calling
// coroutine's frame stays under the 1020 bytes Asio recycles.
#pragma once

#include "proxy/request.hpp"
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

// The head's part (admission.hpp), before any body byte is read: clears
// `plan` and sets plan.request_id (when the path is under /v1: the client's
// x-request-id, else a new one), then fills `admission` from the head, its
// fields (scan_request) and its framing as the parser read it. `over_limit`:
// the connection is beyond max_connections.
void admit_request(const Runtime& runtime, const transport::RequestHead& head, const transport::RequestFields& fields,
                   const RequestHead& framing, bool over_limit, Admission& admission, ForwardPlan& plan);

// The rest, once the body is read, for a request admit_request let through:
// a local answer, a refusal of its body or route, or `plan` filled for a
// forwarded request (whose body it takes from `body`). Sets the reply's
// keep_alive: the admission's, unless the proxy is draining. `runtime` is
// the config generation the request is served under (Worker::runtime()).
Reply prepare(Shared& shared, const std::shared_ptr<const Runtime>& runtime, const transport::RequestHead& head,
              const transport::RequestFields& fields, const Admission& admission, std::string& body,
              ForwardPlan& plan);

// The upstream request of another candidate of the turn (docs/behaviour.md
// section 13), from the client's request that prepare() kept in `plan`
// (client_body, facts, client_head, client_fields, admission): target, body,
// identity rule and head, as prepare() built them for the first.
void build_payload(ForwardPlan& plan, const CandidateRef& candidate);

}  // namespace modelproxy::proxy
