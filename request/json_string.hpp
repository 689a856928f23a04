// The JSON strings the proxy writes itself: record values, its own error
// envelopes, and the upstream_model rewrite of a request body.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace modelproxy::request {

// The most bytes write_json_string writes for `size` input bytes: the two
// quotes and, at worst, a \u00XX escape (6 bytes) for every input byte.
constexpr std::size_t json_string_bound(std::size_t size) { return 2 + 6 * size; }

// Writes `text` as a quoted JSON string at `out`, which must have room for
// json_string_bound(text.size()) bytes, and returns the end of what it wrote.
// Whatever bytes `text` holds, the result is valid JSON (RFC 8259) in valid
// UTF-8: control characters are escaped and each byte of an ill-formed UTF-8
// sequence is replaced by U+FFFD (json_string.cpp). Text with nothing to
// escape (printable ASCII without `"` or `\`, nearly every value) is copied
// as is.
char* write_json_string(char* out, std::string_view text);

// The same string appended to `out`.
void append_json_string(std::string& out, std::string_view text);

}  // namespace modelproxy::request
