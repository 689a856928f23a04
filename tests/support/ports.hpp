// Addresses that misbehave at the TCP level, for connect-failure tests.
#pragma once

#include <cstdint>

namespace modelproxy::test {

// A 127.0.0.1 port with nothing listening: bound to port 0 and released, so a
// connect to it is refused. (Another process could take it in between; on a
// test machine that window is negligible.)
std::uint16_t unused_port();

// Listens on 127.0.0.1:0 and never accepts or reads: the kernel completes TCP
// handshakes (up to the backlog), then nothing is ever said, so a client's TLS
// handshake or request waits until its own timeout. Closes on destruction.
class SilentListener {
public:
    SilentListener();  // throws std::runtime_error when it cannot listen
    ~SilentListener();
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;

    std::uint16_t port() const { return port_; }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

}  // namespace modelproxy::test
