// The fleet simulation's fake provider: an OpenAI-compatible HTTP/1.1
// server on 127.0.0.1, port 0, running on the caller's io_context (a thread
// of its own in the driver). Every request (any path) is counted, when it
// has been read, against the provider's per-minute quota (minute_window.hpp,
// on the wall clock's seconds): admitted, it is answered 200 after a service
// time drawn uniformly from min_service_ms..max_service_ms (a fixed seed, so
// each row draws the same sequence) with a chat completion naming the
// requested model and carrying `usage` (prompt_tokens + completion_tokens);
// refused, it is answered 429 at once with OpenAI's rate_limit_exceeded body
// and `Retry-After: 1`, as tests/load's provider does. (Not the time until
// the window has room, up to a minute: callers that honour that would stop
// sending for the rest of the minute and keep the provider under its quota
// themselves, hiding a fleet that sends too much; x-ratelimit-reset-requests
// carries that time.) Both carry x-ratelimit-limit-requests,
// x-ratelimit-remaining-requests and x-ratelimit-reset-requests (Go
// duration) from the window's state when the answer is written.
//
// It records every request it read: when it arrived, the status it was
// given, the tokens its `usage` billed and the quota bucket it fell in. The
// HTTP skeleton is outage/http_server.hpp's. Threading: the server runs on
// its io_context's thread; attempts() may be called from any thread.
#pragma once

#include "fleet/minute_window.hpp"
#include "fleet/timeline.hpp"
#include "outage/http_server.hpp"

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace modelproxy::fleet {

struct Attempt {
    double arrive_ms = 0;     // the request read whole, since t0
    unsigned status = 0;      // 200 or 429
    std::int64_t tokens = 0;  // a 200's usage.total_tokens; 0 for a 429
    std::int64_t second = 0;  // the wall clock's second it was counted in (the quota's bucket)
};

struct ProviderSpec {
    std::int64_t requests_per_minute = 6000;  // Q
    double min_service_ms = 50;
    double max_service_ms = 150;
    int prompt_tokens = 50;                   // every 200's usage
    int completion_tokens = 20;
};

class Provider {
public:
    // Listens at once; serving starts when the io_context runs. Throws when
    // it cannot listen.
    Provider(boost::asio::io_context& io, ProviderSpec spec);
    ~Provider();
    Provider(const Provider&) = delete;
    Provider& operator=(const Provider&) = delete;

    // The run's start: every recorded time counts from it. Set before the
    // load begins.
    void set_start(Clock::time_point t0);

    std::uint16_t port() const { return port_; }
    std::vector<Attempt> attempts() const;  // snapshot, in arrival order

    struct State;  // the server's, shared with its coroutines

private:
    std::uint16_t port_ = 0;
    std::shared_ptr<State> state_;
    std::unique_ptr<outage::HttpServer> server_;
};

}  // namespace modelproxy::fleet
