// The head hold ticker that races a stream turn (TurnRun::run_with_ticker).
// Kept apart from the relay (stream_relay.cpp): it shares only the turn's
// phase with a stream attempt.
#include "proxy/response_head.hpp"
#include "proxy/turn_run.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

namespace modelproxy::proxy {

// docs/behaviour.md section 7's head hold limit: a stream turn that has
// published nothing after stream_head_hold_ms (waits and throttles included)
// publishes its head and then a `: keep-alive` comment every 10 s, so load
// balancers and client header timeouts do not cut it. Events stay held: a
// replay is still invisible until answer text. Never completes by itself
// (it is one side of run_with_ticker's race); it goes quiet once the phase
// leaves head_out (answer text is out, or the turn ended).
Task<void> TurnRun::hold_ticker() {
    co_await asio::this_coro::throw_if_cancelled(false);
    Timer timer(client_.get_executor());
    timer.expires_at(plan_.started + std::chrono::milliseconds(route_->stream_head_hold_ms));
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (!ec && phase_ == Phase::held) co_await hold_head(timer);
    // A wait started after the race's cancellation is never cancelled: check
    // first, or the turn would never end.
    if (co_await cut()) co_return;
    // docs/behaviour.md section 16: on a route that may resume a cut stream,
    // a `: keep-alive` every 10 s while a resume catches up (nothing else
    // reaches the client then).
    while (route_->resume.enabled) {
        timer.expires_after(std::chrono::seconds(10));
        auto [tec] = co_await timer.async_wait(use_tuple);
        if (tec || co_await cut()) co_return;
        if (catching_up() && !client_gone_ && !co_await write_chunk(": keep-alive\n\n")) co_return;
    }
    timer.expires_at(Timer::time_point::max());
    co_await timer.async_wait(use_tuple);
}

// The hold limit's head, then its keep-alives while the phase stays
// head_out; returns when the head is out of that phase, a write failed, the
// timer was cancelled or the turn was cut (hold_ticker then checks cut()
// again). Its own coroutine, so that the head and its text live in a frame
// freed when the head is out: hold_ticker's frame lives as long as the
// stream, and holds little.
Task<void> TurnRun::hold_head(Timer& timer) {
    release_head();
    ResponseHead head(200);
    head.add("content-type", "text/event-stream");
    head.add("cache-control", "no-cache");
    // The answering candidate is not known yet: the requested model and its
    // first deployment (docs/behaviour.md section 13).
    if (head_named_) {
        head.add_modelproxy(replays_.attempts(), plan_.request_id, head_named_->client_model,
                            plan_.runtime->config.routes[head_named_->route].name);
    } else {
        head.add_modelproxy(replays_.attempts(), plan_.request_id, plan_.client_model, route_->name);
    }
    stream_framing(head);
    std::string text = head.finish();
    bool ok = co_await write(text);
    while (ok && phase_ == Phase::head_out) {
        ok = co_await write_chunk(": keep-alive\n\n");
        if (co_await cut()) co_return;
        timer.expires_after(std::chrono::seconds(10));
        auto [tec] = co_await timer.async_wait(use_tuple);
        if (tec) break;
    }
}

Task<bool> TurnRun::run_with_ticker() {
    using namespace boost::asio::experimental::awaitable_operators;
    co_await asio::this_coro::throw_if_cancelled(false);
    auto result = co_await (run() || hold_ticker());
    co_return result.index() == 0 && std::get<0>(result);  // the ticker never ends by itself
}

}  // namespace modelproxy::proxy
