// The fleet simulation's callers: closed loop with a fixed think time.
// `callers` clients spread evenly over the replicas (caller i on replica
// i mod replicas), each with one keep-alive connection to its replica, each
// sending a turn (POST /v1/chat/completions, JSON, max_tokens 20), reading
// its answer whole, then pausing before the next: think_ms after an ok turn;
// after a failed one, as tests/load's callers and the official SDKs do, the
// answer's Retry-After (whole seconds, at most 60), else half a second; a
// pause ends at the latest when the run does. The
// callers' first turns are spread evenly over one think time from t0, so
// they do not arrive together. Turns are sent until `seconds` have passed;
// one that has started is read to its end (at most turn_timeout_ms). A
// caller whose connection failed connects again for its next turn, 100 ms
// later when the connect itself failed. All of them run on one io_context,
// on the thread that calls run_callers; each is outage/closed_loop.hpp's.
//
// Turns are recorded as the outage simulation's (tests/outage/load.hpp),
// due_ms being when the turn was sent; a failed turn's `error` names its
// status, the proxy's decision/bound headers and the error body's `code`.
#pragma once

#include "fleet/timeline.hpp"
#include "outage/closed_loop.hpp"
#include "outage/load.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace modelproxy::fleet {

using outage::Turn;

struct CallerSpec {
    std::vector<std::uint16_t> ports;  // the replicas, on 127.0.0.1
    std::string model = "gpt-4o";
    int callers = 300;
    double think_ms = 900;             // after an ok turn
    double seconds = 120;              // turns are started until then
    double turn_timeout_ms = 65000;    // a turn not done by then is failed as a timeout
};

// Runs the callers from t0 and returns when every turn has ended; turns in
// the order they were sent.
std::vector<Turn> run_callers(const CallerSpec& spec, Clock::time_point t0);

using outage::error_code;  // a failure's cause names it

}  // namespace modelproxy::fleet
