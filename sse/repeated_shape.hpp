// A stream's data lines mostly repeat the line before them byte for byte
// except for one string: the answer text. An OpenAI chunk is about 260 bytes
// of which the id, object, created, model, fingerprint, index, logprobs and
// finish_reason repeat on every line and only `delta.content` changes. Parsing
// and walking each line whole costs more than everything else the relay does
// per event (simdjson's stages 1 and 2 and the walk: about two thirds of a
// stream's user instructions).
//
// RepeatedShape proves, for such a line, that it is the last fully parsed line
// with that one string's bytes replaced, and then nothing else needs reading:
//
//  - Learned from a line L0 that the Inspector parsed and walked whole, that
//    has no backslash anywhere and exactly one answer-text fragment T. With no
//    backslash, every string token's bytes are its decoded value, and the
//    quotes alternate open, close, open... So the tokens whose bytes are T are
//    known exactly; when there is exactly one, it is T's own token, and L0 is
//    prefix + T + suffix, the prefix ending with T's opening quote and the
//    suffix starting with its closing quote.
//  - A line L1 matches when it starts with that prefix, ends with that
//    suffix, and the middle M between them is non-empty and has no `"`, no
//    `\` and no byte below 0x20, and is valid UTF-8. Then M is a whole JSON
//    string token (it cannot end early, and has no escapes to check), so L1
//    is valid JSON with exactly L0's members, values and order, except that
//    T's value is M. Everything the walk read from L0 reads the same from
//    L1; the fragment's text is M (no escapes: its bytes are its value), and
//    M non-empty keeps every "non-empty" rule (section 1) as it was.
//
// Anything else (an escape anywhere, a second fragment, an ambiguous T, a
// change outside T) is not a match, and the line is parsed whole. Pure:
// bytes in, a view out.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace modelproxy::sse {

class RepeatedShape {
public:
    // Learns L0 (`line`) with its one fragment `text`; false (and nothing
    // learned) when the rules above do not pin T's token down.
    bool learn(std::string_view line, std::string_view text);
    // M, a view into `line`, when `line` is L0 with only T's bytes changed
    // as above; else nullopt.
    std::optional<std::string_view> match(std::string_view line) const;
    void forget() { known_ = false; }
    bool known() const { return known_; }

private:
    std::string line_;      // L0, kept (its storage reused from line to line)
    std::size_t open_ = 0;  // T's first byte in L0 (after its opening quote)
    std::size_t close_ = 0; // T's closing quote in L0
    bool known_ = false;
};

}  // namespace modelproxy::sse
