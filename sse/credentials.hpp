// Credential scan at the response boundary (docs/behaviour.md section 8): every 2xx body,
// whatever its Content-Type, is searched for the configured upstream keys
// (raw and JSON-escaped) and, with `default_patterns`, for well-known secret
// shapes as whole tokens, plus `boundary.secret_patterns`; a body or an SSE
// data line that holds a backslash escape is searched again decoded
// (sse/json_unescape.hpp), so `\u0075`-style escapes hide nothing. The
// upstream keys alone (not the patterns) are also looked for in response
// heads and non-2xx bodies. Vectorscan (Hyperscan's API), no I/O.
//
// Threading: a CredentialScanner is immutable once built and may be shared by
// every thread; its compiled databases live as long as any scan made from it
// (shared ownership). Each BodyScan / StreamScan is used by one thread at a
// time; a StreamScan owns its stream state. Scans borrow their thread's
// Vectorscan scratch for each call, allocated once per thread and grown for
// each new config's databases, and a finished StreamScan's stream state is
// kept per thread for the next one; a decoded pass decodes into a buffer
// kept per thread (released when a large body grew it past 1 MiB): no
// allocation per body, line or stream.
//
// What is matched, exactly:
//  - a configured key: its bytes, its JSON string form (`"` -> `\"`,
//    `\` -> `\\`, control bytes as `\n`-style or `\u00XX` escapes) and that
//    form with `/` also written `\/`; anywhere, not only as a whole token.
//    Empty keys are ignored. Any other spelling (`\u` escapes, a mix of
//    `/` and `\/`) is found by the decoded pass.
//  - default shapes, as whole tokens: the match must start the text or
//    follow a byte outside [A-Za-z0-9_-]. In raw JSON bytes a JSON escape
//    (`\b` `\f` `\n` `\r` `\t` `\uXXXX`) before the token also counts as a
//    boundary, since it decodes to a separator (an encoder never escapes a
//    letter, digit, `_` or `-`). `sk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{40,}`,
//    `AKIA[0-9A-Z]{16}` unless those 16 end in `EXAMPLE` (written as a
//    regular expression, so it holds across stream events too),
//    `-----BEGIN [A-Z ]*PRIVATE KEY-----` followed by at least 64 base64
//    characters (line breaks, or their JSON escapes, allowed between them),
//    `ghp_[A-Za-z0-9]{36}`,
//    `nvapi-[A-Za-z0-9_-]{40,}`. Only the start is a token edge: the spec
//    asks nothing of the byte after.
//  - secret_patterns: as written (Vectorscan syntax, case-sensitive, `^` is
//    the start of the text, no whole-token wrapping: the operator anchors a
//    pattern as they mean it). A pattern that can match the empty string is
//    refused at build: it would refuse every body.
//  - the decoded pass: the same rules over the text with every JSON escape
//    decoded, as one more text (its own `^` and `$`): a whole body, or one
//    data line.
//
// A match is reported by the rule that matched (e.g. "upstream key 0",
// "default sk- key", "boundary.secret_patterns[2]"), never by the bytes.
#pragma once

#include "sse/inspect.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

struct hs_stream;

namespace modelproxy::sse {

enum class CredentialVerdict : std::uint8_t {
    clean,
    credential_in_response,  // section 8's refusal code of the same name
};

namespace detail {
struct CompiledSecrets;
}

class BodyScan;
class StreamScan;

class CredentialScanner {
public:
    // Compiles the rules once per config. The error string has one line per
    // bad secret pattern, each naming `boundary.secret_patterns[i]` and why,
    // e.g. "boundary.secret_patterns[1]: invalid regular expression: Missing
    // close parenthesis for group started at index 0."
    static std::variant<CredentialScanner, std::string> build(std::span<const std::string> keys,
                                                              std::span<const std::string> secret_patterns,
                                                              bool default_patterns);

    // A whole 2xx body, in one call (a BodyScan made for it): every rule,
    // over its bytes and, when they hold a backslash, decoded.
    bool contains_secret(std::string_view body) const;

    // The configured upstream keys only (docs/behaviour.md section 8: not the patterns).
    // key_in_head: the bytes of a response head as the client would get
    // them (no decoding: a header is not JSON). key_in_body: a non-2xx body,
    // its bytes and, when they hold a backslash, decoded. One Vectorscan
    // call each (two for an escaped body); false when no key is configured.
    bool key_in_head(std::string_view head) const;
    bool key_in_body(std::string_view body) const;
    bool has_keys() const;

    BodyScan body_scan() const;
    StreamScan stream_scan() const;

    // True when there is nothing to look for (no keys, no patterns).
    bool empty() const;

private:
    friend class BodyScan;
    friend class StreamScan;

    explicit CredentialScanner(std::shared_ptr<const detail::CompiledSecrets> compiled)
        : compiled_(std::move(compiled)) {}

    std::shared_ptr<const detail::CompiledSecrets> compiled_;
};

// Block mode: one whole body per call, reusable for any number of bodies.
class BodyScan {
public:
    explicit BodyScan(const CredentialScanner& scanner);

    // Every rule over the body's bytes, then over its decoded text when the
    // bytes hold a backslash.
    bool contains_secret(std::string_view body);
    // The rule behind the last true answer.
    std::string_view matched_rule() const { return matched_rule_; }

private:
    std::shared_ptr<const detail::CompiledSecrets> compiled_;
    std::string_view matched_rule_;
};

// Stream mode, one per attempt. Three channels (section 8: "scan the bytes and
// each choice's concatenated answer text", and string values decoded):
//  - the raw bytes, in order, as one Vectorscan stream: feed_read() (or
//    feed_bytes()) takes any split, so a secret split across reads is found;
//  - the decoded answer text of each AnswerTextKey, each its own Vectorscan
//    stream, given the fragments the Inspector collected from a data line
//    (DataInfo::answer_fragments): a token split across events' JSON strings
//    ("sk-proj-AAAA" then "BBBB...") is found although the raw bytes never
//    hold it contiguously. The line is parsed once, by the Inspector, for
//    every check;
//  - each data line decoded (check_decoded_line), when it holds an escape:
//    a secret spelled with `\u` escapes in any string of one event.
// The relay, per upstream read: feed_read(piece); then per event
// event_passed(event.raw.size(), counts) and, for each data line,
// check_decoded_line(line) and note_answer_text(ordinal,
// inspector.inspect(event, i, endpoint).answer_fragments); then settle()
// before acting on anything the read's events decided. Vectorscan's cost is mostly per call and a chat chunk's
// answer text is a few bytes, so the answer texts are scanned once per
// settle (a few calls per stream), not once per line. A match is reported
// with where it ends (event_passed: the event; settle: the noted ordinal),
// so the relay can withhold everything from there on. The first match is
// final: later calls return it without scanning. At most 256 answer texts
// are tracked separately; beyond that, new keys share the last one.
class StreamScan {
public:
    explicit StreamScan(const CredentialScanner& scanner);
    ~StreamScan();
    StreamScan(StreamScan&&) noexcept;
    StreamScan& operator=(StreamScan&&) noexcept;

    // The raw channel, for the stream relay, one upstream read at a time:
    // Vectorscan's cost is mostly per call, so one call per read (a few per
    // stream) instead of one per event. feed_read scans the stream's next
    // bytes; a match is held with the stream offset where it ends, not yet
    // the verdict. event_passed(size, counts) is told each event the reader
    // yields, in order (its raw size; whether the relay counts it): the held
    // match becomes the verdict at the counted event whose bytes it ends in,
    // so the events before it go out exactly as when each event was scanned
    // alone with feed_bytes, and a match in a tail the relay drops (an
    // unterminated last event of a broken stream) refuses nothing.
    void feed_read(std::string_view bytes);
    CredentialVerdict event_passed(std::size_t raw_size, bool counts);
    // feed_read and event_passed of one counted event's bytes at once: the
    // verdict as soon as a secret ends in `raw`.
    CredentialVerdict feed_bytes(std::string_view raw);
    // The answer-text channels, batched. note_answer_text keeps one data
    // line's fragments (in line order) for the next settle, tagged with the
    // caller's ordinal for that line (non-decreasing between settles).
    // settle() scans each answer text's kept bytes in one Vectorscan call
    // and returns the smallest ordinal whose fragments complete a secret (in
    // any answer text; the scan of each continues where the last settle left
    // it, so a secret split across lines, reads and settles is found), or
    // none; then it forgets the kept bytes. A match settle finds becomes the
    // verdict even over a raw-channel verdict already reached: the relay notes
    // an event's answer text only after its event_passed, so the noted lines
    // all come before the event the raw channel refused. The kept bytes'
    // buffers are reused: no allocation per line or per settle.
    void note_answer_text(std::uint32_t ordinal, std::span<const AnswerFragment> fragments);
    std::optional<std::uint32_t> settle();
    // One data line's answer-text fragments at once (note + settle): the
    // verdict as soon as a secret ends in them.
    CredentialVerdict feed_answer_text(std::span<const AnswerFragment> fragments);
    // The decoded channel: one data line's value (Event::data[i]) with its
    // JSON escapes decoded, scanned as a text of its own, when it holds a
    // backslash (a line without one decodes to its raw bytes, which the raw
    // channel scans). The verdict at once: the relay refuses the line's event
    // before anything of it goes out. Costs a memchr per line; a Vectorscan
    // call only for a line with an escape.
    CredentialVerdict check_decoded_line(std::string_view data);
    // The stream ended: patterns anchored at the end (`$` in a secret
    // pattern) get their last chance. Further feeds are ignored.
    CredentialVerdict finish();

    CredentialVerdict verdict() const { return verdict_; }
    std::string_view matched_rule() const { return matched_rule_; }

    // A fresh attempt, keeping the Vectorscan streams for reuse.
    void reset();

private:
    // Where, in a channel's kept bytes, each noted line's fragments end.
    struct Mark {
        std::size_t end = 0;  // offset into `pending`, exclusive
        std::uint32_t ordinal = 0;
    };
    struct Channel {
        AnswerTextKey key;
        hs_stream* stream = nullptr;
        std::uint64_t scanned = 0;  // bytes scanned in `stream` so far
        std::string pending;        // noted, not yet scanned (capacity kept)
        std::vector<Mark> marks;
    };
    struct Spares;  // the thread's kept stream states (stream_scan.cpp)
    static Spares& spares();

    Channel* channel(const AnswerTextKey& key);
    void forget_pending();
    // Gives the streams to the thread's spares, or closes them.
    void release();
    void close_all();

    std::shared_ptr<const detail::CompiledSecrets> compiled_;
    hs_stream* raw_ = nullptr;
    std::vector<Channel> channels_;  // [0, used_) belong to this attempt
    std::size_t used_ = 0;
    bool finished_ = false;
    bool answer_matched_ = false;  // a settle found a secret in an answer text
    bool noted_ = false;           // some channel holds noted bytes
    // The first noted line whose answer text found no Vectorscan stream
    // (one could not be opened): refused at settle, to be safe.
    std::optional<std::uint32_t> failure_at_;
    CredentialVerdict verdict_ = CredentialVerdict::clean;
    std::string_view matched_rule_;
    // feed_read / event_passed: bytes read and bytes of events passed so
    // far, and a match held until the relay reaches the event it ends in.
    std::uint64_t read_bytes_ = 0;
    std::uint64_t events_end_ = 0;
    std::uint64_t held_end_ = 0;
    std::string_view held_rule_;
};

}  // namespace modelproxy::sse
