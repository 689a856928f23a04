// An independent, strict RFC 8259 JSON checker: the fuzzers' oracle for
// DataKind::json ("the whole line is one JSON value", sse/inspect.hpp). It
// shares no code with simdjson, so a leniency there cannot hide here. Slow
// and simple on purpose: plain recursive descent (input depth is bounded by
// the fuzzer's input length, and walking stops at strict_json_max_depth).
#pragma once

#include <cstddef>
#include <string_view>

namespace modelproxy::fuzz {

struct StrictJson {
    bool valid = false;  // exactly one JSON value, only whitespace around it, UTF-8 throughout
    // Valid JSON that the Inspector may refuse by design, so the "valid
    // implies json" direction is not checked for it: nesting deeper than
    // line_walker's bound, a root number a double cannot hold (simdjson's
    // root getter parses it), an escaped surrogate without its pair (not
    // Unicode text; simdjson refuses it).
    bool too_deep = false;
    bool unrepresentable_root_number = false;
    bool lone_surrogate = false;
};

// Nesting (arrays and objects, the root one counted) beyond this is
// too_deep; line_walker refuses beyond about 512. Validity is still decided
// up to strict_json_max_depth, where walking stops as invalid.
inline constexpr int strict_json_deep = 500;
inline constexpr int strict_json_max_depth = 20000;

StrictJson check_strict_json(std::string_view text);

// The length of the valid UTF-8 sequence (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF) at s[i], i < s.size(); 0 if none.
std::size_t utf8_length_at(std::string_view s, std::size_t i);

}  // namespace modelproxy::fuzz
