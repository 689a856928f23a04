// A whole write that first gives the socket what it takes at once, and only
// then, for the rest if any, waits asynchronously.
//
// Asio 1.81 completes an async write through the scheduler's queue even when
// its first, speculative send took every byte: one more epoll_wait and one
// more coroutine resume per write. Nearly every write here fits the socket's
// send buffer, so trying a non-blocking send first saves that trip and adds
// no syscall (the send is the one the speculative write would have made).
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>

#include <cstddef>
#include <optional>
#include <utility>

namespace modelproxy::transport {

// The write's first step alone, a non-blocking send of all of `buffers` on
// `socket`: the result when that settled it (every byte taken, or an error
// other than would-block), nullopt when the rest must wait. `taken` is the
// bytes the socket took. Only a socket set non_blocking(true) is tried: a
// blocking one would stall the worker (then nothing is taken).
//
// Callers try this before awaiting write_rest: a coroutine called and awaited
// costs a frame and two resumptions even when it never suspends, and nearly
// every write here is settled by this step.
template <class Buffers>
std::optional<std::pair<boost::system::error_code, std::size_t>> write_at_once(Socket& socket, const Buffers& buffers,
                                                                              std::size_t& taken) {
    taken = 0;
    if (!socket.non_blocking()) return std::nullopt;
    boost::system::error_code ec;
    taken = socket.write_some(buffers, ec);
    if (!ec && taken == boost::asio::buffer_size(buffers)) return std::pair{ec, taken};
    if (ec && ec != boost::asio::error::would_block && ec != boost::asio::error::try_again) return std::pair{ec, taken};
    return std::nullopt;
}

// What write_at_once left: the bytes after the first `taken`, written to
// `stream` (the same socket, or a layer over it that bounds the wait, like
// Beast's basic_stream). Returns the error, if any, and all bytes written.
template <class AsyncStream, class Buffers>
Task<std::pair<boost::system::error_code, std::size_t>> write_rest(AsyncStream& stream, const Buffers& buffers,
                                                                  std::size_t taken) {
    boost::beast::buffers_suffix<Buffers> rest(buffers);
    rest.consume(taken);
    auto [ec, n] = co_await boost::asio::async_write(stream, rest, use_tuple);
    co_return std::pair{ec, taken + n};
}

// Both steps on a bare socket, for the writes off the per-request path (its
// rest waits unbounded, or as the caller's own timer bounds it).
template <class Buffers>
Task<std::pair<boost::system::error_code, std::size_t>> write_now(Socket& socket, const Buffers& buffers) {
    std::size_t taken = 0;
    if (auto settled = write_at_once(socket, buffers, taken)) co_return *settled;
    co_return co_await write_rest(socket, buffers, taken);
}

}  // namespace modelproxy::transport
