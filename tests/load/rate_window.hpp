// The fake provider's rate limit (docs/behaviour.md section 14's load
// simulation): fixed windows of window_ms, each admitting `per_window`
// requests; a request above that is answered 429. The state it reports is
// what OpenAI's headers carry: the window's limit, what is left of it, and
// the time until the next window opens (when the remaining count is whole
// again, and the next admission is possible once it is 0).
// Pure: the time is passed in (ms since the run's t0).
#pragma once

#include <cstdint>
#include <string>

namespace modelproxy::load {

class RateWindow {
public:
    RateWindow(int per_window, double window_ms) : per_window_(per_window), window_ms_(window_ms) {}

    struct State {
        bool admitted = false;  // take(): this request was admitted
        int limit = 0;          // x-ratelimit-limit-requests
        int remaining = 0;      // x-ratelimit-remaining-requests, after this request
        double reset_ms = 0;    // x-ratelimit-reset-requests: until the next window opens
    };

    // Counts a request arriving at `now_ms` against its window.
    State take(double now_ms);
    // The state at `now_ms`, counting nothing (the headers of an answer
    // written later than its admission).
    State peek(double now_ms);

    int per_window() const { return per_window_; }
    double window_ms() const { return window_ms_; }

private:
    void roll(double now_ms);

    int per_window_;
    double window_ms_;
    std::int64_t window_ = INT64_MIN;  // the index of the window `used_` counts
    int used_ = 0;
};

// A duration in Go's time.Duration syntax, as OpenAI writes its reset
// headers, rounded up to whole milliseconds: "0s", "37ms", "1s", "1.5s",
// "6m0s", "1h0m0.25s".
std::string go_duration(double ms);

}  // namespace modelproxy::load
