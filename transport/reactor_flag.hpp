// Asio's per-socket memory of whether a read may find bytes, for the upstream
// connections' reads (issue 7).
//
// Asio's epoll reactor registers each socket once, edge-triggered, and keeps
// one flag per operation kind ("try a speculative read"): set when epoll
// reports the socket readable, and left set after a read that got bytes. A
// read started while it is set first tries recv() at once; while it is
// clear, the read waits for the next readiness without a system call. Asio
// never clears it after a read that emptied the socket, so the first read
// of each answer on a reused connection cost one recv() that found nothing.
//
// The transport clears it only right after its own peek found a pooled
// connection empty: no byte, no end of stream, no error (a peek reports
// those, where a read that takes the last bytes does not: a FIN or a reset
// that came with them is reported by epoll with those bytes, and only the
// next recv() tells it). Whatever comes after the peek is reported by epoll
// as a readiness of its own, which sets the flag again and completes the
// waiting read.
//
// The flag is a private member of Asio's epoll reactor; it is reached by the
// explicit-instantiation rule ([temp.spec.general]: access is not checked on
// the names of an explicit instantiation). Tied to Boost 1.81's reactor: the
// build stops on any other version or reactor. The worker's io_context runs
// on one thread, without the reactor's locks (transport/executor.hpp).
#pragma once

#include "transport/executor.hpp"

namespace modelproxy::transport::reactor_flag {

// Whether a read on `socket` would first try recv() (true also when unknown).
// The product only clears the flag; this is how the tests watch it.
bool read_may_find_bytes(Socket& socket);
// Only when the socket was just found empty by a peek on this thread, with no
// epoll_wait since: the next read waits for readiness without a recv().
void note_drained(Socket& socket);

}  // namespace modelproxy::transport::reactor_flag
