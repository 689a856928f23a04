// A stream attempt's relay state (docs/behaviour.md section 7), kept out of
// the coroutine that waits on the upstream reads: Asio recycles coroutine
// frames of up to 1020 bytes only, and a bigger frame costs a heap
// allocation per stream. One StreamRelay lives in each request slot's
// ForwardPlan and is reused from attempt to attempt, so its buffers keep
// their capacity. TurnRun::stream_attempt (stream_relay.cpp) waits; TurnRun's
// plain relay_* functions (stream_events.cpp) do the work of each read on
// this state, as the stream rules say (sse/stream_rules.hpp), and say what
// to wait for next as a RelayStep.
#pragma once

#include "policy/classify.hpp"
#include "policy/failure_answer.hpp"
#include "policy/provider_error.hpp"
#include "sse/credentials.hpp"
#include "sse/identity.hpp"
#include "sse/inspect.hpp"
#include "sse/reader.hpp"
#include "sse/relay_batch.hpp"
#include "sse/resume.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace modelproxy::proxy {

// What the relay asks of the stream attempt's coroutine after the work of
// one upstream read.
enum class RelayStep {
    read_on,     // nothing to stop for: write `out`, then read on (or end the stream)
    publish,     // the first answer text: publish the head and the held events, then relay on
    close,       // after publication: end the client stream as `close` says
    fail,        // before publication: the attempt's failure says why; the decision loop decides
    held_error,  // a structured error event before answer text: the failure holds it and the held stream
    complete,    // the upstream stream ended complete: (publish and) end the client stream
};

// After publication, the checked events of one upstream read, to go out as
// one chunk. Events that follow each other where the read put them are kept
// as one view, not copied (a copy of every stream byte); anything
// else is copied into `text`, which the view follows. The view is valid until
// the next upstream read, so `out` is written before it (and before the
// connection goes back to the pool).
class RelayOut {
public:
    // `bytes` stay valid until the write (Reader::in_input).
    void add_view(std::string_view bytes);
    void add_copy(std::string_view bytes);
    // Takes `held`'s bytes (publication), leaving it empty.
    void take(std::string& held);
    std::size_t size() const { return text_.size() + view_.size(); }
    bool empty() const { return text_.empty() && view_.empty(); }
    // Back to the first `n` bytes (n <= size()).
    void cut_to(std::size_t n);
    void clear();
    // The bytes, in order: text() then view().
    std::string_view text() const { return text_; }
    std::string_view view() const { return view_; }
    std::string& storage() { return text_; }  // for capacity upkeep (turn.cpp)

private:
    std::string text_;
    std::string_view view_;
};

struct StreamRelay {
    // How a close step ends the client stream after publication: the
    // failure it ends on (policy::failure_answer gives its closing error
    // event, or nothing more after the upstream's own forwarded error event).
    struct Close {
        policy::Classification classification;
        policy::FailureKind failure = policy::FailureKind::stream_cut;
        std::string_view detail;  // the message where the kind's row has none (plan-owned)
    };

    sse::Reader reader;
    sse::LineMemo memo;  // this stream's last line parsed whole, for the lines that repeat its shape
    std::string held;   // raw bytes of the events held so far
    // After publication, the checked events of one upstream read, sent as one
    // chunk in one write: one syscall per read, not per event, and no event
    // waits for anything but the read it came in.
    RelayOut out;
    // The last upstream read, where transport/ put it (Exchange::read_piece):
    // the connection's buffer, or `decoded` for a gzip/deflate stream.
    std::string_view piece;
    std::string decoded;
    // The data lines of the events relay_events is working through, for the
    // credential scan's settle (sse/relay_batch.hpp); reused, capacity kept.
    sse::RelayBatch batch;

    // One attempt's state, set by start().
    bool rules = false;                       // the section 7/8 stream rules apply (not generic)
    sse::StreamIdentity* identity = nullptr;  // the model identity check, when the turn has one
    std::optional<sse::StreamScan> secrets;   // the credential scan, while an attempt relays
    bool saw_done = false, saw_end = false, saw_finish = false, saw_event = false;
    std::optional<policy::ProviderError> error_event;  // a structured error event, before answer text
    // /responses: the sequence_number of the last event held or forwarded,
    // for the closing error event's (docs/behaviour.md section 7).
    std::optional<std::uint64_t> last_sequence;
    std::chrono::steady_clock::time_point started;
    Close close;

    // docs/behaviour.md section 16 (proxy/stream_resume.cpp): the answer the
    // client has, read from each published line while the turn may still
    // continue its stream, and a resume attempt's seam search. Kept across
    // the attempts of a turn; emptied when a turn's first stream starts.
    // Held out of line (`resume` below): only a route that resumes needs it.
    struct Resume {
        bool track = false;     // published lines are read into `published`
        bool spent = false;     // past max_offset, or a line it could not read: no resume
        sse::PublishedAnswer published;
        std::optional<sse::Seam> seam;  // while an attempt continues a cut stream
        bool reached = false;           // that attempt reproduced everything published
        // A break that a resume may continue: a transport fault, an idle
        // timeout or a clean end without the end marker after publication,
        // or a server-class error event (held back from the client).
        bool resumable = false;
        // That error event's bytes: forwarded as section 7 says when no
        // resume follows.
        std::string error_event;
        std::string line, event;  // scratch: one rewritten line, one rewritten event
        void clear() {
            track = spent = reached = resumable = false;
            error_event.clear();
            published.clear();
            seam.reset();
        }
    };
    // Made by TurnRun::start_resume at the first stream attempt on a route
    // with resume enabled, then kept, like the buffers, as the request slot
    // is reused; null until then, which reads as a Resume with every flag
    // false and nothing held: an open stream on a route without resume
    // carries only this pointer.
    std::unique_ptr<Resume> resume;

    // A fresh attempt: buffers emptied (capacity kept), flags reset, the
    // reader under `limits`, the identity check under `identity_rule` (when
    // set) and a credential scan from `scanner` (when set).
    void start(bool stream_rules, sse::Reader::Limits limits, const sse::IdentityRule* identity_rule,
               const sse::CredentialScanner* scanner);
    // The attempt's relay is over, however it ended: its credential scan
    // gives its Vectorscan streams back to the thread's spares.
    void end() { secrets.reset(); }
    // Empty for the next request, capacity kept (RequestSlot::clear
    // releases what one large stream grew).
    void clear();

private:
    // One object reused from attempt to attempt, so its cached model keeps
    // its storage.
    std::optional<sse::StreamIdentity> identity_;
};

}  // namespace modelproxy::proxy
