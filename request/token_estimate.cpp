#include "request/token_estimate.hpp"

#include "request/body.hpp"
#include "request/json_scratch.hpp"
#include "request/text.hpp"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

namespace modelproxy::request {

namespace od = simdjson::ondemand;

namespace {

// As json_body.cpp's walk: simdjson on-demand must never be led near its
// own depth limit.
constexpr int max_depth = 512;

// An output bound above this is read as this: far beyond any model's
// output, and a sum with any body's text cannot overflow.
constexpr double max_output = 1e15;

// The longest media type and parameters read between "data:" and ','.
constexpr std::size_t max_data_header = 256;

bool is_json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim_json_ws(std::string_view text) {
    while (!text.empty() && is_json_ws(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_json_ws(text.back())) text.remove_suffix(1);
    return text;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The \uXXXX unit at raw[at..at+4), or -1.
long unit_at(std::string_view raw, std::size_t at) {
    if (at + 4 > raw.size()) return -1;
    long v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
        const int h = hex_digit(raw[at + k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

// The UTF-8 length of a JSON string's raw contents once decoded: a simple
// escape is one byte, \uXXXX the UTF-8 length of its code point, a
// surrogate pair 4, a lone surrogate 3 (U+FFFD, as json_body.cpp decodes
// it). A malformed or cut escape counts its bytes as they are.
std::int64_t decoded_length(std::string_view raw) {
    std::int64_t length = 0;
    std::size_t i = 0;
    while (i < raw.size()) {
        const void* found = std::memchr(raw.data() + i, '\\', raw.size() - i);
        const std::size_t escape =
            found ? static_cast<std::size_t>(static_cast<const char*>(found) - raw.data()) : raw.size();
        length += static_cast<std::int64_t>(escape - i);
        if (escape + 1 >= raw.size()) return length + static_cast<std::int64_t>(raw.size() - escape);
        if (raw[escape + 1] != 'u') {
            length += 1;
            i = escape + 2;
            continue;
        }
        const long cp = unit_at(raw, escape + 2);
        if (cp < 0) {
            length += 2;
            i = escape + 2;
            continue;
        }
        i = escape + 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < raw.size() && raw[i] == '\\' && raw[i + 1] == 'u') {
            const long low = unit_at(raw, i + 2);
            if (low >= 0xDC00 && low <= 0xDFFF) {
                length += 4;
                i += 6;
                continue;
            }
        }
        length += cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;  // a lone surrogate: U+FFFD, 3 bytes
    }
    return length;
}

bool is_base64_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
           c == '=' || c == '-' || c == '_';
}

// Where the base64 data: URL starting at raw[at] ("data:") ends, or at
// itself when it is not one: "data:", a media type and parameters holding
// ";base64" up to ',', then the run of base64 characters. In the raw
// string a '/' may be written "\/", and MIME line breaks "\n" or "\r".
std::size_t data_url_end(std::string_view raw, std::size_t at) {
    const std::size_t header = at + 5;
    const std::size_t limit = std::min(raw.size(), header + max_data_header);
    std::size_t comma = header;
    while (comma < limit && raw[comma] != ',') {
        const char c = raw[comma];
        if (static_cast<unsigned char>(c) <= ' ' || c == '"') return at;
        ++comma;
    }
    if (comma >= limit) return at;
    const std::string_view params = raw.substr(header, comma - header);
    bool base64 = false;
    for (std::size_t p = params.find(';'); p != std::string_view::npos; p = params.find(';', p + 1)) {
        base64 = base64 || iequals(params.substr(p + 1, 6), "base64");
    }
    if (!base64) return at;
    std::size_t end = comma + 1;
    while (end < raw.size()) {
        if (is_base64_char(raw[end])) {
            ++end;
        } else if (raw[end] == '\\' && end + 1 < raw.size() &&
                   (raw[end + 1] == '/' || raw[end + 1] == 'n' || raw[end + 1] == 'r')) {
            end += 2;
        } else {
            break;
        }
    }
    return end;
}

// The text bytes of a string's raw contents: its decoded length, less its
// base64 data: URLs.
std::int64_t string_text(std::string_view raw) {
    std::int64_t text = 0;
    std::size_t from = 0;
    for (std::size_t at = raw.find("data:"); at != std::string_view::npos; at = raw.find("data:", at + 1)) {
        const std::size_t end = data_url_end(raw, at);
        if (end == at) continue;
        text += decoded_length(raw.substr(from, at - from));
        from = end;
        at = end - 1;
    }
    return text + decoded_length(raw.substr(from));
}

// Where a member's object sits, for the rules on its `data` member.
enum class Parent { other, media, source };

Parent parent_of(std::string_view key) {
    if (key == "image_url" || key == "input_audio") return Parent::media;
    if (key == "source") return Parent::source;
    return Parent::other;
}

constexpr std::array<std::string_view, 3> output_keys = {"max_tokens", "max_completion_tokens",
                                                         "max_output_tokens"};

// A member's key between its quotes, as written (not decoded: a key spelt
// with escapes matches no rule).
std::string_view key_contents(od::field& field) {
    const char* begin = field.key().raw();
    const char* p = begin;
    while (*p != '"') p += (*p == '\\') ? 2 : 1;
    return {begin, static_cast<std::size_t>(p - begin)};
}

// A string value's raw contents, the value consumed.
bool raw_string(od::value& value, std::string_view& out) {
    const std::string_view token = trim_json_ws(value.raw_json_token());
    od::raw_json_string consumed;
    if (token.size() < 2 || value.get_raw_json_string().get(consumed)) return false;
    out = token.substr(1, token.size() - 2);
    return true;
}

// A number >= 0 as an output bound (its integer part); nullopt otherwise.
std::optional<std::int64_t> output_bound(od::value& value) {
    const std::string_view token = trim_json_ws(value.raw_json_token());
    double number = 0;
    const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), number);
    if (error != std::errc() || end != token.data() + token.size() || !(number >= 0)) return std::nullopt;
    return static_cast<std::int64_t>(std::floor(std::min(number, max_output)));
}

class Walk {
public:
    std::int64_t text = 0;
    std::array<std::optional<std::int64_t>, output_keys.size()> outputs;

    bool object(od::object object, Parent parent, int depth, bool top);
    bool array(od::array array, int depth);
    bool value(od::value value, Parent parent, int depth);
};

bool Walk::value(od::value value, Parent parent, int depth) {
    od::json_type type;
    if (value.type().get(type)) return false;
    if (type == od::json_type::string) {
        std::string_view raw;
        if (!raw_string(value, raw)) return false;
        text += string_text(raw);
        return true;
    }
    if (type == od::json_type::object) {
        od::object child;
        return !value.get_object().get(child) && object(child, parent, depth + 1, false);
    }
    if (type == od::json_type::array) {
        od::array child;
        return !value.get_array().get(child) && array(child, depth + 1);
    }
    return true;  // numbers, booleans and null hold no text
}

bool Walk::array(od::array array, int depth) {
    if (depth > max_depth) return false;
    for (auto item : array) {
        od::value element;
        if (std::move(item).get(element) || !value(element, Parent::other, depth)) return false;
    }
    return true;
}

bool Walk::object(od::object object, Parent parent, int depth, bool top) {
    if (depth > max_depth) return false;
    // A source's data is counted once its type is known, wherever it stands.
    std::optional<std::int64_t> source_data;
    bool source_base64 = false;
    for (auto item : object) {
        od::field field;
        if (std::move(item).get(field)) return false;
        const std::string_view key = key_contents(field);
        od::value& member = field.value();
        od::json_type type;
        if (member.type().get(type)) return false;
        if (type == od::json_type::string) {
            std::string_view raw;
            if (!raw_string(member, raw)) return false;
            if (key == "b64_json" || (parent == Parent::media && key == "data")) continue;
            const std::int64_t bytes = string_text(raw);
            if (parent == Parent::source && key == "data") {
                source_data = bytes;
                continue;
            }
            if (parent == Parent::source && key == "type") source_base64 = raw == "base64";
            text += bytes;
            continue;
        }
        if (top && type == od::json_type::number) {
            for (std::size_t k = 0; k < output_keys.size(); ++k) {
                if (key == output_keys[k]) outputs[k] = output_bound(member);
            }
            continue;
        }
        if (!value(member, parent_of(key), depth)) return false;
    }
    if (source_data && !source_base64) text += *source_data;
    return true;
}

bool document_at_end(od::document& doc) {
    const char* location = nullptr;
    return doc.current_location().get(location) == simdjson::OUT_OF_BOUNDS;
}

// The JSON rules above; nullopt when the body is not one JSON value.
std::optional<Walk> walk_json(std::string_view body, std::size_t readable) {
    detail::JsonScratch& scratch = detail::json_scratch();
    const char* text = nullptr;
    std::size_t room = 0;
    detail::padded_body(scratch, body, readable, text, room);
    od::document doc;
    if (scratch.parser.iterate(text, body.size(), room).get(doc)) return std::nullopt;
    od::json_type type;
    if (doc.type().get(type)) return std::nullopt;
    Walk walk;
    if (type == od::json_type::object) {
        od::object object;
        if (doc.get_object().get(object) || !walk.object(object, Parent::other, 1, true)) return std::nullopt;
    } else if (type == od::json_type::array) {
        od::array array;
        if (doc.get_array().get(array) || !walk.array(array, 1)) return std::nullopt;
    } else {
        // A scalar document: its one token must be the whole (trimmed) body.
        std::string_view token;
        if (doc.raw_json_token().get(token)) return std::nullopt;
        token = trim_json_ws(token);
        if (token.size() != trim_json_ws(body).size()) return std::nullopt;
        if (type == od::json_type::string) {
            if (token.size() < 2 || token.front() != '"' || token.back() != '"') return std::nullopt;
            walk.text = string_text(token.substr(1, token.size() - 2));
        }
        return walk;
    }
    if (!document_at_end(doc)) return std::nullopt;
    return walk;
}

}  // namespace

TokenEstimate estimate_tokens(std::string_view content_type, std::string_view body, std::int64_t tokens_per_minute,
                              std::size_t readable) {
    TokenEstimate estimate;
    estimate.output_tokens = default_output_tokens;
    estimate.text_bytes = static_cast<std::int64_t>(body.size());  // any other body: its raw bytes
    const BodyKind kind = body_kind(content_type, body.size());
    if (kind == BodyKind::none) {
        estimate.text_bytes = 0;
    } else if (kind == BodyKind::multipart) {
        if (const auto parts = multipart_parts(content_type, body)) {
            estimate.text_bytes = 0;
            for (const MultipartPart& part : *parts) {
                if (!is_file_part(part.headers)) estimate.text_bytes += static_cast<std::int64_t>(part.content.size);
            }
        }
    } else if (const std::optional<Walk> walk = walk_json(body, readable)) {
        estimate.text_bytes = walk->text;
        for (const auto& output : walk->outputs) {
            if (output) {
                estimate.output_tokens = *output;
                break;
            }
        }
    }
    estimate.tokens = (estimate.text_bytes + 3) / 4 + estimate.output_tokens;
    if (tokens_per_minute > 0) estimate.tokens = std::min(estimate.tokens, tokens_per_minute);
    return estimate;
}

}  // namespace modelproxy::request
