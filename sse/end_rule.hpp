// SPEC section 4's stream end markers as a pure rule: whether a stream that
// ended cleanly had its endpoint's end. Chat and completions: [DONE], or a
// non-null finish_reason then a clean end; Responses: response.completed /
// response.incomplete; Messages: message_stop (the inspector's end_marker).
// Without end rules (generic dialect, other endpoints) a clean end is complete.
#pragma once

#include "policy/endpoint.hpp"

namespace modelproxy::sse {

struct StreamEnds {
    bool saw_done = false;     // a [DONE] data line
    bool saw_marker = false;   // DataInfo::end_marker on any line
    bool saw_finish = false;   // a non-null finish_reason on any line
};

constexpr bool stream_complete(policy::Endpoint endpoint, bool rules, const StreamEnds& seen) {
    if (!rules || seen.saw_done || seen.saw_marker) return true;
    return seen.saw_finish &&
           (endpoint == policy::Endpoint::chat_completions || endpoint == policy::Endpoint::completions);
}

}  // namespace modelproxy::sse
