// JSON string escapes decoded wherever they stand in a text, for the
// credential scan's decoded pass (docs/behaviour.md section 8: a body's or an event's
// string values are scanned again as decoded text, so `\u0075`-style
// escapes hide nothing).
//
// No JSON parse: in JSON a backslash occurs only inside strings (keys and
// values), so decoding every escape of the whole text leaves each string's
// decoded form in place, contiguous, between the document's own bytes. A
// secret inside any one string is then in the decoded text whole, whatever
// mix of escaped and plain characters spelled it; a text that is not JSON
// (an SSE line on a generic route, a body of any content type) decodes the
// same way, which can only find more. Text without a backslash decodes to
// itself, which the raw scan has already covered: callers test with
// holds_escape first and skip the pass (the common case).
//
// Pure, no allocation: the caller owns the output buffer.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

namespace modelproxy::sse {

inline bool holds_escape(std::string_view text) {
    return !text.empty() && std::memchr(text.data(), '\\', text.size()) != nullptr;
}

// Writes `text` with its JSON escapes decoded to `out`, which must have room
// for text.size() bytes (decoding never lengthens: `\uXXXX` is six bytes
// for at most three, a surrogate pair twelve for four, `\n` two for one);
// returns the end of what it wrote. Decoded: `\"` `\\` `\/` `\b` `\f` `\n`
// `\r` `\t`, and `\uXXXX` (either hex case) as UTF-8, a high and low
// surrogate pair as one code point, a lone surrogate as its three-byte form.
// Anything else (`\x`, a `\u` without four hex digits, a final `\`) is
// copied as it is.
char* unescape_json(std::string_view text, char* out);

}  // namespace modelproxy::sse
