// The watch that cuts a running turn from outside (run_turn): the client
// hanging up (docs/behaviour.md section 6) or the drain limit (docs/behaviour.md section 11).
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/intrusive/list.hpp>

#include <memory>

namespace modelproxy::proxy {

namespace asio = boost::asio;
using transport::Socket;

// What ends a turn from outside: the client hanging up (EOF or reset) or the
// drain limit. Watched with a plain callback and a list, not coroutines raced
// with `||` (which spawns one coroutine per branch and posts several handlers
// per turn). Shared with the client callback, which may run after the turn is
// gone.
struct TurnWatch {
    enum class Reason { none, client_left, drain_limit };
    Reason reason = Reason::none;
    bool done = false;                        // the turn has ended: callbacks do nothing
    // The session's cancellation signal (run_session): emitting it cancels
    // whatever the session's coroutine is waiting on, which during a turn is
    // the turn's. Outlives every turn of its session; not used after finish().
    asio::cancellation_signal* turn;

    explicit TurnWatch(asio::cancellation_signal& session) : turn(&session) {}
    // In its worker's list of running turns (TurnWatches) while the turn runs.
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>> running;

    void cut(Reason why) {
        if (done || reason != Reason::none) return;
        reason = why;
        turn->emit(asio::cancellation_type::terminal);
    }
    // The client watch is left waiting: it completes, and does nothing, when
    // the client's next request arrives, and the session's wait for that
    // request joins it (watch_client).
    void finish() {
        done = true;
        running.unlink();
    }
};

// A worker's running turns, which its drain limit cuts (Worker::end_turns).
// A list, not a wait on a timer per turn: that wait cost a timer insert, a
// cancellation and a posted handler per turn (about 2 % of a request's
// instructions). Unlinked by finish(), or by the watch's destruction.
using TurnWatches = boost::intrusive::list<
    TurnWatch,
    boost::intrusive::member_hook<TurnWatch, decltype(TurnWatch::running), &TurnWatch::running>,
    boost::intrusive::constant_time_size<false>>;

// The client is gone when its socket reads EOF or an error. Pipelined bytes
// mean it is still there: then nothing more is watched for this turn.
//
// The wait is not withdrawn when the turn ends. Asio re-arms the socket in
// epoll (an epoll_ctl system call) for every wait it starts on a socket with
// no operation pending, since an edge-triggered readiness may have been
// spent; with this one still pending, the session's wait for the next
// request is queued behind it with no system call, and both complete on the
// same readiness: one epoll_ctl less per keep-alive request. A
// close, an idle timeout or a reset completes it like any other operation
// on the socket.
void watch_client(Socket& client, const std::shared_ptr<TurnWatch>& watch);
// Cuts every turn in `running` with Reason::drain_limit.
void cut_at_drain_limit(TurnWatches& running);

}  // namespace modelproxy::proxy
