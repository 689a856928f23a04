#include "transport/tls_io.hpp"

#include "transport/tls_sessions.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include <openssl/err.h>

#include <cerrno>

namespace modelproxy::transport::tls {

namespace asio = boost::asio;

namespace {

// The step an SSL call that did not complete (`ret` <= 0) came to. OpenSSL's
// error queue is left empty, as every call here expects to find it: a
// failure drains it into `ec`.
Step step_of(SSL* ssl, int ret, int saved_errno, boost::system::error_code& ec) {
    switch (SSL_get_error(ssl, ret)) {
        case SSL_ERROR_WANT_READ: return Step::want_read;
        case SSL_ERROR_WANT_WRITE: return Step::want_write;
        case SSL_ERROR_ZERO_RETURN:
            ec = asio::error::eof;  // close_notify: a clean end
            return Step::failed;
        case SSL_ERROR_SYSCALL: {
            const unsigned long queued = ERR_get_error();
            ERR_clear_error();
            if (queued != 0) {
                ec = boost::system::error_code(static_cast<int>(queued), asio::error::get_ssl_category());
            } else if (saved_errno != 0) {
                ec = boost::system::error_code(saved_errno, boost::system::system_category());
            } else {
                ec = asio::ssl::error::stream_truncated;  // the peer closed without close_notify
            }
            return Step::failed;
        }
        default: {
            const unsigned long queued = ERR_peek_error();
            const bool truncated = ERR_GET_REASON(queued) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
            ec = truncated ? boost::system::error_code(asio::ssl::error::stream_truncated)
                           : boost::system::error_code(static_cast<int>(queued), asio::error::get_ssl_category());
            ERR_clear_error();
            if (!truncated) forget_session(ssl);  // a protocol failure, with a fatal alert
            return Step::failed;
        }
    }
}

}  // namespace

Step handshake(SSL* ssl, boost::system::error_code& ec) {
    errno = 0;
    const int ret = SSL_do_handshake(ssl);
    if (ret == 1) return Step::done;
    return step_of(ssl, ret, errno, ec);
}

Step read(SSL* ssl, void* data, std::size_t size, std::size_t& n, boost::system::error_code& ec) {
    n = 0;
    errno = 0;
    const int ret = SSL_read_ex(ssl, data, size, &n);
    if (ret == 1) return Step::done;
    return step_of(ssl, ret, errno, ec);
}

Step write(SSL* ssl, const void* data, std::size_t size, std::size_t& n, boost::system::error_code& ec) {
    n = 0;
    errno = 0;
    const int ret = SSL_write_ex(ssl, data, size, &n);
    if (ret == 1) return Step::done;
    return step_of(ssl, ret, errno, ec);
}

bool holds_input(SSL* ssl) { return SSL_has_pending(ssl) == 1; }

SslPtr make_client(SSL_CTX* context, Socket& socket) {
    SslPtr ssl(SSL_new(context));
    if (!ssl) {
        ERR_clear_error();
        return nullptr;
    }
    if (SSL_set_fd(ssl.get(), static_cast<int>(socket.native_handle())) != 1) {
        ERR_clear_error();
        return nullptr;
    }
    SSL_set_mode(ssl.get(),
                 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    // A read takes what the socket holds, not a record's 5-byte header and
    // then its body: one read() per answer instead of two per record.
    SSL_set_read_ahead(ssl.get(), 1);
    SSL_set_connect_state(ssl.get());
    return ssl;
}

}  // namespace modelproxy::transport::tls
