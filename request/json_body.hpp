// Reading a JSON request body (docs/behaviour.md section 4): whether it is one valid JSON
// value, and its top-level routing members (model, stream, background).
//
// No I/O, no exceptions, no shared state: every call is safe from any
// thread. inspect_json_body holds, for the call's duration, a padded copy of
// the body plus simdjson's structural index and string buffer (roughly 6
// bytes per body byte, ~200 MiB for a 32 MiB body) in per-thread scratch
// space, reused by the thread's next call.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace modelproxy::request {

// A byte range of the body.
struct Span {
    std::size_t offset = 0;
    std::size_t size = 0;
    friend bool operator==(const Span&, const Span&) = default;
};

enum class JsonShape {
    invalid,  // not one RFC 8259 JSON value (trailing bytes, bad escape, BOM), or nested deeper than 512
    object,   // a JSON object
    other,    // valid JSON that is not an object (array, string, number, ...)
};

enum class ModelField {
    absent,      // no top-level model
    string,      // exactly one top-level model, a string
    not_string,  // exactly one top-level model, not a string
    duplicate,   // the top-level model key appears more than once (any values)
};

struct JsonBody {
    JsonShape shape = JsonShape::invalid;
    ModelField model = ModelField::absent;
    std::string model_name;  // decoded, when model == string
    Span model_span;         // the string value including its quotes, when model == string
    bool stream = false;     // the last top-level "stream" is the literal true
    bool background = false; // the last top-level "background" is the literal true
    // docs/behaviour.md section 16: what a resume of a cut stream needs of
    // the request (the last of each top-level member counts).
    bool several_choices = false;  // "n" is a number other than 1
    bool temperature_zero = false; // "temperature" is a number equal to 0
    bool seed = false;             // "seed" is present and not null
};

// Validates body as JSON (with simdjson on-demand, every value visited) and
// reads its top-level routing members. Keys are compared decoded, so
// "mod\u0065l" is a model key; nested model keys are not routing information.
// String escapes are checked by grammar only: a lone surrogate escape such as
// "\ud800" is accepted (JavaScript clients send them; the providers' parsers
// take them) and decodes to U+FFFD in model_name.
// `readable`: how many bytes from body.data() may be read (a string's
// capacity). With simdjson's padding there past the body, the body is read
// in place; else a padded copy is made (a large body read with its declared
// length has the room: transport::RequestParser reserves it).
JsonBody inspect_json_body(std::string_view body, std::size_t readable = 0);
// The bytes past a JSON body that reading it in place needs.
inline constexpr std::size_t json_padding = 64;

}  // namespace modelproxy::request
