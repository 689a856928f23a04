// Continuing a cut stream (docs/behaviour.md section 16), the pure part: what
// a one-choice stream's data lines say of its answer, what the client has of
// it, where a second stream of the same request reaches the end of that
// (the seam), and the forwarded lines rewritten to follow on from what the
// client has. No I/O, no clock: bytes in, verdicts and bytes out.
//
// The answer is a sequence of pieces in stream order: answer text (content,
// refusal, reasoning text, tool-call arguments, completions text), compared
// as text whatever its split into events, and marks that must repeat whole: a
// tool call's function name, a Messages content block's start (its type and
// name) and stop, a finish (stop) reason, a usage report, a thinking block's
// signature. Tool-call ids, `id`, `created`, `system_fingerprint`, logprobs
// and the signature's value are not compared.
#pragma once

#include "policy/endpoint.hpp"
#include "sse/inspect.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::sse {

struct ResumePiece {
    enum class Kind : std::uint8_t {
        text,         // answer text: joins the text before it of the same key
        name,         // a tool call's function name (chat), whole
        block_start,  // Messages content_block_start: "type" or "type:name", whole
        block_stop,   // Messages content_block_stop
        finish,       // a finish_reason / stop_reason, whole
        usage,        // a usage report (chat and completions: a `usage` object on a line without choices)
        signature,    // a Messages thinking block's signature (its value is the stream's own)
    };
    Kind kind = Kind::text;
    AnswerTextKey::Field field = AnswerTextKey::Field::content;  // text pieces: which text
    std::int64_t index = 0;  // Messages content block index; 0 elsewhere
    std::int64_t sub = 0;    // chat tool call index (-1: the legacy function_call)
    std::string_view text;   // decoded text; a mark's value ("" for block_stop and usage)

    // Same answer text (text pieces) or same mark slot.
    bool same_key(const ResumePiece& o) const {
        return kind == o.kind && field == o.field && index == o.index && sub == o.sub;
    }
};

// What one data line holds for a resume.
struct ResumeLine {
    bool json = false;        // one JSON object
    bool done = false;        // exactly [DONE]
    bool one_choice = true;   // no choice but the first (index 0) on chat and completions
    std::vector<ResumePiece> pieces;  // in line order; views valid until the reader's next call
    // The values the client sees, as raw JSON tokens ("" when absent):
    // chat and completions top-level `id`, `created`, `system_fingerprint`;
    // Messages `message.id` (in `id`).
    std::string_view id, created, system_fingerprint;
};

// The raw JSON tokens a rewritten line carries instead of its own (an empty
// one leaves the line's value as it is).
struct ResumeIds {
    std::string id, created, system_fingerprint;
    bool empty() const { return id.empty() && created.empty() && system_fingerprint.empty(); }
};

// How much of one line the client already has: its first `published`
// pieces whole, then `cut_bytes` bytes of the next (a text piece). The
// rewrite empties the published text, drops the members that repeat what
// the client has (a tool call's id, type and name, the delta's role), and
// the logprobs entries of tokens that start in the published text.
struct LineCut {
    std::size_t published = 0;
    std::size_t cut_bytes = 0;
    bool any() const { return published > 0 || cut_bytes > 0; }
};

// One simdjson parser and its buffers; one thread.
class ResumeReader {
public:
    ResumeReader();
    ~ResumeReader();
    ResumeReader(const ResumeReader&) = delete;
    ResumeReader& operator=(const ResumeReader&) = delete;

    // One data line of a chat completions, completions or Messages stream.
    // A line that is not one JSON object (nor [DONE]) has json false.
    const ResumeLine& read(std::string_view data, policy::Endpoint endpoint);
    // `data` with `cut` applied and the values `ids` names replaced, into
    // `out` (appended). False when the line does not parse (`out` is then
    // as it was).
    bool rewrite(std::string_view data, policy::Endpoint endpoint, const LineCut& cut, const ResumeIds& ids,
                 std::string& out);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The answer the client has: the pieces of every published line, text
// joined by key. Its own copies.
class PublishedAnswer {
public:
    struct Run {
        ResumePiece::Kind kind = ResumePiece::Kind::text;
        AnswerTextKey::Field field = AnswerTextKey::Field::content;
        std::int64_t index = 0, sub = 0;
        std::string text;
    };
    void clear();
    void add(const ResumeLine& line);
    const std::vector<Run>& runs() const { return runs_; }
    // Answer text published, in Unicode code points (marks not counted).
    std::uint64_t code_points() const { return code_points_; }
    bool one_choice() const { return one_choice_; }
    // The latest id, created and system_fingerprint the client saw.
    const ResumeIds& ids() const { return ids_; }

private:
    std::vector<Run> runs_;
    std::uint64_t code_points_ = 0;
    bool one_choice_ = true;
    ResumeIds ids_;
};

std::uint64_t code_points(std::string_view utf8);

// The seam search over a second stream's lines, against what was published.
class Seam {
public:
    enum class Step {
        drop,      // before the seam: everything in the line is published already
        forward,   // at or after the seam: the line goes out (its ids rewritten)
        cut,       // the line straddles the seam: it goes out with `cut` applied
        diverged,  // the line contradicts the published answer: abandon the resume
    };
    struct Verdict {
        Step step = Step::drop;
        LineCut cut;
    };

    explicit Seam(const PublishedAnswer& published) : published_(&published) {}
    // Judges the next line's pieces. After `diverged` the seam is spent.
    Verdict judge(const ResumeLine& line);
    // Every published piece was reproduced: the lines from here on go out.
    bool reached() const;

private:
    const PublishedAnswer* published_;
    std::size_t run_ = 0;     // the published run being reproduced
    std::size_t offset_ = 0;  // bytes of it reproduced
    bool diverged_ = false;
};

}  // namespace modelproxy::sse
