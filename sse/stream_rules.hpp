// The rules a stream attempt's relay follows (docs/behaviour.md sections 7
// and 8), as pure functions: what the relay found in one event, or at the end
// of one upstream read, in; what to do with it out. The relay (proxy/) reads,
// inspects and scans, and then does what these say; they read no bytes.
//
// Before the first answer text every event is held, so that a failed attempt
// can be replayed unseen; the first answer text publishes the head and the
// held events; after it each event is forwarded as it completes, and a fault
// ends the client stream with the closing error event. Nothing after [DONE]
// is forwarded, though it is still checked.
#pragma once

#include "policy/classify.hpp"
#include "policy/endpoint.hpp"
#include "policy/failure_answer.hpp"

#include <cstddef>

namespace modelproxy::sse {

// Where the stream stands before the event (or the read's end) is judged.
struct StreamFacts {
    bool rules = true;            // the section 7/8 stream rules apply (not the generic dialect)
    bool published = false;       // answer text is out: events are forwarded
    bool after_done = false;      // [DONE] was read: later events are checked, never forwarded
    bool error_held = false;      // a structured error event is held (before answer text)
    std::size_t max_held_bytes = 0;  // max_response_body_bytes
};

// What refuses one event's data lines (section 8): the first finding in line
// order, and in one line a credential before a foreign model before a line
// that is not JSON. After [DONE] a credential in any line wins over a model
// (the relay reads every line there).
enum class LineRefusal { none, credential, identity, unparseable };

// Whether a finding refuses the event: a credential or a foreign model
// always; a line that is not JSON under the stream rules and before [DONE]
// only. The relay stops reading an event's lines at the first that refuses.
bool refuses(const StreamFacts& stream, LineRefusal refusal);

struct EventFacts {
    LineRefusal refusal = LineRefusal::none;
    bool answer_text = false;     // a line carried answer text (section 1)
    bool error_event = false;     // a line was a structured error event (section 7)
    std::size_t held_bytes = 0;   // the held bytes once this event is held too
};

enum class EventStep {
    skip,             // after [DONE]: checked, not forwarded
    hold,             // before answer text: held
    publish,          // the first answer text: held, then the head and every held event go out
    forward,          // after publication: forwarded as it is
    forward_and_end,  // after publication: forwarded, and it ends the client stream (an upstream error event)
    fail,             // before publication: the attempt fails with `failure`; the turn decides
    close,            // after publication: not forwarded; the stream ends with `failure`'s closing error event
};

struct EventAction {
    EventStep step = EventStep::hold;
    policy::FailureKind failure = policy::FailureKind::upstream_error_event;  // fail, close, forward_and_end

    friend bool operator==(const EventAction&, const EventAction&) = default;
};

EventAction event_rule(const StreamFacts& stream, const EventFacts& event);

// How one upstream read ended.
enum class ReadEnd {
    more,   // the stream goes on
    clean,  // the upstream stream ended cleanly
    broke,  // a fault: reset, idle timeout, the deadline, max_stream_ms
};

struct EndFacts {
    ReadEnd read = ReadEnd::more;
    policy::Transport fault = policy::Transport::dropped_in_body;  // the fault, when the read broke
    bool capped = false;          // max_stream_ms, not the idle timeout, ended the read
    // A clean end's last findings (section 8): the stream never named its
    // model before answer text (identity), or a secret completed at the end
    // (credential).
    LineRefusal refusal = LineRefusal::none;
    bool saw_event = false;       // at least one event with data was read
    bool complete = false;        // the endpoint's end marker was read (end_rule.hpp)
};

enum class EndStep {
    read_on,     // read on
    complete,    // a success: (publish and) end the client stream cleanly
    fail,        // before publication: the attempt fails with `failure` and `classification`
    fail_read,   // before publication: the attempt fails as the read's fault says (a transport failure)
    held_error,  // before publication: the held error event is the attempt's failure (section 7)
    close,       // after publication: the closing error event of `failure`, with `classification`
};

struct EndAction {
    EndStep step = EndStep::read_on;
    policy::FailureKind failure = policy::FailureKind::stream_cut;
    // For stream_cut and stream_ended_early: what the break or the end was;
    // any other failure's is its row's (failure_answer.hpp) or its
    // observation's.
    policy::Classification classification;

    friend bool operator==(const EndAction&, const EndAction&) = default;
};

EndAction end_rule(const StreamFacts& stream, const EndFacts& end, policy::Endpoint endpoint);

}  // namespace modelproxy::sse
