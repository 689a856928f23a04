#include "transport/plain_io.hpp"

#include <boost/asio/error.hpp>

#include <sys/socket.h>

#include <cerrno>

namespace modelproxy::transport::plain {

tls::Step read(Socket& socket, boost::asio::mutable_buffer space, std::size_t& n, boost::system::error_code& ec) {
    ec = {};
    n = socket.read_some(space, ec);  // non-blocking: would_block instead of a wait
    if (!ec) return tls::Step::done;
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
        ec = {};
        return tls::Step::want_read;
    }
    return tls::Step::failed;
}

bool quiet(Socket& socket) {
    char byte;
    ssize_t n;
    do {
        n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace modelproxy::transport::plain
