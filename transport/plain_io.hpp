// Plain TCP on an upstream connection's own socket, in the steps tls_io.hpp
// takes over TLS: each function is one non-blocking system call on the
// socket (set non_blocking(true) when connected), and the caller's coroutine
// waits for readiness (Socket::async_wait) only when a step says so.
//
// Why a wait and then a read, not Asio's async_read_some, for an answer's
// first bytes: right after the request went out the answer is not there yet.
// An asynchronous read first tries the read at once (a recv() that finds
// nothing) and only then waits; an async_wait never tries anything (Asio
// waits for readiness, and completes only when epoll reports it), and the
// read after it finds the bytes.
//
// Threading: one connection, one worker thread.
#pragma once

#include "transport/executor.hpp"
#include "transport/tls_io.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>

namespace modelproxy::transport::plain {

// One read of what the socket holds into `space` (non-empty): done with `n`
// > 0 bytes; want_read when it holds nothing yet (wait for readability, then
// read again); failed with `ec`, asio::error::eof at the peer's end of
// stream or the socket's error (a reset).
tls::Step read(Socket& socket, boost::asio::mutable_buffer space, std::size_t& n, boost::system::error_code& ec);

// Whether an idle connection has nothing to say: no byte, no end of stream,
// no error waiting on it (a peek that would block). Costs one recv().
bool quiet(Socket& socket);

}  // namespace modelproxy::transport::plain
