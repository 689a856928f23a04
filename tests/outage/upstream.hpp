// A fake OpenAI-compatible provider for the outage simulation: an HTTP/1.1
// server on 127.0.0.1, port 0, running on the caller's io_context. Every
// request (any path) is answered by the phase its timeline is in when the
// request has been read: healthy answers a chat completion naming the model
// the request asked for, with `usage` (an SSE stream ending in `[DONE]` when
// the body holds `"stream":true`, else one JSON object); the down phases
// answer 503, never answer, or reset the connection (timeline.hpp). Without
// a timeline it is always healthy (the fallback).
//
// It records every request it read: when, in which phase, how it ended and
// when (for the silent phase: when the peer closed). From those the report
// counts requests per second and the most in flight at once.
//
// The HTTP skeleton is http_server.hpp's. Threading: the server runs on its io_context's thread; requests() may be
// called from any thread.
#pragma once

#include "outage/http_server.hpp"
#include "outage/timeline.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::outage {

struct Served {
    double arrive_ms = 0;               // the request read whole
    std::optional<double> end_ms;       // the answer written, the reset done, or the peer gone
    Phase phase = Phase::healthy;
    unsigned status = 0;                // 200 or 503; 0 for silent and reset
};

class Upstream {
public:
    // Listens at once; serving starts when the io_context runs. `timeline`
    // empty: always healthy. Throws when it cannot listen.
    Upstream(boost::asio::io_context& io, std::string name, std::optional<Timeline> timeline);
    ~Upstream();
    Upstream(const Upstream&) = delete;
    Upstream& operator=(const Upstream&) = delete;

    // The run's start: the timeline and every recorded time count from it.
    // Set before the load begins; requests before it are healthy.
    void set_start(Clock::time_point t0);

    std::uint16_t port() const { return port_; }
    const std::string& name() const { return name_; }
    std::vector<Served> requests() const;  // snapshot, in arrival order

    struct State;  // the server's, shared with its coroutines

private:
    std::string name_;
    std::uint16_t port_ = 0;
    std::shared_ptr<State> state_;
    std::unique_ptr<HttpServer> server_;
};

}  // namespace modelproxy::outage
