// A stream's data lines mostly repeat the line before them byte for byte
// except for one string: the answer text. An OpenAI chunk is about 260 bytes
// of which the id, object, created, model, fingerprint, index, logprobs and
// finish_reason repeat on every line and only `delta.content` changes. Parsing
// and walking each line whole costs more than everything else the relay does
// per event (simdjson's stages 1 and 2 and the walk: about two thirds of a
// stream's user instructions).
//
// RepeatedShape proves, for such a line, that it is the last fully parsed line
// with only some scalar values changed, none of which any rule reads but the
// answer text, and then nothing else needs reading:
//
//  - Learned from a line L0 that the Inspector parsed and walked whole, that
//    has no backslash anywhere and exactly one answer-text fragment T. With no
//    backslash, every string token's bytes are its decoded value, and the
//    quotes alternate open, close, open... So the tokens whose bytes are T are
//    known exactly; when there is exactly one, it is T's own token.
//  - Besides T, a value may change when it is a string or an integer of a
//    top-level member named in `free_keys` (below): members no rule of the
//    walk reads on any endpoint, which providers change on every line
//    (OpenAI's `obfuscation`, the Responses API's `sequence_number`).
//  - L0 is then fixed segments around those values: each string value
//    between its quotes (which stay in the segments), each integer's digits.
//  - A line L1 matches when it is the same segments in the same order, T's
//    value non-empty, every string value with no `"`, no `\` and no byte
//    below 0x20 and valid UTF-8, and every integer `-?(0|[1-9][0-9]*)`. Each
//    value is then one whole token of the same kind as in L0 (a string cannot
//    end early and has no escapes to check; an integer cannot run into the
//    next segment, which starts with what followed it in L0), so L1 is valid
//    JSON with exactly L0's members and order, and only those values
//    changed. Everything the walk read from L0 reads the same from L1; the
//    fragment's text is T's new value (no escapes: its bytes are its value),
//    and it being non-empty keeps every "non-empty" rule (section 1) as it
//    was.
//
// Anything else (an escape anywhere, a second fragment, an ambiguous T, any
// other change) is not a match, and the line is parsed whole. Pure: bytes in,
// a view out.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::sse {

class RepeatedShape {
public:
    // Top-level members whose string or integer value may change between
    // matching lines. None of them is read by any rule of the walk
    // (sse/line_walker.hpp: top-level error, type, model, usage, choices,
    // delta, response, code, output_index, content_index, summary_index,
    // message, index), so their values never change what a line says.
    static constexpr std::string_view free_keys[] = {"id",       "created", "system_fingerprint",
                                                     "obfuscation", "sequence_number", "item_id"};

    // Learns L0 (`line`) with its one fragment `text`; false (and nothing
    // learned) when the rules above do not pin T's token down.
    bool learn(std::string_view line, std::string_view text);
    // T's value in `line` (a view into it) when `line` is L0 with only the
    // values above changed; else nullopt.
    std::optional<std::string_view> match(std::string_view line) const;
    void forget() { known_ = false; }
    bool known() const { return known_; }

private:
    enum class Kind : unsigned char { answer, string, integer };
    struct Slot {
        std::size_t open;   // the value's first byte in L0 (a string's after its quote)
        std::size_t close;  // one past its last byte (a string's closing quote)
        Kind kind;
    };
    std::string line_;         // L0, kept (storage reused from line to line)
    std::vector<Slot> slots_;  // in line order
    std::size_t answer_ = 0;   // T's slot in slots_
    bool known_ = false;
};

}  // namespace modelproxy::sse
