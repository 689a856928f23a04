#include "proxy/turn_watch.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace modelproxy::proxy {

ClientWait::ClientWait()
    : state_(std::allocate_shared<State>(transport::RecyclingAllocator<State>())) {}

void ClientWait::start(Socket& client) {
    if (state_->out || state_->came) return;
    state_->out = true;
    client.async_wait(Socket::wait_read, [state = state_, fd = client.native_handle()](boost::system::error_code ec) {
        complete(state, fd, ec);
    });
}

void ClientWait::watch(Socket& client, std::shared_ptr<TurnWatch> watch) {
    state_->watch = std::move(watch);
    start(client);
}

void ClientWait::park(std::shared_ptr<Waiter> waiter) {
    State& state = *state_;
    state.waiter = std::move(waiter);
    state.home = this;
    state_.reset();  // the completion's own reference is the one left
}

void ClientWait::complete(const std::shared_ptr<State>& state, int fd, boost::system::error_code ec) {
    state->out = false;
    state->came = true;
    state->ec = ec;
    if (std::shared_ptr<TurnWatch> watch = std::move(state->watch); watch && !ec && !watch->done) {
        char byte;
        const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            watch->cut(TurnWatch::Reason::client_left);
    }
    if (state->waiter) {
        state->home->state_ = state;
        state->home = nullptr;
        const std::shared_ptr<Waiter> waiter = std::move(state->waiter);
        state->came = false;  // taken by the waiter
        waiter->complete(ec);
    }
}

void cut_at_drain_limit(TurnWatches& running) {
    // cut() only emits the turn's cancellation, whose handlers complete
    // later through the scheduler; the step before each cut would survive
    // that watch unlinking itself anyway.
    for (auto it = running.begin(); it != running.end();) (it++)->cut(TurnWatch::Reason::drain_limit);
}

}  // namespace modelproxy::proxy
