// What the client sees when a turn ends on a failure (docs/behaviour.md
// sections 7, 8, 9 and 10), as pure values: one row per kind of failure (its
// code, message and, where no observation decides it, its class), and one
// function from the turn's end (the failure, the decision, what the client
// already has) to the answer: its form, status, type, code, message, class,
// decision and bound, and what the records say. proxy/ builds the bytes.
#pragma once

#include "policy/classify.hpp"
#include "policy/decision.hpp"
#include "policy/error_class.hpp"

#include <optional>
#include <string_view>

namespace modelproxy::policy {

// Every way a turn's attempt (or the turn) can fail, by what the client must
// be told. The class of the first groups comes from the observation
// (classify.hpp); the others have a fixed class (FailureRow::fixed).
enum class FailureKind {
    // No upstream answer to pass on: section 9's envelope (502, or 504 for a timeout).
    connect_failed,           // refused, reset or timed out while connecting
    dns_failed,               // the upstream host name does not resolve
    tls_verification_failed,  // certificate or host name not verified
    connection_dropped,       // dropped before or while the answer transferred
    deadline,                 // the turn deadline cut the attempt
    unsupported_encoding,     // a content coding other than identity, gzip or deflate
    upstream_redirect,        // a 3xx: never followed
    stream_ended_early,       // a 200 stream ended cleanly without its end marker, before answer text
    // An upstream answer.
    upstream_answer,       // a non-2xx answer: passed on as it is
    key_echoed,            // a non-2xx answer carrying an upstream key: its status, the proxy's envelope (section 8)
    upstream_error_event,  // a 200 stream's structured error event (section 7)
    // After answer text: the upstream stream broke (reset, idle timeout, a
    // clean close without the end marker, max_stream_ms).
    stream_cut,
    // Section 8 refusals: 502 with their code, outcome refused, never replayed.
    not_a_stream,             // a 200 that is not a stream, to a stream request
    not_a_stream_after_hold,  // the same, once the hold limit sent a stream head
    credential_in_body,
    credential_in_stream,
    model_identity_mismatch,  // its message names the models (FailureFacts::message)
    unparseable_event,
    empty_stream,
    body_too_large,   // a whole body past max_response_body_bytes
    held_too_large,   // a stream's held events past max_response_body_bytes
    line_too_large,   // one stream line past max_event_bytes
    event_too_large,  // one stream event past max_response_body_bytes
    // The proxy's own.
    replay_digest_mismatch,  // a replay's payload differs from attempt 1's: not sent (section 6)
    drain_limit,             // the drain limit ended the turn (section 11)
    circuit_open,            // fail_fast: every candidate held back by its breaker, no wait fits (section 13)
    admission_timeout,       // no admission slot (or the rate-limit hold) in time, nothing sent (section 14)
    quota_timeout,           // the route's quota had no room in time, nothing sent (section 15)
};

struct FailureRow {
    std::string_view code;     // envelope, closing event and record code; "" for an upstream answer
    std::string_view message;  // "" where the caller gives it (model_identity_mismatch) or none is shown
    bool refusal = false;      // a section 8 refusal: outcome refused, never replayed
    // The classification when no observation decides it (refusals and the
    // proxy's own failures); nullopt where classify.hpp does.
    std::optional<Classification> fixed;
};

const FailureRow& row(FailureKind kind);

// What the client already has when the turn ends.
enum class ClientHas {
    nothing,      // no byte: the answer may be anything
    head,         // the hold limit's 200 stream head (and keep-alives); events held
    answer_text,  // the stream is published: events were forwarded
};

struct FailureFacts {
    FailureKind kind = FailureKind::connection_dropped;
    ErrorClass cls = ErrorClass::network;  // the failure's class (row fixed, or classified)
    int upstream_status = 0;               // a non-2xx status line the upstream answered with; 0 when none
    Verdict verdict = Verdict::terminal;   // the decision that ended the turn (terminal after publication)
    Bound bound = Bound::none;
    ClientHas client = ClientHas::nothing;
    std::string_view message;  // the message when the row has none
};

enum class AnswerForm {
    upstream_answer,  // the upstream's status, end-to-end headers and body, with the failure headers
    held_stream,      // the 200 stream holding the error event (its head first unless the client has one)
    envelope,         // the proxy's section 9 envelope with `status`, and the failure headers
    closing_event,    // inside the stream: the closing error event (section 7), then the clean end
    stream_end,       // inside the stream: nothing more (the forwarded error event ended it), the clean end
};

struct FailureAnswer {
    AnswerForm form = AnswerForm::envelope;
    int status = 502;         // envelope, upstream answer: the HTTP status; closing event: its `code`
    std::string_view type;    // the envelope's (OpenAI shape) or the closing event's `type`
    std::string_view code;    // "" -> none (an upstream answer)
    std::string_view message;
    ErrorClass cls = ErrorClass::network;  // shown: a deadline with no upstream answer is a timeout
    std::string_view decision;             // x-modelproxy-decision, the envelope's, the closing event's
    std::string_view bound;                // "" when none
    std::string_view record_decision;      // the last attempt record's
    std::string_view outcome;              // the turn record's
    std::optional<int> record_status;      // the turn record's: the status the client got

    friend bool operator==(const FailureAnswer&, const FailureAnswer&) = default;
};

// Section 9's envelope type for the proxy's own failures.
inline constexpr std::string_view modelproxy_error = "modelproxy_error";

FailureAnswer failure_answer(const FailureFacts& facts);

// A refusal is not decided on (decision.hpp): it ends the turn, terminal.
inline constexpr Decision refusal_decision{Verdict::terminal, Bound::none, 0, "refused"};

}  // namespace modelproxy::policy
