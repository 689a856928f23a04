// Model identity at the response boundary (docs/behaviour.md sections 3 and 8): which
// upstream identities a route model accepts, the per-attempt stream state
// machine, and the non-stream body check. Pure values: no I/O, no clocks, no
// allocation per line. One thread per StreamIdentity; IdentityRule is
// immutable and may be shared.
#pragma once

#include "sse/inspect.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::sse {

// Section 3's glob: `*` matches any run of bytes (the empty run too), every
// other byte matches itself; the whole text must match; case-sensitive.
bool glob_match(std::string_view pattern, std::string_view text);

// Section 3's `"*"` route rule. True when identity == requested, or identity
// == base + exactly one date suffix, where base is requested less one
// trailing "-latest" (else requested itself) and the suffix is `-YYYY-MM-DD`,
// `-YYYYMMDD` or `-MMDD`: ASCII digits, month 01-12, day 01-31, any year.
// The bare base of a `-latest` name is not accepted (the spec lists only the
// two forms above). An empty identity is never accepted.
bool wildcard_accepts(std::string_view requested, std::string_view identity);

// What a route model accepts as the response's identity: its `accept` globs,
// or the `"*"` rule for one name: the name the client requested on the `"*"`
// route, the upstream model of a model listed without `accept` (docs/behaviour.md section
// 3: providers answer an alias with a dated snapshot).
struct IdentityRule {
    enum class Kind : std::uint8_t { accept_globs, wildcard };

    Kind kind = Kind::accept_globs;
    std::vector<std::string> globs;  // Kind::accept_globs
    std::string requested;           // Kind::wildcard

    static IdentityRule from_accept(std::vector<std::string> globs);
    static IdentityRule wildcard_for(std::string requested);

    // Never true for an empty identity (an empty string names no model).
    bool accepts(std::string_view identity) const;
};

// The identity outcome. Every value but `ok` refuses the body with section
// 8's code `model_identity_mismatch`; the reason is for the record and log.
enum class IdentityVerdict : std::uint8_t {
    ok,
    foreign_model,        // an identity field names a model the rule does not accept
    answer_before_model,  // answer text before any accepted model was named
    no_model,             // the body or stream never named a model, yet needed one
    not_an_object,        // a non-stream 200 body that is not a JSON object
};

constexpr bool refused(IdentityVerdict v) { return v != IdentityVerdict::ok; }

// Section 8's refusal code; empty for ok.
constexpr std::string_view refusal_code(IdentityVerdict v) {
    return v == IdentityVerdict::ok ? std::string_view{} : std::string_view{"model_identity_mismatch"};
}

// Non-stream 200 body (section 8): a JSON object, naming at least one model,
// every named model accepted. Checked in that order. On foreign_model,
// `*foreign` (when given) views the first model refused, in `body`.
IdentityVerdict check_body_identity(const BodyIdentity& body, const IdentityRule& rule,
                                    std::string_view* foreign = nullptr);

// What a model_identity_mismatch says (docs/behaviour.md section 9): the model the
// upstream answered with and the names accepted, in its message and its
// attempt record. Model names come from the upstream and the config, so each
// is bounded (bounded_name) and the list too: a hostile upstream cannot make
// a message or record line long, or carry control bytes or invalid UTF-8.
struct IdentityRefusal {
    static constexpr std::size_t max_name_bytes = 128;
    static constexpr std::size_t max_accepted = 8;

    std::string answered;               // the refused model; "" when none was named
    std::vector<std::string> accepted;  // the accept globs, or the `"*"` rule's forms
    std::string message;
};

// `name` as a message or record shows it: printable ASCII kept, any other
// byte as '?', at most max_name_bytes of it, then "..." when it was longer.
void bounded_name(std::string_view name, std::string& out);

// Fills `out` (its storage reused) for a refusal `verdict` under `rule`;
// `answered` is the refused model (foreign_model), else empty. The `"*"`
// rule's accepted names are its forms: `gpt-4o`, `gpt-4o-YYYY-MM-DD`,
// `gpt-4o-YYYYMMDD`, `gpt-4o-MMDD`. More than max_accepted globs: the first
// ones, then one entry "(N more)".
void describe_refusal(IdentityVerdict verdict, std::string_view answered, const IdentityRule& rule,
                      IdentityRefusal& out);

// One attempt's stream, fed every data line in order (the Inspector's answer
// for it, DataKind::done included), then finish() at the end of the stream.
// Only for endpoints where policy::has_stream_rules() holds.
//
// The rule implemented (sections 7 and 8):
//  - A line is an "error line" when the Inspector marked it a structured
//    error event. "[DONE]" is the closing marker. Every other data line
//    (answer text, role chunks, metadata, pings, JSON that is not an object,
//    and unparseable lines, which the caller refuses anyway) is an "other
//    line". Every data line after the first "[DONE]" line, a second "[DONE]"
//    and an error line included, counts as an other line: data after [DONE]
//    keeps the identity check. The machine sees [DONE] in DataInfo::kind, so
//    "after [DONE]" is its own state, never a caller's flag.
//  - Once an other line has arrived the stream needs an identity. From then
//    on, every model a line names (a non-empty string in an identity field,
//    DataInfo::models()) must be accepted, or that line refuses with
//    foreign_model.
//  - While the stream has had only error lines (and at most one [DONE]) it
//    may still end error-only, which skips the identity check. An error line
//    naming a model the rule does not accept is then remembered, not refused;
//    the refusal (foreign_model) comes on the first line that makes the
//    stream need an identity. So "foreign chunk, then error event" refuses at
//    the chunk, and "error event naming another model, then nothing" passes.
//  - A line with answer text is accepted only when an accepted model was
//    named before it or by the line itself (its models are read before its
//    text), else it refuses with answer_before_model. A model named by an
//    error line counts as named.
//  - finish(): a stream that needed an identity and never named an accepted
//    model refuses with no_model (e.g. role chunk, finish chunk, [DONE], no
//    `model` anywhere). A stream that never needed one (error-only, only
//    "[DONE]", or no data line at all) is ok here: empty_stream is decided
//    elsewhere.
//  - The first refusal is final: every later on_line() and finish() return it.
class StreamIdentity {
public:
    // `rule` must outlive this object.
    explicit StreamIdentity(const IdentityRule& rule) : rule_(&rule) {}
    explicit StreamIdentity(const IdentityRule&& rule) = delete;

    // The verdict as of this line: a refusal here means this line must not
    // be forwarded (it, or an earlier held error line, broke the rule).
    IdentityVerdict on_line(const DataInfo& line);

    // The verdict for the whole stream after its last line.
    IdentityVerdict finish() const;

    // After a foreign_model refusal: the model that refused (the first one
    // not accepted, an error line's included), bounded (bounded_name). ""
    // otherwise.
    std::string_view foreign_model() const { return foreign_; }

    // A fresh attempt with the same rule.
    void reset();
    // A fresh attempt under `rule` (which must outlive this object); the
    // cached model keeps its storage, so a reused StreamIdentity costs no
    // allocation per stream.
    void reset(const IdentityRule& rule) {
        rule_ = &rule;
        reset();
    }
    void reset(const IdentityRule&& rule) = delete;

private:
    bool accepted(std::string_view model);

    const IdentityRule* rule_;
    IdentityVerdict verdict_ = IdentityVerdict::ok;
    bool named_ = false;               // an accepted model was named
    bool needs_identity_ = false;      // an other line arrived (see above)
    bool done_seen_ = false;           // a [DONE] line arrived
    bool deferred_foreign_ = false;    // an error line named a refused model
    std::string last_accepted_;        // cache: chunks repeat the same model
    std::string foreign_;              // the first model not accepted (foreign_model())
};

}  // namespace modelproxy::sse
