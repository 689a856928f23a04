// The closed-loop caller the load and fleet simulations share (their
// callers.hpp say how many, on which port, with which body): one keep-alive
// connection to the proxy on 127.0.0.1, sending a turn (the request given,
// whole), reading its answer whole, then pausing before the next: think_ms
// after an ok turn; after a failed one, as the official SDKs pause before
// they retry, the answer's Retry-After (whole seconds, at most 60), else half
// a second (a caller that resent at once would measure its own loop, not the
// proxy). Turns are sent from t0 + first_ms until `seconds` have passed; one
// that has started is read to its end (at most turn_timeout_ms). A caller
// whose connection failed connects again for its next turn, 100 ms later
// when the connect itself failed (so a dead proxy is not spun on).
//
// Turns are recorded as the outage simulation's (load.hpp), due_ms being
// when the turn was sent; a failed turn's `error` names its status and the
// proxy's decision/bound headers (docs/behaviour.md section 9), and with
// `cause_code` the error body's `code`.
#pragma once

#include "outage/load.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace modelproxy::outage {

struct ClosedLoop {
    std::uint16_t port = 0;            // the proxy on 127.0.0.1
    const std::string* request = nullptr;  // the whole HTTP request, sent as is
    bool stream = false;               // the answer is an SSE stream ending in [DONE]
    double first_ms = 0;               // its first turn, since t0
    double think_ms = 0;               // the pause after an ok turn
    double seconds = 90;               // turns are started until then
    double turn_timeout_ms = 65000;    // a turn not done by then is failed as a timeout
    bool cause_code = false;           // a failure's cause names the error body's code
    bool pause_ends_with_run = false;  // a pause ends at the latest when the run does
};

// Runs one caller a loop, all on one io_context on the calling thread, from
// t0; returns when every turn has ended, turns in the order they were sent.
std::vector<Turn> run_closed_loops(const std::vector<ClosedLoop>& loops, Clock::time_point t0);

// The value of the first `"code":"..."` in an error body, "" when none.
std::string error_code(const std::string& body);

}  // namespace modelproxy::outage
