// The load simulation's fake provider: an OpenAI-compatible HTTP/1.1 server
// on 127.0.0.1, port 0, running on the caller's io_context. Every request
// (any path) is answered by its timeline (timeline.hpp) when it has been
// read: down, 503 with an OpenAI error body and no rate-limit headers;
// otherwise the rate window (rate_window.hpp) admits it, answered 200 after
// a service time drawn uniformly from 0.5..1.5 x service_ms (a fixed seed,
// so each row draws the same sequence; not one fixed time, so that callers
// served together do not come back together) with a chat completion naming the requested model (an SSE
// stream ending in `[DONE]` when the body holds `"stream":true`, else one
// JSON object), or refuses it, answered 429 at once with OpenAI's
// rate_limit_exceeded body and `Retry-After: 1`. Both carry
// x-ratelimit-limit-requests, x-ratelimit-remaining-requests and
// x-ratelimit-reset-requests (Go duration) from the window's state when the
// answer is written.
//
// It records every request it read: when it arrived and the status it was
// given. The HTTP skeleton is outage/http_server.hpp's. Threading: the
// server runs on its io_context's thread; attempts() may be called from
// any thread.
#pragma once

#include "load/rate_window.hpp"
#include "outage/http_server.hpp"
#include "load/timeline.hpp"

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace modelproxy::load {

struct Attempt {
    double arrive_ms = 0;  // the request read whole, since t0
    unsigned status = 0;   // 200, 429 or 503
};

class Provider {
public:
    // Listens at once; serving starts when the io_context runs. Throws when
    // it cannot listen.
    Provider(boost::asio::io_context& io, Timeline timeline, RateWindow window, double service_ms);
    ~Provider();
    Provider(const Provider&) = delete;
    Provider& operator=(const Provider&) = delete;

    // The run's start: the timeline, the windows and every recorded time
    // count from it. Set before the load begins.
    void set_start(Clock::time_point t0);

    std::uint16_t port() const { return port_; }
    std::vector<Attempt> attempts() const;  // snapshot, in arrival order

    struct State;  // the server's, shared with its coroutines

private:
    std::uint16_t port_ = 0;
    std::shared_ptr<State> state_;
    std::unique_ptr<outage::HttpServer> server_;
};

}  // namespace modelproxy::load
