// docs/behaviour.md section 4's stream end markers as a pure rule: whether a stream that
// ended cleanly had its endpoint's end. Chat and completions: [DONE], or a
// non-null finish_reason then a clean end; Responses: response.completed /
// response.incomplete; Messages: message_stop (the inspector's end_marker).
// Without end rules (generic dialect, other endpoints) a clean end is complete.
#pragma once

#include "policy/endpoint.hpp"
#include "sse/reader.hpp"

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

// Which events of a read the relay judges (identity, parse, answer text) and
// forwards. An unterminated event (the stream ended before its blank line)
// with no data is nothing; after a clean end its data lines are judged like
// any other; after a broken read it is part of the break (docs/behaviour.md sections 5 and
// 7: the fault decides, as a drop), never a data line to refuse.
constexpr bool event_counts(const Event& event, bool read_broke) {
    return event.terminated || (!event.data.empty() && !read_broke);
}

}  // namespace modelproxy::sse
