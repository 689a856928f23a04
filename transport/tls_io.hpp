// TLS on an upstream connection's own socket: OpenSSL reads and writes the
// file descriptor itself (SSL_set_fd on the non-blocking socket), and the
// worker's reactor is asked only to wait until the socket is ready, when
// OpenSSL says it must (docs/behaviour.md section 4: HTTPS upstreams, verified).
//
// Why not Asio's ssl::stream (under Beast's ssl_stream): it runs OpenSSL over
// a pair of memory BIOs and copies every byte between them and its own
// buffers, clears OpenSSL's error queue around every call, and adds a
// composed operation per read and write; with Beast's flat_stream and
// basic_stream on top, TLS doubled the instructions of a small request.
// Here a read is SSL_read_ex into the connection's read buffer, a write is
// SSL_write_ex from the request's own bytes, and nothing else.
//
// Every function here is one non-blocking step and returns what it needs
// next; the caller's coroutine waits for readiness (Socket::async_wait),
// bounded by the connection's ReadTimer, and steps again. Threading: one
// connection, one worker thread.
#pragma once

#include "transport/executor.hpp"

#include <boost/system/error_code.hpp>

#include <openssl/ssl.h>

#include <cstddef>
#include <memory>

namespace modelproxy::transport::tls {

// Owns an SSL object.
struct SslFree {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
};
using SslPtr = std::unique_ptr<SSL, SslFree>;

// What a step came to: finished, or waiting for the socket to be readable or
// writable (then step again), or failed (`ec` says how).
enum class Step { done, want_read, want_write, failed };

// SSL_do_handshake, once.
Step handshake(SSL* ssl, boost::system::error_code& ec);
// SSL_read_ex into [data, data + size), once: `n` > 0 bytes when done. The
// peer's close_notify is asio::error::eof; a close without it (a truncated
// stream) is asio::ssl::error::stream_truncated; a reset is the socket's
// error.
Step read(SSL* ssl, void* data, std::size_t size, std::size_t& n, boost::system::error_code& ec);
// SSL_write_ex of [data, data + size), once: `n` bytes were taken when done
// (at least one record's worth, or all; the connection is in
// SSL_MODE_ENABLE_PARTIAL_WRITE). After want_write, the same bytes must be
// written again (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER lets them move).
Step write(SSL* ssl, const void* data, std::size_t size, std::size_t& n, boost::system::error_code& ec);

// What to wait for on the socket (Socket::async_wait) before the next step,
// after want_read or want_write. The caller awaits it in its own coroutine:
// a coroutine of its own per wait would cost a frame and two resumptions.
inline Socket::wait_type wait_for(Step step) {
    return step == Step::want_write ? Socket::wait_write : Socket::wait_read;
}

// Whether OpenSSL holds bytes of the connection already read from the
// socket (decrypted, or a record in progress): a pooled connection with any
// is not idle.
bool holds_input(SSL* ssl);

// A new client connection's SSL object on `socket`'s descriptor, in the
// connect state, with partial writes, moving write buffers, released
// buffers (an idle connection holds no TLS buffers) and read-ahead; null
// when OpenSSL cannot make one.
SslPtr make_client(SSL_CTX* context, Socket& socket);

}  // namespace modelproxy::transport::tls
