// The one executor type of a worker's I/O, named once for transport/ and
// proxy/: every socket, timer, stream and coroutine of the request path runs
// on its worker's io_context, on that worker's thread only (server.hpp).
//
// Asio's default, any_io_executor, is type-erased: each copy, move and
// destruction goes through its small-object storage, and each completion
// through an extra indirect call. About 5 % of a request's user instructions
// went there. The io_context's own executor is a pointer and some
// bits, and its calls inline.
//
// The default-executor types (tcp::socket, steady_timer, awaitable<T>) still
// suit code off the request path: the probe and the main thread's control
// loop (server.cpp) keep them.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/basic_resolver.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/basic_stream.hpp>

#include <chrono>

namespace modelproxy::transport {

using Executor = boost::asio::io_context::executor_type;

// A coroutine on a worker: co_await it from another Task, or co_spawn it onto
// the worker's io_context (io.get_executor()).
template <class T = void>
using Task = boost::asio::awaitable<T, Executor>;

// Errors as values (STYLE.md point 4): `auto [ec, n] = co_await op(..., use_tuple)`.
inline constexpr boost::asio::use_awaitable_t<Executor> use_task{};
inline constexpr auto use_tuple = boost::asio::as_tuple(use_task);

using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
using Acceptor = boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, Executor>;
using Resolver = boost::asio::ip::basic_resolver<boost::asio::ip::tcp, Executor>;
using Timer = boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                                boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;
// A connect in progress: Beast's timeout over a Socket (transport::connect
// releases the socket once it is connected; TLS is tls_io.hpp's).
using TcpStream = boost::beast::basic_stream<boost::asio::ip::tcp, Executor>;

}  // namespace modelproxy::transport
