#include "proxy/turn_watch.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace modelproxy::proxy {

ClientWait::ClientWait(asio::cancellation_signal& cut)
    : state_(std::allocate_shared<State>(transport::RecyclingAllocator<State>(), cut)) {}

void ClientWait::start(Socket& client) {
    if (state_->out || state_->came) return;
    state_->out = true;
    client.async_wait(Socket::wait_read, [state = state_, fd = client.native_handle()](boost::system::error_code ec) {
        complete(state, fd, ec);
    });
}

TurnWatch& ClientWait::begin_turn(Socket& client) {
    state_->watch.begin();
    start(client);
    return state_->watch;
}

void ClientWait::park(Waiter* waiter) {
    State& state = *state_;
    state.waiter = waiter;
    state.home = this;
    state_.reset();  // the completion's own reference is the one left
}

void ClientWait::complete(const std::shared_ptr<State>& state, int fd, boost::system::error_code ec) {
    state->out = false;
    state->came = true;
    state->error = !ec ? 0 : ec.category() == boost::system::system_category() ? ec.value() : EIO;
    if (!ec && !state->watch.done) {
        char byte;
        const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            state->watch.cut(TurnWatch::Reason::client_left);
    }
    if (Waiter* waiter = state->waiter) {
        state->waiter = nullptr;
        state->home->state_ = state;
        state->home = nullptr;
        waiter->complete();
    }
}

void cut_at_drain_limit(TurnWatches& running) {
    // cut() only emits the turn's cancellation, whose handlers complete
    // later through the scheduler; the step before each cut would survive
    // that watch unlinking itself anyway.
    for (auto it = running.begin(); it != running.end();) (it++)->cut(TurnWatch::Reason::drain_limit);
}

}  // namespace modelproxy::proxy
