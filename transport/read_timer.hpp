// Bounds reads on a socket: when the time runs out before the read
// completes, the socket's pending operations are cancelled (the socket stays
// open, so a client can still be sent a 408). Used for client reads
// (proxy/session.cpp) and plain-TCP upstream reads (upstream.cpp).
//
// One timer per connection instead of racing every read against a timer with
// `||` (two coroutines and several posted handlers per read), or Beast's
// basic_stream expiry (a timer wait, a cancellation and a posted handler per
// read). The timer is lazy: arming with a later deadline than the pending
// wait's does not touch it (no timer operation per read); when it fires early
// it waits again until the current deadline, and once disarmed it simply
// stops at its next expiry.
#pragma once

#include "transport/executor.hpp"

#include <chrono>
#include <cstdint>
#include <memory>

namespace modelproxy::transport {

class ReadTimer {
public:
    using Clock = std::chrono::steady_clock;

    explicit ReadTimer(Socket& socket);
    ~ReadTimer();
    ReadTimer(const ReadTimer&) = delete;
    ReadTimer& operator=(const ReadTimer&) = delete;

    void arm(std::chrono::milliseconds limit) { arm_at(Clock::now() + limit); }
    void arm_at(Clock::time_point deadline);
    // Stops the clock. True when it ran out and cancelled the read.
    bool disarm();

private:
    struct State;
    static void wait(Timer& timer, const std::shared_ptr<State>& state);

    Timer timer_;
    std::shared_ptr<State> state_;
};

}  // namespace modelproxy::transport
