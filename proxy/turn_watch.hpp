// The watch that cuts a running turn from outside (run_turn): the client
// hanging up (docs/behaviour.md section 6) or the drain limit (docs/behaviour.md section 11).
#pragma once

#include "transport/executor.hpp"
#include "transport/recycling.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/intrusive/list.hpp>

#include <boost/system/error_code.hpp>

#include <memory>

namespace modelproxy::proxy {

namespace asio = boost::asio;
using transport::Socket;

// What ends a turn from outside: the client hanging up (EOF or reset) or the
// drain limit. Watched with a plain callback and a list, not coroutines raced
// with `||` (which spawns one coroutine per branch and posts several handlers
// per turn). One per client connection, in its ClientWait, each turn in turn.
struct TurnWatch {
    enum class Reason { none, client_left, drain_limit };
    Reason reason = Reason::none;
    bool done = true;                         // no turn runs (none yet, or it ended): nothing is cut
    // The session's cancellation signal (run_session): emitting it cancels
    // whatever the session's coroutine is waiting on, which during a turn is
    // the turn's. Outlives every turn of its session; not used after finish().
    asio::cancellation_signal* turn;

    explicit TurnWatch(asio::cancellation_signal& session) : turn(&session) {}
    // In its worker's list of running turns (TurnWatches) while the turn runs.
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>> running;

    // A turn starts: it is cut from here until finish().
    void begin() {
        reason = Reason::none;
        done = false;
    }
    void cut(Reason why) {
        if (done || reason != Reason::none) return;
        reason = why;
        turn->emit(asio::cancellation_type::terminal);
    }
    // The client wait is left out: it completes, and cuts nothing, when the
    // client's next request arrives, and the session takes it as its wait
    // for that request (ClientWait).
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

// The one wait for readability a client connection has out at a time
// (Socket::async_wait). While a turn runs it is the turn's watch: the client
// is gone when its socket then reads EOF or an error, and the turn is cut;
// pipelined bytes mean it is still there, and nothing more is watched for
// that turn. Once the turn has ended, the same wait is the session's wait
// for the next request (next()).
//
// Why one: Asio re-arms a socket in epoll (an epoll_ctl) for every wait it
// starts with no operation pending on it, and two waits on the same
// readiness cost a second completion, posted behind the reactor, which is a
// scheduler pass and an epoll_wait of its own per keep-alive request. A
// close, an idle timeout (the session's ReadTimer cancels the socket) or a
// reset completes it like any other operation on the socket.
//
// The completion owns the wait's state; the session holds it too except
// while it is parked in next(), so that a worker torn down with the session
// parked frees both (no cycle through the parked coroutine).
class ClientWait {
public:
    ClientWait(const ClientWait&) = delete;
    ClientWait& operator=(const ClientWait&) = delete;

    // `cut` is the session's cancellation signal (TurnWatch::turn).
    explicit ClientWait(asio::cancellation_signal& cut);

    // Starts the wait on `client` unless one is out or came and is not taken.
    void start(Socket& client);
    // A turn begins: the connection's TurnWatch, which the wait's completion
    // cuts when the client has left while the turn runs. Starts the wait.
    TurnWatch& begin_turn(Socket& client);
    // Whether the wait completed and its result is not taken.
    bool came() const { return state_->came; }
    // Its result, taken: the next start() starts a new one.
    boost::system::error_code take() {
        state_->came = false;
        return {state_->error, boost::system::system_category()};
    }
    // Completes when the wait that is out does (then take() its result).
    // Only with a wait out and not come, one at a time.
    template <typename Token>
    auto next(Token&& token) {
        return asio::async_initiate<Token, void()>(
            [this](auto handler) { park(WaiterOf<decltype(handler)>::make(std::move(handler))); }, token);
    }

private:
    // The parked session's completion handler, its type erased (Asio's
    // any_completion_handler in Boost 1.81 wraps itself when moved), in
    // recycled memory; freed by complete() or discard().
    struct Waiter {
        virtual void complete() = 0;
        virtual void discard() = 0;

    protected:
        ~Waiter() = default;
    };
    template <typename Handler>
    struct WaiterOf final : Waiter {
        using Allocator = transport::RecyclingAllocator<WaiterOf>;
        Handler handler;
        explicit WaiterOf(Handler h) : handler(std::move(h)) {}
        static Waiter* make(Handler h) {
            Allocator allocator;
            WaiterOf* w = allocator.allocate(1);
            return new (w) WaiterOf(std::move(h));
        }
        void discard() override {
            this->~WaiterOf();
            Allocator().deallocate(this, 1);
        }
        void complete() override {
            Handler h = std::move(handler);
            discard();
            std::move(h)();
        }
    };
    // Kept small: an open stream holds one.
    struct State {
        explicit State(asio::cancellation_signal& cut) : watch(cut) {}
        ~State() {
            if (waiter) waiter->discard();
        }
        State(const State&) = delete;
        State& operator=(const State&) = delete;
        TurnWatch watch;            // of the turn running, if one is
        bool out = false;           // an async_wait is pending
        bool came = false;          // it completed; `error` is its result, not yet taken
        int error = 0;              // its error's value (the system category's, as a socket's)
        Waiter* waiter = nullptr;   // the parked session's
        ClientWait* home = nullptr;  // where the state goes back when the session is woken
    };
    void park(Waiter* waiter);
    static void complete(const std::shared_ptr<State>& state, int fd, boost::system::error_code ec);

    std::shared_ptr<State> state_;
};

// Cuts every turn in `running` with Reason::drain_limit.
void cut_at_drain_limit(TurnWatches& running);

}  // namespace modelproxy::proxy
