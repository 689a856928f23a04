// The token estimate a route's quota reserves for one attempt
// (docs/behaviour.md section 15): the body's text bytes / 4, rounded up,
// plus the output the body asks for, at most the route's tokens_per_minute.
// The answer's usage settles the reservation later, so this errs on neither
// side by much and never reads base64 data as text.
//
// No I/O, no exceptions, no shared state beyond the thread's JSON scratch
// (request/json_scratch.hpp): safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace modelproxy::request {

// The output a body that names no output bound is assumed to ask for.
inline constexpr std::int64_t default_output_tokens = 1024;

struct TokenEstimate {
    std::int64_t text_bytes = 0;     // the bytes counted as text (below)
    std::int64_t output_tokens = 0;  // the body's output bound, else default_output_tokens
    std::int64_t tokens = 0;         // ceil(text_bytes / 4) + output_tokens, at most the cap
    friend bool operator==(const TokenEstimate&, const TokenEstimate&) = default;
};

// What counts as text:
// - a JSON body (any body that parses as one JSON value, whatever its
//   Content-Type, unless that is multipart/form-data): the decoded UTF-8
//   bytes of every string value, keys excluded, without
//   - base64 `data:` URLs anywhere in a string (`data:<type>;base64,` and
//     the base64 run after it; a data: URL that is not base64 is text),
//   - the value of any `b64_json` member,
//   - the `data` member of an object under an `image_url` or `input_audio`
//     key (OpenAI's image and audio parts),
//   - the `data` member of an object under a `source` key whose `type` is
//     `base64` (Anthropic's base64 image and document blocks);
// - a multipart/form-data body: the content bytes of its parts that are not
//   files (is_file_part in request/body.hpp); headers and delimiters are not
//   counted;
// - any other body (not JSON, or multipart that is not well-formed): its
//   raw bytes.
// The output bound: the first of the top-level `max_tokens`,
// `max_completion_tokens`, `max_output_tokens` (in that order) that holds a
// number >= 0 (its integer part), else default_output_tokens.
// `tokens_per_minute` caps the result; 0 = no cap. `readable` as
// inspect_json_body's: bytes readable from body.data(), so that a body with
// simdjson's padding behind it is read in place.
TokenEstimate estimate_tokens(std::string_view content_type, std::string_view body,
                              std::int64_t tokens_per_minute, std::size_t readable = 0);

}  // namespace modelproxy::request
