#include "proxy/turn_watch.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace modelproxy::proxy {

void watch_client(Socket& client, const std::shared_ptr<TurnWatch>& watch) {
    client.async_wait(Socket::wait_read, [watch, fd = client.native_handle()](boost::system::error_code ec) {
        if (ec || watch->done) return;
        char byte;
        ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            watch->cut(TurnWatch::Reason::client_left);
    });
}

void cut_at_drain_limit(TurnWatches& running) {
    // cut() only emits the turn's cancellation, whose handlers complete
    // later through the scheduler; the step before each cut would survive
    // that watch unlinking itself anyway.
    for (auto it = running.begin(); it != running.end();) (it++)->cut(TurnWatch::Reason::drain_limit);
}

}  // namespace modelproxy::proxy
