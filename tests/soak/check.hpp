// Judges one soak turn: the response the client got against the outcome the
// fault table predicts, and a scan for bytes of any other turn. Pure.
#pragma once

#include "soak/faults.hpp"
#include "support/http_client.hpp"

#include <string>

namespace modelproxy::soak {

// What the provider saw of one turn (the responder's counters).
struct UpstreamCount {
    int requests = 0;  // requests carrying the turn's id
    int free = 0;      // of them, failures before a response byte on a reused
                       // connection: re-sent at once, not an attempt (docs/behaviour.md section 4)
};

struct Verdict {
    bool right = false;
    std::string label;  // the outcome as the client saw it, for the counts (when right)
    std::string why;    // what differs (when wrong)
};

// `refused_route`: the turn's upstream refuses connections, so nothing of it
// reaches the fake and the attempt count is checked against the table only.
Verdict judge(const test::Response& r, const Expectation& e, const std::string& id, bool stream,
              const UpstreamCount& upstream, bool refused_route);

// Occurrences in `wire` of a turn id other than `id`.
int foreign_ids(std::string_view wire, const std::string& id);

}  // namespace modelproxy::soak
