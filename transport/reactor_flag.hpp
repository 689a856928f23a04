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
//
// The client side (issue 7): a request read by read_noting_rest() on a
// socket that reports what it still holds (report_rest(), Linux's TCP_INQ:
// the bytes left, and 1 when a FIN is waiting) clears the flag when nothing
// is left, and the turn's watch on the client then waits with
// wait_readable(), which joins the reactor's queue without the epoll_ctl an
// Asio async_wait always makes. A FIN that came with the request is reported
// as something left, so the flag stays set and the watch is an ordinary wait.
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactive_wait_op.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <utility>

namespace modelproxy::transport::reactor_flag {

// Whether a read on `socket` would first try recv() (true also when unknown).
// The product only clears the flag; this is how the tests watch it.
bool read_may_find_bytes(Socket& socket);
// Only when the socket was just found empty by a peek on this thread, with no
// epoll_wait since: the next read waits for readiness without a recv().
void note_drained(Socket& socket);

// Asks the kernel to report, with each read_noting_rest(), what the socket
// still holds (TCP_INQ, one setsockopt). False when it cannot: then
// read_noting_rest() never clears the flag.
bool report_rest(Socket& socket);
// One non-blocking read (recvmsg) into `buffer`, with Asio's errors
// (would_block, eof, ...). When it took bytes and the kernel reports nothing
// left (no byte, no FIN), the flag is cleared: the socket is drained, and
// whatever comes next is reported by epoll.
std::size_t read_noting_rest(Socket& socket, boost::asio::mutable_buffer buffer, boost::system::error_code& ec);

namespace internal {
boost::asio::detail::epoll_reactor::descriptor_state* state_of(Socket& socket);
boost::asio::detail::epoll_reactor& reactor_of(Socket& socket);
}  // namespace internal

// Socket::async_wait(wait_read) for a socket whose flag is clear: the wait
// joins the socket's read queue, and completes on the next readiness (or a
// cancel or close, with the error), as async_wait does. Asio's own
// async_wait re-arms the socket in epoll (epoll_ctl) when its queue is empty,
// in case an edge-triggered readiness was already spent; with the flag clear
// none was. With the flag set it is an ordinary async_wait.
template <class Handler>
void wait_readable(Socket& socket, Handler&& handler) {
    namespace ad = boost::asio::detail;
    ad::epoll_reactor::descriptor_state* state = internal::state_of(socket);
    if (state == nullptr || read_may_find_bytes(socket)) {
        socket.async_wait(Socket::wait_read, std::forward<Handler>(handler));
        return;
    }
    using Plain = std::decay_t<Handler>;
    using Op = ad::reactive_wait_op<Plain, Socket::executor_type>;
    Plain h(std::forward<Handler>(handler));
    typename Op::ptr p = {ad::addressof(h), Op::ptr::allocate(h), nullptr};
    p.p = new (p.v) Op(boost::system::error_code(), h, socket.get_executor());
    // Speculation allowed: with the flag clear, start_op queues the wait
    // without performing it and without touching epoll.
    internal::reactor_of(socket).start_op(ad::epoll_reactor::read_op, socket.native_handle(), state, p.p, false, true);
    p.v = p.p = nullptr;
}

}  // namespace modelproxy::transport::reactor_flag
