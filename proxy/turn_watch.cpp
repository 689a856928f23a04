#include "proxy/turn_watch.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>

#include <sys/socket.h>

#include <cerrno>

namespace modelproxy::proxy {

void watch_client(Socket& client, const std::shared_ptr<TurnWatch>& watch) {
    client.async_wait(Socket::wait_read,
                      asio::bind_cancellation_slot(watch->client_wait.slot(),
                                                   [watch, fd = client.native_handle()](boost::system::error_code ec) {
        if (ec || watch->done) return;
        char byte;
        ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            watch->cut(TurnWatch::Reason::client_left);
    }));
}

void watch_drain_limit(Timer& drain_limit, const std::shared_ptr<TurnWatch>& watch) {
    // The worker's drain_limit timer never expires; end_turns() cancels it,
    // completing every wait with operation_aborted. A turn that ends first
    // withdraws its wait through drain_wait (also operation_aborted, but then
    // `done` is set).
    drain_limit.async_wait(asio::bind_cancellation_slot(watch->drain_wait.slot(),
                                                        [watch](boost::system::error_code) {
        if (!watch->done) watch->cut(TurnWatch::Reason::drain_limit);
    }));
}

}  // namespace modelproxy::proxy
