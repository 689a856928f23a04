#include "support/ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

namespace modelproxy::test {

namespace {

// A socket bound to 127.0.0.1:0; returns the fd and the port.
int bind_loopback(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket: " + std::generic_category().message(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        const int err = errno;
        ::close(fd);
        throw std::runtime_error("bind 127.0.0.1:0: " + std::generic_category().message(err));
    }
    port = ntohs(addr.sin_port);
    return fd;
}

}  // namespace

std::uint16_t unused_port() {
    std::uint16_t port = 0;
    ::close(bind_loopback(port));
    return port;
}

SilentListener::SilentListener() {
    fd_ = bind_loopback(port_);
    if (::listen(fd_, 64) != 0) {
        const int err = errno;
        ::close(fd_);
        throw std::runtime_error("listen: " + std::generic_category().message(err));
    }
}

SilentListener::~SilentListener() {
    if (fd_ >= 0) ::close(fd_);
}

}  // namespace modelproxy::test
