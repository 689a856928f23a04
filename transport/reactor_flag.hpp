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
// Both sides read with read_with_rest() on sockets that report what they
// still hold (report_rest(), Linux's TCP_INQ: the bytes left, and 1 when a
// FIN is waiting). A client request read that leaves nothing clears the
// flag, and the turn's watch on the client then waits with wait_readable(),
// which joins the reactor's queue without the epoll_ctl an Asio async_wait
// always makes. An upstream answer's head read that left nothing clears it
// too, and the pool then reuses the connection without its peek. A FIN that
// came with the bytes is reported as something left, so the flag stays set;
// a reset is not, so either side sets the flag again (note_unknown) before
// it reads more of the same message.
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
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

// Sets the flag (the next read tries recv() at once), as Asio leaves it
// after any readiness: always safe. For a read that follows one whose rest
// was 0 and that cleared the flag, when a reset may have come with those
// bytes (read_with_rest).
void note_unknown(Socket& socket);

// Asks the kernel to report, with each read_with_rest(), what the socket
// still holds (TCP_INQ, one setsockopt). False when it cannot: then every
// read's rest is unknown.
bool report_rest(Socket& socket);
// One non-blocking read (recvmsg) into `buffer`, with Asio's errors
// (would_block, eof, ...). `rest`: what the kernel still holds after it, 0
// when nothing (no byte, no FIN), -1 when unknown. A rest of 0 with the
// read's bytes taken means the socket is drained: whatever comes next is
// reported by epoll, so note_drained() may follow, on this thread, before
// any epoll_wait. But a reset that came with the bytes is not in the rest
// (only the next read reports it), so a caller that clears the flag and
// then waited for more of the same message would wait for a readiness epoll
// already reported: it calls note_unknown() before such a read.
std::size_t read_with_rest(Socket& socket, boost::asio::mutable_buffer buffer, boost::system::error_code& ec,
                           int& rest);

namespace internal {
// The socket implementation's own pointer to its reactor state (null once
// the socket is closed): a cancellation reads it when it fires.
boost::asio::detail::epoll_reactor::per_descriptor_data& data_of(Socket& socket);
boost::asio::detail::epoll_reactor& reactor_of(boost::asio::detail::epoll_reactor::descriptor_state& state);
// A wait's per-operation cancellation, as Asio's own socket operations
// install it: a terminal, partial or total cancellation withdraws the wait,
// which then completes with operation_aborted.
struct WaitCancellation {
    boost::asio::detail::epoll_reactor* reactor;
    boost::asio::detail::epoll_reactor::per_descriptor_data* data;
    int descriptor;
    void operator()(boost::asio::cancellation_type_t type);
};
}  // namespace internal

// Socket::async_wait(wait_read) for a socket whose flag is clear: the wait
// joins the socket's read queue, and completes on the next readiness (or a
// cancel or close, with the error), as async_wait does. Asio's own
// async_wait re-arms the socket in epoll (epoll_ctl) when its queue is empty,
// in case an edge-triggered readiness was already spent; with the flag clear
// none was. With the flag set it is an ordinary async_wait.
// A cancellation slot bound to the handler (a coroutine's) is honoured as
// Asio's own operations honour it.
template <class Handler>
void wait_readable(Socket& socket, Handler&& handler) {
    namespace ad = boost::asio::detail;
    ad::epoll_reactor::per_descriptor_data& data = internal::data_of(socket);
    if (data == nullptr || read_may_find_bytes(socket)) {
        socket.async_wait(Socket::wait_read, std::forward<Handler>(handler));
        return;
    }
    using Plain = std::decay_t<Handler>;
    using Op = ad::reactive_wait_op<Plain, Socket::executor_type>;
    Plain h(std::forward<Handler>(handler));
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    typename Op::ptr p = {ad::addressof(h), Op::ptr::allocate(h), nullptr};
    p.p = new (p.v) Op(boost::system::error_code(), h, socket.get_executor());
    ad::epoll_reactor& reactor = internal::reactor_of(*data);
    if (slot.is_connected()) {
        p.p->cancellation_key_ =
            &slot.template emplace<internal::WaitCancellation>(&reactor, &data, socket.native_handle());
    }
    // Speculation allowed: with the flag clear, start_op queues the wait
    // without performing it and without touching epoll.
    reactor.start_op(ad::epoll_reactor::read_op, socket.native_handle(), data, p.p, false, true);
    p.v = p.p = nullptr;
}

// wait_readable for a completion token (use_tuple in a coroutine).
template <class Token>
auto async_wait_readable(Socket& socket, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [&socket](auto handler) { wait_readable(socket, std::move(handler)); }, token);
}

}  // namespace modelproxy::transport::reactor_flag
