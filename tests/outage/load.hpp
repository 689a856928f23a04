// The simulation's open-loop load: a new turn every 1/rate seconds, whatever
// the turns before it are doing, each on a connection of its own, a POST
// /v1/chat/completions. A turn is recorded with when it was due and when it
// ended, the status, whether it succeeded, and the x-modelproxy-route and
// x-modelproxy-attempts headers when present.
#pragma once

#include "outage/timeline.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace modelproxy::outage {

struct LoadSpec {
    std::uint16_t port = 0;       // on 127.0.0.1: the proxy, or an upstream for the direct baseline
    std::string model = "gpt-4o";
    bool stream = true;           // "stream":true (the first-byte timer applies to streams only)
    double rate = 20;             // turns per second
    double seconds = 60;          // turns are started over this long
    double turn_timeout_ms = 15000;  // a turn not done by then is failed as a timeout
};

struct Turn {
    double due_ms = 0;            // since t0: when the schedule started it
    double end_ms = 0;            // the answer read whole, or the failure
    unsigned status = 0;          // 0: no answer (connect, timeout, reset)
    bool ok = false;              // 200, and a whole answer: a stream with `[DONE]` and no error event,
                                  // or a JSON chat completion
    std::string route;            // x-modelproxy-route, "" when absent
    int attempts = -1;            // x-modelproxy-attempts, -1 when absent
    std::string error;            // why it failed, for the log ("" when ok)

    double latency_ms() const { return end_ms - due_ms; }
};

// Runs the load with its first turn due at t0 and returns when every turn has
// ended (at most turn_timeout_ms after the last was due); turns in due order.
std::vector<Turn> run_load(const LoadSpec& spec, Clock::time_point t0);

}  // namespace modelproxy::outage
