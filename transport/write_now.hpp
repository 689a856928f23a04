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
#include <utility>

namespace modelproxy::transport {

// Writes all of `buffers` to `socket`, then to `stream` (the same socket, or
// a layer over it that bounds the wait, like Beast's basic_stream) what the
// socket did not take at once. Only a socket set non_blocking(true) is tried
// at once: a blocking one would stall the worker. Returns the error, if any,
// and the bytes written.
template <class AsyncStream, class Buffers>
Task<std::pair<boost::system::error_code, std::size_t>> write_now(Socket& socket, AsyncStream& stream,
                                                                 const Buffers& buffers) {
    boost::system::error_code ec;
    std::size_t n = 0;
    if (socket.non_blocking()) {
        n = socket.write_some(buffers, ec);
        if (!ec && n == boost::asio::buffer_size(buffers)) co_return std::pair{ec, n};
        if (ec && ec != boost::asio::error::would_block && ec != boost::asio::error::try_again)
            co_return std::pair{ec, n};
    }
    boost::beast::buffers_suffix<Buffers> rest(buffers);
    rest.consume(n);
    auto [wec, m] = co_await boost::asio::async_write(stream, rest, use_tuple);
    co_return std::pair{wec, n + m};
}

// The same, on a bare socket (its rest waits unbounded, or as the caller's
// own timer bounds it).
template <class Buffers>
Task<std::pair<boost::system::error_code, std::size_t>> write_now(Socket& socket, const Buffers& buffers) {
    return write_now(socket, socket, buffers);
}

}  // namespace modelproxy::transport
