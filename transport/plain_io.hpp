// Plain TCP on an upstream connection's own socket: the pool's check that an
// idle connection has nothing to say. Reads are Asio's async_read_some
// (upstream.cpp): after a read that drained the socket, the next one is
// queued with no system call and the reactor's read on readiness is the only
// one; an async_wait would re-arm the descriptor (an epoll_ctl) every time.
//
// Threading: one connection, one worker thread.
#pragma once

#include "transport/executor.hpp"

namespace modelproxy::transport::plain {

// Whether an idle connection has nothing to say: no byte, no end of stream,
// no error waiting on it (a peek that would block). Costs one recv().
bool quiet(Socket& socket);

}  // namespace modelproxy::transport::plain
