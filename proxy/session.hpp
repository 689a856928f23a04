// One client connection: HTTP/1.1 keep-alive and pipelining (requests answered
// in order), the limits of docs/behaviour.md section 3 with their statuses (408, 413, 415,
// 431; over max_connections one request read, a health probe answered and
// anything else 503), the head's checks before any body byte is read
// (admission.hpp), local endpoints, and routing. Forwarded requests become
// turns (turn.hpp). Runs on its worker's thread only.
#pragma once

#include "proxy/server.hpp"

namespace modelproxy::proxy {

// `cut` is the signal bound to the session coroutine's cancellation slot
// (Worker::accept_loop): a turn's watch emits it to cut the turn (turn.hpp).
Task<void> run_session(Worker& worker, Socket socket, asio::cancellation_signal& cut);

}  // namespace modelproxy::proxy
