#include "transport/tls_io.hpp"

#include "transport/tls_sessions.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include <openssl/bio.h>
#include <openssl/err.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

// The BIO an upstream connection's SSL object reads from: its Input, which
// the connection's coroutine fills. No bytes yet is a retry (OpenSSL's
// want_read); the end of stream is a read of nothing that is not one, and
// BIO_eof then says so, as a socket BIO's would.
int input_read(BIO* bio, char* out, std::size_t want, std::size_t* got) {
    auto* input = static_cast<Input*>(BIO_get_data(bio));
    BIO_clear_retry_flags(bio);
    *got = input->take(out, want);
    if (*got > 0) return 1;
    if (!input->ended()) BIO_set_retry_read(bio);
    return 0;
}

long input_ctrl(BIO* bio, int command, long, void*) {
    const auto* input = static_cast<const Input*>(BIO_get_data(bio));
    switch (command) {
        case BIO_CTRL_FLUSH: return 1;
        case BIO_CTRL_EOF: return input->ended() ? 1 : 0;
        case BIO_CTRL_PENDING: return static_cast<long>(input->size());
        default: return 0;
    }
}

int input_create(BIO* bio) {
    BIO_set_init(bio, 1);
    return 1;
}

// Made once per process; lives as long as it (OpenSSL's own methods do too).
const BIO_METHOD* input_method() {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "modelproxy upstream input");
        if (m) {
            BIO_meth_set_read_ex(m, input_read);
            BIO_meth_set_ctrl(m, input_ctrl);
            BIO_meth_set_create(m, input_create);
        }
        return m;
    }();
    return method;
}

}  // namespace

boost::asio::mutable_buffer Input::room() {
    if (!data_) data_ = std::make_unique_for_overwrite<char[]>(capacity);
    if (begin_ == end_) {
        begin_ = end_ = 0;
    } else if (end_ == capacity) {
        std::memmove(data_.get(), data_.get() + begin_, size());
        end_ -= begin_;
        begin_ = 0;
    }
    return {data_.get() + end_, capacity - end_};
}

boost::system::error_code Input::took(boost::system::error_code ec, std::size_t n) {
    end_ += n;
    if (ec == asio::error::eof) {
        ended_ = true;
        return {};
    }
    return ec;
}

std::size_t Input::take(char* out, std::size_t want) {
    const std::size_t n = std::min(want, size());
    if (n > 0) std::memcpy(out, data_.get() + begin_, n);
    begin_ += n;
    return n;
}

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

bool holds_input(SSL* ssl, const Input* input) {
    return (input && input->size() > 0) || SSL_has_pending(ssl) == 1;
}

SslPtr make_client(SSL_CTX* context, Socket& socket, Input* input) {
    SslPtr ssl(SSL_new(context));
    if (!ssl) {
        ERR_clear_error();
        return nullptr;
    }
    const int fd = static_cast<int>(socket.native_handle());
    if (input) {
        const BIO_METHOD* method = input_method();
        BIO* reads = method ? BIO_new(method) : nullptr;
        BIO* writes = reads ? BIO_new_socket(fd, BIO_NOCLOSE) : nullptr;
        if (!writes) {
            BIO_free(reads);
            ERR_clear_error();
            return nullptr;
        }
        BIO_set_data(reads, input);
        SSL_set0_rbio(ssl.get(), reads);  // each owned by the SSL object from here
        SSL_set0_wbio(ssl.get(), writes);
    } else if (SSL_set_fd(ssl.get(), fd) != 1) {
        ERR_clear_error();
        return nullptr;
    }
    SSL_set_mode(ssl.get(),
                 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    // A read takes what the socket (or the Input) holds, not a record's
    // 5-byte header and then its body: one read per answer instead of two
    // per record.
    SSL_set_read_ahead(ssl.get(), 1);
    SSL_set_connect_state(ssl.get());
    return ssl;
}

}  // namespace modelproxy::transport::tls
