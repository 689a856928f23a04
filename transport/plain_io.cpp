#include "transport/plain_io.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace modelproxy::transport::plain {

bool quiet(Socket& socket) {
    char byte;
    ssize_t n;
    do {
        n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace modelproxy::transport::plain
