// The top-level members of a JSON object, read by a plain scanner that shares
// no code with simdjson or request/json_body: request_fuzz's oracle for the
// routing facts (model, stream, background). Only for text that
// check_strict_json() found valid; it does not validate.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::fuzz {

struct TopMember {
    std::string key;          // decoded
    std::size_t value_offset; // of the value's first byte in the text
    std::string_view value;   // the value's bytes (a string with its quotes)
};

struct TopLevel {
    bool object = false;  // the root is an object; members are filled only then
    std::vector<TopMember> members;  // in text order, duplicates kept
};

TopLevel top_level(std::string_view valid_json);

// A JSON string's contents (between the quotes) decoded to UTF-8; an escaped
// surrogate without its pair decodes to U+FFFD (what request/json_body.hpp
// promises for model names).
std::string decode_json_string(std::string_view contents);

}  // namespace modelproxy::fuzz
