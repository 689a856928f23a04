// The watch that cuts a running turn from outside (run_turn): the client
// hanging up (SPEC section 6) or the drain limit (SPEC section 11).
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/cancellation_signal.hpp>

#include <memory>

namespace modelproxy::proxy {

namespace asio = boost::asio;
using transport::Socket;
using transport::Timer;

// What ends a turn from outside: the client hanging up (EOF or reset) or the
// drain limit. Watched with two plain callbacks, not coroutines raced with
// `||` (which spawns one coroutine per branch and posts several handlers per
// turn). Shared with those callbacks, which may run after the turn is gone.
struct TurnWatch {
    enum class Reason { none, client_left, drain_limit };
    Reason reason = Reason::none;
    bool done = false;                        // the turn has ended: callbacks do nothing
    asio::cancellation_signal turn;           // cuts the turn (its awaits complete at once)
    asio::cancellation_signal client_wait;    // withdraws the client watch
    asio::cancellation_signal drain_wait;     // withdraws the drain-limit wait

    void cut(Reason why) {
        if (done || reason != Reason::none) return;
        reason = why;
        turn.emit(asio::cancellation_type::terminal);
    }
    void finish() {
        done = true;
        client_wait.emit(asio::cancellation_type::terminal);
        drain_wait.emit(asio::cancellation_type::terminal);
    }
};

// The client is gone when its socket reads EOF or an error. Pipelined bytes
// mean it is still there: then nothing more is watched for this turn.
void watch_client(Socket& client, const std::shared_ptr<TurnWatch>& watch);
// The worker's drain_limit timer: end_turns() cancels it.
void watch_drain_limit(Timer& drain_limit, const std::shared_ptr<TurnWatch>& watch);

}  // namespace modelproxy::proxy
