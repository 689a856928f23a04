// Asio's per-socket memory of whether a read may find bytes, for the upstream
// connections' reads (issue 7).
//
// Asio's epoll reactor registers each socket once, edge-triggered, and keeps
// one flag per operation kind ("try a speculative read"): set when epoll
// reports the socket readable, and left set after a read that got bytes. A
// read started while it is set first tries recv() at once; while it is
// clear, the read waits for the next readiness without a system call. Asio
// never clears it after a read that drained the socket, so a read started
// after the answer's bytes were all taken always costs one recv() that finds
// nothing.
//
// The transport clears it itself when it knows the socket holds nothing:
// right after its own peek found a pooled connection empty, and right after
// a read that took less than it had room for, when that read's completion
// ran straight from the reactor's handling of the readiness (no epoll_wait
// came between the recv() and the clearing, so any byte that arrived since
// is an edge still to be reported, and that report sets the flag again).
// While the flag stays clear, nothing has arrived since: a pooled connection
// whose flag is clear is quiet without a peek.
//
// The flag is a private member of Asio's epoll reactor; it is reached by the
// explicit-instantiation rule ([temp.spec.general]: access is not checked on
// the names of an explicit instantiation). Tied to Boost 1.81's reactor: the
// static_asserts stop the build on any other version or reactor.
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/detail/reactor.hpp>
#include <boost/version.hpp>

namespace modelproxy::transport::reactor_flag {

// Whether a read on `socket` would first try recv() (true also when unknown).
bool read_may_find_bytes(Socket& socket);
// Only when the socket is known to hold nothing, with no epoll_wait since it
// was found so: the next read waits for readiness without a recv().
void note_drained(Socket& socket);

}  // namespace modelproxy::transport::reactor_flag
