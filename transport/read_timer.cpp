#include "transport/read_timer.hpp"

namespace modelproxy::transport {

struct ReadTimer::State {
    explicit State(Socket& s) : socket(&s) {}
    Socket* socket;  // null once the ReadTimer is gone: a late handler must not touch it
    Clock::time_point deadline;
    std::uint64_t wait_id = 0;  // the pending wait; older completions are stale
    bool waiting = false;
    bool armed = false;
    bool fired = false;
};

ReadTimer::ReadTimer(Socket& socket) : timer_(socket.get_executor()), state_(std::make_shared<State>(socket)) {}

ReadTimer::~ReadTimer() { state_->socket = nullptr; }

void ReadTimer::arm_at(Clock::time_point deadline) {
    State& s = *state_;
    s.fired = false;
    s.armed = true;
    s.deadline = deadline;
    if (!s.waiting || timer_.expiry() > s.deadline) wait(timer_, state_);
}

bool ReadTimer::disarm() {
    state_->armed = false;
    return state_->fired;
}

void ReadTimer::wait(Timer& timer, const std::shared_ptr<State>& state) {
    state->waiting = true;
    const std::uint64_t id = ++state->wait_id;
    timer.expires_at(state->deadline);  // a previous wait completes with operation_aborted: stale
    timer.async_wait([&timer, state, id](const boost::system::error_code& ec) {
        if (id != state->wait_id) return;
        state->waiting = false;
        if (ec || state->socket == nullptr || !state->armed) return;
        if (Clock::now() < state->deadline) {
            wait(timer, state);  // re-armed with a later deadline since this wait began
            return;
        }
        state->fired = true;
        state->armed = false;
        boost::system::error_code ignored;
        state->socket->cancel(ignored);
    });
}

}  // namespace modelproxy::transport
