#include "request/json_body.hpp"

#include "request/json_scratch.hpp"
#include "request/text.hpp"

#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <optional>

namespace modelproxy::request {

namespace od = simdjson::ondemand;

namespace {

bool is_json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim_json_ws(std::string_view text) {
    while (!text.empty() && is_json_ws(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_json_ws(text.back())) text.remove_suffix(1);
    return text;
}

// RFC 8259 section 6: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. Checked by
// grammar, not by range: 1e400 and 20-digit integers are valid JSON.
bool valid_number(std::string_view n) {
    std::size_t i = 0;
    auto digits = [&] {
        const std::size_t start = i;
        while (i < n.size() && n[i] >= '0' && n[i] <= '9') ++i;
        return i > start;
    };
    if (i < n.size() && n[i] == '-') ++i;
    if (i < n.size() && n[i] == '0') {
        ++i;
    } else if (!digits()) {
        return false;
    }
    if (i < n.size() && n[i] == '.') {
        ++i;
        if (!digits()) return false;
    }
    if (i < n.size() && (n[i] == 'e' || n[i] == 'E')) {
        ++i;
        if (i < n.size() && (n[i] == '+' || n[i] == '-')) ++i;
        if (!digits()) return false;
    }
    return i == n.size();
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::optional<std::uint32_t> hex4(std::string_view text, std::size_t at) {
    if (at + 4 > text.size()) return std::nullopt;
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
        const int h = hex_value(text[at + k]);
        if (h < 0) return std::nullopt;
        v = v * 16 + static_cast<std::uint32_t>(h);
    }
    return v;
}

// Checks the escapes of a JSON string's contents (between the quotes) and,
// when out is given, appends the decoded text. simdjson's stage 1 has already
// refused invalid UTF-8 and unescaped control characters. A lone surrogate
// escape decodes to U+FFFD instead of failing (see inspect_json_body).
//
// The bytes between escapes need no check, so they are stepped over with
// memchr and appended in one piece: a request's strings are almost all plain
// text, and a byte-by-byte loop over them was most of the routing walk's time
// on long chat histories (tests/bench/routing_bench).
bool decode_json_string(std::string_view raw, std::string* out) {
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const void* found = std::memchr(raw.data() + i, '\\', raw.size() - i);
        const std::size_t escape =
            found ? static_cast<std::size_t>(static_cast<const char*>(found) - raw.data()) : raw.size();
        if (out) out->append(raw.data() + i, escape - i);
        if (escape == raw.size()) return true;
        i = escape;
        if (++i >= raw.size()) return false;
        char plain = 0;
        switch (raw[i]) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
            const auto unit = hex4(raw, i + 1);
            if (!unit) return false;
            i += 4;
            std::uint32_t cp = *unit;
            if (cp >= 0xD800 && cp <= 0xDBFF && i + 2 < raw.size() && raw[i + 1] == '\\' &&
                raw[i + 2] == 'u') {
                const auto low = hex4(raw, i + 3);
                if (!low) return false;
                if (*low >= 0xDC00 && *low <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (*low - 0xDC00);
                    i += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
            if (out) append_utf8(*out, cp);
            continue;
        }
        default:
            return false;
        }
        if (out) *out += plain;
    }
    return true;
}

// The contents of a field's key, between its quotes. The key's quotes were
// located by simdjson's stage 1, so the closing quote is found by skipping
// escapes.
std::string_view key_contents(od::field& field) {
    const char* begin = field.key().raw();
    const char* p = begin;
    while (*p != '"') p += (*p == '\\') ? 2 : 1;
    return {begin, static_cast<std::size_t>(p - begin)};
}

// A validated key equal to `name` once decoded ("mod\u0065l" is "model").
// nullopt when the key's escapes are invalid.
std::optional<bool> key_is(std::string_view raw_key, std::string_view name) {
    if (raw_key.find('\\') == std::string_view::npos) return raw_key == name;
    std::string decoded;
    if (!decode_json_string(raw_key, &decoded)) return std::nullopt;
    return decoded == name;
}

// The value's token: a scalar's bytes without the whitespace simdjson keeps after it.
std::string_view scalar_token(od::value& value) { return trim_json_ws(value.raw_json_token()); }

bool valid_scalar(od::json_type type, std::string_view token) {
    switch (type) {
    case od::json_type::string:
        return token.size() >= 2 && token.front() == '"' && token.back() == '"' &&
               decode_json_string(token.substr(1, token.size() - 2), nullptr);
    case od::json_type::number: return valid_number(token);
    case od::json_type::boolean: return token == "true" || token == "false";
    case od::json_type::null: return token == "null";
    default: return false;
    }
}

// The deepest nesting accepted. Not only a stack bound: simdjson on-demand
// (3.0.1) does not refuse documents deeper than its parser's max_depth (1024);
// it asserts in debug builds and writes past its depth array in release
// builds. So the walk must never enter a container near that depth.
constexpr int max_depth = 512;
static_assert(max_depth + 8 < simdjson::DEFAULT_MAX_DEPTH);

// Visits every value below `value` so that the whole document is checked:
// on-demand parsing validates only what is read.
bool valid_value(od::value& value, int depth) {
    if (depth > max_depth) return false;
    od::json_type type;
    if (value.type().get(type)) return false;
    if (type == od::json_type::object) {
        od::object object;
        if (value.get_object().get(object)) return false;
        for (auto item : object) {
            od::field field;
            if (std::move(item).get(field)) return false;
            if (!decode_json_string(key_contents(field), nullptr)) return false;
            if (!valid_value(field.value(), depth + 1)) return false;
        }
        return true;
    }
    if (type == od::json_type::array) {
        od::array array;
        if (value.get_array().get(array)) return false;
        for (auto item : array) {
            od::value element;
            if (std::move(item).get(element)) return false;
            if (!valid_value(element, depth + 1)) return false;
        }
        return true;
    }
    if (!valid_scalar(type, scalar_token(value))) return false;
    if (type != od::json_type::string) return true;
    // A string is consumed, not only peeked at: simdjson on-demand steps over
    // an unconsumed string by its structure alone, and so took
    // {"a":"b":"c"},"d":1} for an object (found by tests/fuzz/request_fuzz).
    od::raw_json_string consumed;
    return !value.get_raw_json_string().get(consumed);
}

bool document_at_end(od::document& doc) {
    const char* location = nullptr;
    return doc.current_location().get(location) == simdjson::OUT_OF_BOUNDS;
}

// A top-level "stream" / "background" member counts only as the literal true.
bool is_literal_true(od::value& value) {
    od::json_type type;
    return !value.type().get(type) && type == od::json_type::boolean && scalar_token(value) == "true";
}

bool is_number(od::value& value) {
    od::json_type type;
    return !value.type().get(type) && type == od::json_type::number;
}

// A number whose value is not `n` (0, 0.0, -0 and 0e5 are all 0); false for
// anything that is not a number.
bool number_other_than(od::value& value, double n) {
    if (!is_number(value)) return false;
    double d = 0;
    if (value.get_double().get(d)) return true;
    return d != n;
}

}  // namespace

static_assert(json_padding >= simdjson::SIMDJSON_PADDING);

// One on-demand parser and one padded copy of the body per thread, reused by
// every request: simdjson's buffers and the copy grow to the largest body seen
// and are not allocated again per request.
detail::JsonScratch& detail::json_scratch() {
    thread_local JsonScratch scratch;
    return scratch;
}

void detail::padded_body(JsonScratch& scratch, std::string_view body, std::size_t readable, const char*& text,
                         std::size_t& room) {
    // simdjson reads up to SIMDJSON_PADDING bytes past the document (their
    // values do not matter): in place when the caller's buffer has them.
    text = body.data();
    room = readable;
    if (readable < body.size() + json_padding) {
        std::string& padded = scratch.padded;
        padded.assign(body);
        padded.resize(body.size() + json_padding, '\0');
        text = padded.data();
        room = padded.size();
    }
}

JsonBody inspect_json_body(std::string_view body, std::size_t readable) {
    detail::JsonScratch& scratch = detail::json_scratch();
    const char* text = nullptr;
    std::size_t room = 0;
    detail::padded_body(scratch, body, readable, text, room);
    od::parser& parser = scratch.parser;
    od::document doc;
    if (parser.iterate(text, body.size(), room).get(doc)) return {};
    od::json_type type;
    if (doc.type().get(type)) return {};

    JsonBody out;
    if (type == od::json_type::object) {
        od::object object;
        if (doc.get_object().get(object)) return {};
        int models = 0;
        for (auto item : object) {
            od::field field;
            if (std::move(item).get(field)) return {};
            const std::string_view key = key_contents(field);
            const auto is_model = key_is(key, "model");
            if (!is_model) return {};
            od::value& value = field.value();
            if (*is_model) {
                if (++models == 1) {
                    od::json_type value_type;
                    if (value.type().get(value_type)) return {};
                    if (value_type == od::json_type::string) {
                        const std::string_view token = scalar_token(value);
                        if (token.size() < 2 ||
                            !decode_json_string(token.substr(1, token.size() - 2), &out.model_name)) {
                            return {};
                        }
                        out.model_span = {static_cast<std::size_t>(token.data() - text), token.size()};
                        out.model = ModelField::string;
                    } else {
                        out.model = ModelField::not_string;
                    }
                }
            } else if (*key_is(key, "stream")) {
                out.stream = is_literal_true(value);
            } else if (*key_is(key, "background")) {
                out.background = is_literal_true(value);
            } else if (*key_is(key, "n")) {
                out.several_choices = number_other_than(value, 1);
            } else if (*key_is(key, "temperature")) {
                out.temperature_zero = is_number(value) && !number_other_than(value, 0);
            } else if (*key_is(key, "seed")) {
                od::json_type seed_type;
                out.seed = !value.type().get(seed_type) && seed_type != od::json_type::null;
            }
            if (!valid_value(value, 1)) return {};
        }
        if (!document_at_end(doc)) return {};
        if (models > 1) {
            out.model = ModelField::duplicate;
            out.model_name.clear();
            out.model_span = {};
        }
        out.shape = JsonShape::object;
        return out;
    }
    if (type == od::json_type::array) {
        od::array array;
        if (doc.get_array().get(array)) return {};
        for (auto item : array) {
            od::value element;
            if (std::move(item).get(element)) return {};
            if (!valid_value(element, 1)) return {};
        }
        if (!document_at_end(doc)) return {};
        out.shape = JsonShape::other;
        return out;
    }
    // A scalar document: its one token must be the whole (trimmed) body.
    std::string_view token;
    if (doc.raw_json_token().get(token)) return {};
    token = trim_json_ws(token);
    if (!valid_scalar(type, token) || token.size() != trim_json_ws(body).size()) return {};
    out.shape = JsonShape::other;
    return out;
}

}  // namespace modelproxy::request
