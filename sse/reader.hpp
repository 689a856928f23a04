// Incremental SSE reader (docs/behaviour.md section 7, "Parsing"): bytes in, in arbitrary
// read boundaries; complete events out, each with the exact upstream bytes it
// came from so the relay can forward them unchanged.
//
// Lines end at CRLF, LF or a bare CR; a CR that ends one chunk and an LF that
// starts the next are one line end. Every leading U+FEFF (EF BB BF) of every
// line is dropped, however many and however split. Fields: `data`, `event`,
// `id`, `retry`; a line starting with `:` is a comment; a line with no colon is
// a field with an empty value; one space after the colon is removed; unknown
// fields are ignored. A blank line ends an event. Blank lines before an
// event's first line dispatch nothing: their bytes lead the next event's raw.
//
// Pull style, one thread, no I/O:
//
//     reader.feed(chunk);
//     while (const sse::Event* e = reader.next()) { ... }
//     ...
//     reader.finish();                       // the upstream ended cleanly
//     while (const sse::Event* e = reader.next()) { ... }  // e->terminated may be false
//     const sse::Totals& t = reader.totals();
//
// Zero-copy: an event that starts and ends inside one chunk is yielded as
// views into that chunk; only an event that spans chunks is copied, once,
// into a buffer the reader reuses. Each byte is scanned once, so a
// multi-megabyte event costs linear time. No heap allocation per event in the
// steady state.
//
// Bounded (docs/behaviour.md section 8: memory is bounded whatever the upstream sends):
// with limits set, a line longer than Limits::line bytes, or an event longer
// than Limits::event bytes, stops the reader as soon as the scan passes that
// length, before the rest of it is copied anywhere: next() then yields
// nothing more and overflow() says which limit it was. A line's length is its
// bytes without its line end (field name, BOMs and all); an event's is its
// raw bytes so far (the blank lines that lead it included). The reader keeps
// at most about one limit plus one chunk.
//
// A blank line that ends in a bare CR as the very last byte fed is held until
// the next byte (or finish()) shows whether an LF follows, so that the LF stays
// in that event's raw bytes. A CRLF stream loses nothing by it; a CR-only
// stream sees an event one read later, at worst at the end of the stream.
#pragma once

#include "sse/byte_buffer.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace modelproxy::sse {

// One event. Every view points into the chunk passed to feed() or into the
// reader's own buffer, and stays valid until the next call of feed(), next(),
// finish() or reset() on the reader that yielded it (the chunk must live that
// long too).
struct Event {
    // The exact bytes: any blank lines before it, its lines with their
    // original line ends and BOMs, and the blank line that ended it. The raw
    // bytes of all events plus Totals::leftover are the input, byte for byte.
    std::string_view raw;
    std::string_view name;                   // value of the last `event:` line; empty when none
    std::string_view id;                     // value of the last `id:` line without NUL; empty when none
    std::optional<std::uint64_t> retry;      // last `retry:` made of ASCII digits only
    std::span<const std::string_view> data;  // each `data` line's value, in order (section 7 parses each alone)
    bool comment_only = false;               // every line was a comment (e.g. ": keep-alive")
    // false only for the last event after finish(): the stream ended before
    // the blank line. SSE clients discard such an event; it is yielded so the
    // relay can still inspect and account for it, and is not counted in Totals.
    bool terminated = true;
    // Memory from raw.data() up to here may be read, never written (at least
    // the raw bytes). Lets the inspector skip simdjson's padding copy.
    const char* readable_end = nullptr;
};

struct Totals {
    std::uint64_t events = 0;          // terminated events with a non-comment line
    std::uint64_t data_events = 0;     // terminated events with at least one `data` line
    std::uint64_t comment_events = 0;  // terminated comment-only events
    bool unterminated = false;         // after finish(): an unterminated event was yielded
    // After finish() and next() returned nullptr: the bytes after the last
    // event that form no event (blank lines, lines of BOMs only). Empty
    // before that.
    std::string_view leftover;

    // No event with data arrived (docs/behaviour.md section 8's empty_stream): an SSE
    // client dispatches an event only when it carries data. A comment, an
    // `event:`-only block, or an unterminated last event does not count.
    bool no_data_events() const { return data_events == 0; }
};

class Reader {
public:
    struct Limits {
        std::size_t line = SIZE_MAX;   // bytes of one line, without its line end
        std::size_t event = SIZE_MAX;  // raw bytes of one event
    };
    enum class Overflow : std::uint8_t { none, line, event };

    Reader() = default;
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    // Next input bytes. `readable_after` is how many bytes after the chunk's
    // end the caller guarantees readable (a buffer's spare capacity); it only
    // lets the inspector avoid a copy. Bytes of the previous chunk that next()
    // has not reached yet are kept (copied), so draining first is cheaper but
    // not required. Ignored after finish().
    void feed(std::string_view chunk, std::size_t readable_after = 0);

    // The upstream body ended. next() then yields what remains, the last
    // event possibly with terminated == false.
    void finish();

    // The next complete event, or nullptr when more input (or finish()) is
    // needed, or after finish() when nothing is left.
    const Event* next();

    const Totals& totals() const { return totals_; }

    // The limits of the next stream (reset() keeps them). Unlimited until set.
    void set_limits(Limits limits) { limits_ = limits; }
    // Which limit stopped the reader (none while it reads on). Once set,
    // next() returns nullptr and feed() ignores its input until reset().
    Overflow overflow() const { return overflow_; }

    // True when `bytes` lie in the input of the last feed() (the chunk, or
    // the reader's copy of a chunk joined to what the previous one left):
    // those stay valid until the next feed() or reset(), however next() and
    // finish() go on. An event that spanned chunks lies in the reader's own
    // buffer instead, which next() may overwrite.
    bool in_input(std::string_view bytes) const {
        return !in_.empty() && bytes.data() >= in_.data() && bytes.data() + bytes.size() <= in_.data() + in_.size();
    }

    // Back to a fresh stream (a new attempt), keeping buffers for reuse.
    void reset();

private:
    struct Span {
        std::size_t offset = 0;  // from the event's first byte
        std::size_t length = 0;
    };

    const Event* next_direct();
    const Event* next_buffered();
    // One complete line of the current event at [begin, end) of base (no line
    // end). Returns true when it is a blank line that dispatches the event.
    bool on_line(const char* base, std::size_t begin, std::size_t end, bool terminated);
    const Event* emit(const char* base, std::size_t length, bool terminated, const char* readable_end);
    const Event* at_end_of_stream(const char* base, std::size_t length, const char* readable_end);
    // Moves the current event's bytes of the input into buf_ (an event that
    // spans chunks).
    void carry(bool cr_pending);
    std::size_t find_line_end(std::size_t from);
    // True (and the reader stopped) when a line of `line` bytes so far, in an
    // event of `event` raw bytes so far, passes a limit.
    bool over_limit(std::size_t line, std::size_t event);
    std::size_t line_end_length(std::size_t at) const;

    // input
    std::string_view in_;
    std::size_t pos_ = 0;          // next byte of in_ not yet scanned
    const char* in_readable_end_ = nullptr;
    std::size_t next_lf_ = 0;      // cached memchr results within in_ (see find_line_end)
    std::size_t next_cr_ = 0;
    bool lf_known_ = false;
    bool cr_known_ = false;
    bool eof_ = false;
    bool done_ = false;
    Limits limits_;
    Overflow overflow_ = Overflow::none;
    ByteBuffer joined_;            // a not fully read chunk followed by the next one

    // the event being read
    bool buffered_ = false;        // its bytes so far are in buf_ (else in in_ from ev_start_)
    std::size_t ev_start_ = 0;
    ByteBuffer buf_;
    std::size_t line_start_ = 0;   // buffered: offset of the line being read in buf_
    bool cr_pending_ = false;      // buffered: buf_ ends with a CR; an LF may follow
    bool has_line_ = false;        // a non-blank line was seen
    bool has_field_ = false;       // a non-comment line was seen
    std::vector<Span> data_;
    std::optional<Span> name_;
    std::optional<Span> id_;
    std::optional<std::uint64_t> retry_;

    // output
    Event event_;
    std::vector<std::string_view> data_views_;
    Totals totals_;
};

}  // namespace modelproxy::sse
