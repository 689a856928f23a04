// TLS on an upstream connection's own socket: OpenSSL writes the file
// descriptor itself (a socket BIO on the non-blocking socket) and reads
// either the descriptor too or, for an upstream connection, an Input the
// worker's reactor fills (docs/behaviour.md section 4: HTTPS upstreams,
// verified).
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
// next; the caller's coroutine reads the socket into the Input (want_read)
// or waits for it to be writable (want_write), bounded by the connection's
// ReadTimer, and steps again. Threading: one connection, one worker thread.
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/buffer.hpp>
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

// The bytes the reactor read from an upstream connection's socket that
// OpenSSL has not taken yet; the connection's SSL object reads them through
// a BIO of tls_io.cpp's own.
//
// Why not let OpenSSL read the descriptor and wait for readability
// (Socket::async_wait): Asio re-arms the descriptor's epoll registration
// (an epoll_ctl) for every such wait. An async_read_some issued after a read
// that drained the socket is queued with no system call at all, and the
// read the reactor does when bytes come is the only one; on a short answer
// that is one system call fewer per request.
//
// Bytes are copied once more than by a socket BIO (from here into
// OpenSSL's record buffer); the room is allocated on first use and only the
// part reads write is ever touched.
class Input {
public:
    // One TLS record and more: a read takes what the socket holds, as
    // OpenSSL's read-ahead did.
    static constexpr std::size_t capacity = 16 * 1024 + 2048;

    // Where the next read from the socket goes: the room after the bytes not
    // yet taken (moved to the front first). Never empty.
    boost::asio::mutable_buffer room();
    // What that read came to: its `n` bytes are kept, and the socket's end
    // of stream is noted (OpenSSL then reads the end: close_notify or not,
    // as with a socket); any other error is returned for the caller.
    boost::system::error_code took(boost::system::error_code ec, std::size_t n);
    // Bytes not yet taken by OpenSSL.
    std::size_t size() const { return end_ - begin_; }
    // For the BIO: up to `want` bytes into `out`; how many.
    std::size_t take(char* out, std::size_t want);
    // For the BIO: the end of stream was read and every byte before it taken.
    bool ended() const { return ended_ && size() == 0; }

private:
    std::unique_ptr<char[]> data_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    bool ended_ = false;
};

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
// after want_read or want_write, for an SSL object that reads the socket
// itself (made without an Input). The caller awaits it in its own
// coroutine: a coroutine of its own per wait would cost a frame and two
// resumptions.
inline Socket::wait_type wait_for(Step step) {
    return step == Step::want_write ? Socket::wait_write : Socket::wait_read;
}

// Whether OpenSSL, or the Input it reads when it has one, holds bytes of the
// connection already read from the socket (decrypted, or a record in
// progress): a pooled connection with any is not idle.
bool holds_input(SSL* ssl, const Input* input = nullptr);

// A new client connection's SSL object on `socket`'s descriptor, in the
// connect state, with partial writes, moving write buffers, released
// buffers (an idle connection holds no TLS buffers) and read-ahead; null
// when OpenSSL cannot make one. With `input` (which must outlive it) it
// reads from there, and the caller fills it on want_read; without, it
// reads the descriptor and the caller waits on want_read (wait_for).
SslPtr make_client(SSL_CTX* context, Socket& socket, Input* input = nullptr);

}  // namespace modelproxy::transport::tls
