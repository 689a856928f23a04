// The strict form of an HTTP/1.1 head that the one-pass readers take
// (whole_request.hpp for a client's request, whole_answer.hpp for an
// upstream answer): what an SDK or a provider sends, and nothing
// Beast would read differently. A head outside it is Beast's to parse.
//
// Pure: no I/O.
#pragma once

#include "transport/flat_fields.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::transport::strict {

struct ByteTable {
    std::array<bool, 256> yes{};
    bool operator[](char c) const { return yes[static_cast<unsigned char>(c)]; }
};

// RFC 9110 tchar: Beast's token characters (methods, field names, the
// tokens of a Connection list).
inline constexpr ByteTable token_bytes = [] {
    ByteTable t;
    for (int c = '0'; c <= '9'; ++c) t.yes[c] = true;
    for (int c = 'a'; c <= 'z'; ++c) t.yes[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) t.yes[c] = true;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) t.yes[static_cast<unsigned char>(c)] = true;
    return t;
}();

// The CR that ends a line of text (a field value, a reason) starting at
// `p`, found in the pass that checks the bytes before it are space, tab or
// visible ASCII; null when one is not (a control byte, DEL, obs-text: Beast
// takes obs-text, such a head is Beast's) or when no CR comes before `last`.
const char* text_to_cr(const char* p, const char* last);

// The size of the head `bytes` begin with, through the empty line that ends
// it (its first CRLFCRLF), when that is there within `limit` bytes; nullopt
// otherwise. The readers look for it first: their loops then stop inside
// the head, at its last CR at the latest.
std::optional<std::size_t> whole_head(std::string_view bytes, std::size_t limit);

// What the framing fields of a head in the strict form say.
struct Framing {
    std::optional<std::uint64_t> content_length;
    bool close = false;  // a Connection or Proxy-Connection value lists "close"
};

// Reads the fields of a head from `p` (the line after its start line) to
// `end`, one past the empty line that ends it (the caller found the head's
// first CRLFCRLF there), adding each to `out` (name, value without its
// surrounding whitespace, the name's known_field enum; the lines are copied
// into `out` once). False, with `out` in any state, when a line is outside
// the strict form: a name that is not a token, a value with a byte that is
// not text, a line folded into the next, a line end other than CRLF; or
// when the framing is: a Transfer-Encoding or Upgrade field, more than one
// Content-Length or one that is not 1 to 18 digits, a Connection or
// Proxy-Connection value that is not a token list.
bool read_fields(const char* p, const char* end, FlatFields& out, Framing& framing);

}  // namespace modelproxy::transport::strict
