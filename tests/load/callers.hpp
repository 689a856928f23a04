// The load simulation's closed-loop callers: `callers` clients, each with
// one keep-alive connection to the proxy, each sending a turn (POST
// /v1/chat/completions), reading its answer whole and sending the next, from
// t0 until `seconds` have passed; a turn that has started is read to its end
// (at most turn_timeout_ms). A caller whose connection failed connects again
// for its next turn, 100 ms later when the connect itself failed (so a dead
// proxy is not spun on). Turns are recorded as the outage simulation's
// (tests/outage/load.hpp), due_ms being when the turn was sent. Each caller
// is outage/closed_loop.hpp's, with no think time.
#pragma once

#include "load/timeline.hpp"
#include "outage/load.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace modelproxy::load {

using outage::Turn;

struct CallerSpec {
    std::uint16_t port = 0;           // the proxy on 127.0.0.1
    std::string model = "gpt-4o";
    bool stream = false;              // "stream":true
    int callers = 200;
    double seconds = 90;              // turns are started until then
    double turn_timeout_ms = 65000;   // a turn not done by then is failed as a timeout
};

// Runs the callers from t0 and returns when every turn has ended; turns in
// the order they were sent.
std::vector<Turn> run_callers(const CallerSpec& spec, Clock::time_point t0);

}  // namespace modelproxy::load
