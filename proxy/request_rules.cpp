#include "proxy/request_rules.hpp"

#include "proxy/json_string.hpp"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

namespace modelproxy::proxy {

namespace od = simdjson::ondemand;

namespace {

constexpr std::string_view models_prefix = "/v1/models/";

using policy::ascii_lower;

bool istarts_with(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

// The percent-escapes a path is refused for, found in one pass over its
// '%'s (memchr) rather than a comparison at every position.
struct PathEscapes {
    bool dot_or_slash = false;  // %2e, %2f
    bool backslash = false;     // %5c
};

PathEscapes path_escapes(std::string_view path) {
    PathEscapes found;
    for (std::size_t i = path.find('%'); i != std::string_view::npos && i + 2 < path.size();
         i = path.find('%', i + 1)) {
        const char hi = path[i + 1];
        const char lo = ascii_lower(path[i + 2]);
        if (hi == '2' && (lo == 'e' || lo == 'f')) found.dot_or_slash = true;
        if (hi == '5' && lo == 'c') found.backslash = true;
    }
    return found;
}

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view text) {
    while (!text.empty() && is_ows(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_ows(text.back())) text.remove_suffix(1);
    return text;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        const int hi = hex_value(text[i + 1]);
        const int lo = hex_value(text[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

bool is_models_path(std::string_view path) {
    return path == "/v1/models" || (path.starts_with(models_prefix) && path.size() > models_prefix.size());
}

// The media type of a Content-Type value, without parameters, as sent:
// compared case-insensitively, never copied (issue 2: a lower-cased copy of
// "application/json" is past the short string size, one allocation per request).
std::string_view media_type(std::string_view content_type) {
    return trim_ows(content_type.substr(0, content_type.find(';')));
}

bool iends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && iequals(text.substr(text.size() - suffix.size()), suffix);
}

// The value of parameter `name` (case-insensitive) in a header value of the
// form `first-element *( ";" name "=" ( token / quoted-string ) )`, as used by
// Content-Type and Content-Disposition. A quoted-string's backslash escapes
// are decoded. nullopt when absent or malformed.
std::optional<std::string> header_param(std::string_view value, std::string_view name) {
    std::size_t i = value.find(';');
    if (i == std::string_view::npos) return std::nullopt;
    ++i;
    while (i < value.size()) {
        while (i < value.size() && (is_ows(value[i]) || value[i] == ';')) ++i;
        const std::size_t eq = value.find('=', i);
        if (eq == std::string_view::npos) return std::nullopt;
        const std::size_t semicolon = value.find(';', i);
        if (semicolon < eq) {  // a parameter without a value: skip it
            i = semicolon;
            continue;
        }
        const std::string_view param = trim_ows(value.substr(i, eq - i));
        i = eq + 1;
        while (i < value.size() && is_ows(value[i])) ++i;
        std::string param_value;
        if (i < value.size() && value[i] == '"') {
            ++i;
            bool closed = false;
            while (i < value.size()) {
                const char c = value[i++];
                if (c == '"') {
                    closed = true;
                    break;
                }
                if (c == '\\') {
                    if (i >= value.size()) return std::nullopt;
                    param_value += value[i++];
                } else {
                    param_value += c;
                }
            }
            if (!closed) return std::nullopt;
            while (i < value.size() && value[i] != ';') ++i;
        } else {
            const std::size_t end = std::min(value.find(';', i), value.size());
            param_value = std::string(trim_ows(value.substr(i, end - i)));
            i = end;
        }
        if (iequals(param, name)) return param_value;
    }
    return std::nullopt;
}

// ------------------------------------------------------------------- JSON

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
// on long chat histories (issue 7, tests/bench/routing_bench).
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

std::string replace_span(std::string_view body, Span span, std::string_view replacement) {
    std::string out;
    out.reserve(body.size() - span.size + replacement.size());
    out.append(body.substr(0, span.offset));
    out.append(replacement);
    out.append(body.substr(span.offset + span.size));
    return out;
}

// ------------------------------------------------------------- multipart

// Whether a part's header block (CRLF-separated lines) is
// `Content-Disposition: form-data; name="model"`.
bool is_model_part(std::string_view headers) {
    while (!headers.empty()) {
        const std::size_t eol = std::min(headers.find("\r\n"), headers.size());
        const std::string_view line = headers.substr(0, eol);
        headers.remove_prefix(std::min(eol + 2, headers.size()));
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        if (!iequals(trim_ows(line.substr(0, colon)), "content-disposition")) continue;
        const std::string_view value = trim_ows(line.substr(colon + 1));
        if (!iequals(trim_ows(value.substr(0, value.find(';'))), "form-data")) return false;
        const auto name = header_param(value, "name");
        return name && *name == "model";
    }
    return false;
}

// ------------------------------------------------------------------ tokens

// Equal in time that depends only on the lengths, never on where the bytes differ.
bool constant_time_equal(std::string_view presented, std::string_view expected) {
    unsigned char diff = presented.size() == expected.size() ? 0 : 1;
    const std::size_t n = std::max(presented.size(), expected.size());
    for (std::size_t i = 0; i < n; ++i) {
        const auto a = static_cast<unsigned char>(i < presented.size() ? presented[i] : 0);
        const auto b = static_cast<unsigned char>(i < expected.size() ? expected[i] : 0);
        diff |= static_cast<unsigned char>(a ^ b);
    }
    return diff == 0;
}

// The token of "Bearer <token>" (scheme case-insensitive), else nullopt.
std::optional<std::string_view> bearer_token(std::string_view authorization) {
    authorization = trim_ows(authorization);
    const std::size_t space = authorization.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    if (!iequals(authorization.substr(0, space), "bearer")) return std::nullopt;
    return trim_ows(authorization.substr(space + 1));
}

bool matches_any(std::string_view presented, const std::vector<std::string>& tokens) {
    bool matched = false;
    for (const auto& token : tokens) {
        const bool equal = constant_time_equal(presented, token);
        matched = matched || (equal && !token.empty());
    }
    return matched;
}

}  // namespace

// ------------------------------------------------------------------ target

Target check_path(std::string_view target) {
    Target out;
    const std::size_t q = target.find('?');
    out.path = target.substr(0, q);
    out.query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
    if (target.empty() || target.front() != '/' || target.find('#') != std::string_view::npos) {
        out.status = TargetStatus::not_origin_form;
        return out;
    }
    std::string_view rest = out.path.substr(1);
    while (true) {
        const std::size_t slash = rest.find('/');
        if (rest.substr(0, slash) == "..") {
            out.status = TargetStatus::dot_dot_segment;
            return out;
        }
        if (slash == std::string_view::npos) break;
        rest.remove_prefix(slash + 1);
    }
    const PathEscapes escapes = path_escapes(out.path);
    if (escapes.dot_or_slash) {
        out.status = TargetStatus::encoded_dot_or_slash;
    } else if (out.path.find('\\') != std::string_view::npos || escapes.backslash) {
        out.status = TargetStatus::backslash;
    }
    return out;
}

bool under_v1(std::string_view path) { return path == "/v1" || path.starts_with("/v1/"); }

Dispatch dispatch(std::string_view method, std::string_view path) {
    const bool get = method == "GET" || method == "HEAD";
    if (path == "/healthz") return get ? Dispatch::healthz : Dispatch::method_not_allowed;
    if (path == "/readyz") return get ? Dispatch::readyz : Dispatch::method_not_allowed;
    if (path == "/metrics") return get ? Dispatch::metrics : Dispatch::method_not_allowed;
    if (path == "/v1/models") return get ? Dispatch::models_list : Dispatch::forward;
    if (is_models_path(path)) return get ? Dispatch::model_object : Dispatch::forward;
    if (under_v1(path)) return Dispatch::forward;
    return Dispatch::not_found;
}

std::string_view allowed_methods() { return "GET, HEAD"; }

bool needs_client_token(Dispatch dispatch) {
    return dispatch == Dispatch::models_list || dispatch == Dispatch::model_object ||
           dispatch == Dispatch::forward;
}

std::optional<std::string> model_id_from_path(std::string_view path) {
    if (!path.starts_with(models_prefix) || path.size() == models_prefix.size()) return std::nullopt;
    return percent_decode(path.substr(models_prefix.size()));
}

namespace {

void append_percent_encoded(std::string& out, std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        if (unreserved) {
            out += c;
        } else {
            out += '%';
            out += hex[u >> 4];
            out += hex[u & 0xF];
        }
    }
}

}  // namespace

std::string percent_encode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    append_percent_encoded(out, text);
    return out;
}

void upstream_target(std::string& out, const config::Route& route, std::string_view client_path,
                     std::string_view client_query) {
    std::string_view base = route.upstream.base_path;
    while (!base.empty() && base.back() == '/') base.remove_suffix(1);
    if (under_v1(client_path)) client_path.remove_prefix(3);
    out.assign(base);
    out += client_path;
    if (out.empty()) out.push_back('/');
    // The query written in place: '?' before its first byte, '&' between
    // the client's query and each static parameter.
    const std::size_t path_end = out.size();
    if (!client_query.empty()) {
        out += '?';
        out += client_query;
    }
    for (const auto& [key, value] : route.query) {
        out += out.size() == path_end ? '?' : '&';
        append_percent_encoded(out, key);
        out += '=';
        append_percent_encoded(out, value);
    }
}

std::string upstream_target(const config::Route& route, std::string_view client_path,
                            std::string_view client_query) {
    std::string out;
    upstream_target(out, route, client_path, client_query);
    return out;
}

// -------------------------------------------------------------------- body

namespace {

// One on-demand parser and one padded copy of the body per thread, reused by
// every request: simdjson's buffers and the copy grow to the largest body seen
// and are not allocated again per request.
struct JsonScratch {
    od::parser parser;
    std::string padded;
};

JsonScratch& json_scratch() {
    thread_local JsonScratch scratch;
    return scratch;
}

}  // namespace

static_assert(json_padding >= simdjson::SIMDJSON_PADDING);

JsonBody inspect_json_body(std::string_view body, std::size_t readable) {
    JsonScratch& scratch = json_scratch();
    // simdjson reads up to SIMDJSON_PADDING bytes past the document (their
    // values do not matter): in place when the caller's buffer has them.
    const char* text = body.data();
    std::size_t room = readable;
    if (readable < body.size() + json_padding) {
        std::string& padded = scratch.padded;
        padded.assign(body);
        padded.resize(body.size() + json_padding, '\0');
        text = padded.data();
        room = padded.size();
    }
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

std::string rewrite_model(std::string_view body, Span span, std::string_view new_model) {
    std::string value;
    append_json_string(value, new_model);
    return replace_span(body, span, value);
}

MultipartModel multipart_model(std::string_view content_type, std::string_view body) {
    const auto boundary = header_param(content_type, "boundary");
    if (!boundary || boundary->empty()) return {};
    const std::string delimiter = "--" + *boundary;
    const std::string next_delimiter = "\r\n" + delimiter;

    // The first delimiter opens the body or follows a preamble's CRLF.
    std::size_t pos = 0;
    if (!body.starts_with(delimiter)) {
        pos = body.find(next_delimiter);
        if (pos == std::string_view::npos) return {};
        pos += 2;
    }
    MultipartModel found;
    int models = 0;
    while (true) {
        pos += delimiter.size();
        if (body.substr(pos, 2) == "--") break;  // the close delimiter
        while (pos < body.size() && is_ows(body[pos])) ++pos;  // transport padding
        if (body.substr(pos, 2) != "\r\n") return {};
        pos += 2;
        const std::size_t part_end = body.find(next_delimiter, pos);
        if (part_end == std::string_view::npos) return {};
        std::string_view headers;
        std::size_t content = pos;
        if (body.substr(pos, 2) == "\r\n") {
            content = pos + 2;  // a part without headers
        } else {
            const std::size_t blank = body.find("\r\n\r\n", pos);
            if (blank == std::string_view::npos || blank > part_end) return {};
            headers = body.substr(pos, blank - pos);
            content = blank + 4;
        }
        if (content > part_end) return {};
        if (is_model_part(headers) && ++models == 1) {
            found.model_span = {content, part_end - content};
            found.model_name = std::string(body.substr(content, part_end - content));
        }
        pos = part_end + 2;
    }
    if (models == 0) return {};
    if (models > 1) return {ModelField::duplicate, {}, {}};
    found.model = ModelField::string;
    return found;
}

BodyKind body_kind(std::string_view content_type, std::size_t body_size) {
    if (body_size == 0) return BodyKind::none;
    const std::string_view type = media_type(content_type);
    if (iequals(type, "application/json")) return BodyKind::json;
    if (istarts_with(type, "application/") && iends_with(type, "+json")) return BodyKind::json;
    if (iequals(type, "multipart/form-data")) return BodyKind::multipart;
    return BodyKind::other;
}

ModelField BodyFacts::model() const {
    if (kind == BodyKind::json) return json.model;
    if (kind == BodyKind::multipart) return multipart.model;
    return ModelField::absent;
}

const std::string& BodyFacts::model_name() const {
    static const std::string none;
    if (kind == BodyKind::json) return json.model_name;
    if (kind == BodyKind::multipart) return multipart.model_name;
    return none;
}

BodyFacts inspect_body(std::string_view content_type, std::string_view body, std::size_t readable) {
    BodyFacts facts;
    facts.kind = body_kind(content_type, body.size());
    if (facts.kind == BodyKind::json) facts.json = inspect_json_body(body, readable);
    if (facts.kind == BodyKind::multipart) facts.multipart = multipart_model(content_type, body);
    return facts;
}

std::string upstream_body(std::string_view body, const BodyFacts& facts,
                          std::string_view upstream_model) {
    if (facts.model() != ModelField::string) return std::string(body);
    if (facts.kind == BodyKind::json) return rewrite_model(body, facts.json.model_span, upstream_model);
    return replace_span(body, facts.multipart.model_span, upstream_model);
}

bool acceptable_request_encoding(std::string_view content_encoding) {
    content_encoding = trim_ows(content_encoding);
    return content_encoding.empty() || iequals(content_encoding, "identity");
}

bool valid_method(std::string_view method) {
    if (method.empty()) return false;
    for (const char c : method)
        if (!((c >= 'A' && c <= 'Z') || c == '-' || c == '_')) return false;
    return true;
}

HeadCheck check_request_head(const RequestHead& head, std::uint64_t max_body_bytes) {
    if (!valid_method(head.method)) return {ClientError::bad_request};
    if (head.host_fields > 1 || (head.version >= 11 && head.host_fields == 0)) return {ClientError::bad_request};
    if (head.transfer_encoding && (!head.chunked || head.version < 11)) return {ClientError::bad_request};
    if (head.content_length && *head.content_length > max_body_bytes) return {ClientError::payload_too_large};
    if (!acceptable_request_encoding(head.content_encoding)) return {ClientError::unsupported_content_encoding};
    return {std::nullopt, head.version >= 11 && iequals(head.expect, "100-continue")};
}

// ----------------------------------------------------------------- routing

RouteDecision decide_route(std::string_view method, std::string_view path, const BodyFacts& facts,
                           const config::Config& config) {
    if (facts.kind == BodyKind::json && facts.json.shape == JsonShape::invalid) {
        return Refusal{ClientError::invalid_json, std::string(default_message(ClientError::invalid_json))};
    }
    const ModelField model = facts.model();
    if (model == ModelField::duplicate) {
        return Refusal{ClientError::duplicate_model,
                       std::string(default_message(ClientError::duplicate_model))};
    }
    const std::string& name = facts.model_name();
    if (method == "POST" && model == ModelField::string) {
        const config::ModelMatch match = config::find_model(config, name);
        if (!match.route) return Refusal{ClientError::model_not_found, model_not_found_message(name)};
        Forward forward{match.route, match.model, name, std::nullopt};
        if (match.model && !match.model->upstream_model.empty() && match.model->upstream_model != name) {
            forward.upstream_model = match.model->upstream_model;
        }
        return forward;
    }
    if (const config::Route* wildcard = config::wildcard_route(config)) {
        return Forward{wildcard, nullptr, model == ModelField::string ? name : std::string(), std::nullopt};
    }
    // Section 4: "405 for a known path with a wrong method".
    if (is_models_path(path)) {
        return Refusal{ClientError::method_not_allowed,
                       std::string(default_message(ClientError::method_not_allowed))};
    }
    if (facts.kind == BodyKind::json && model != ModelField::string) {
        if (model == ModelField::not_string) {
            return Refusal{ClientError::missing_model,
                           "The top-level `model` of the request body must be a string."};
        }
        return Refusal{ClientError::missing_model, std::string(default_message(ClientError::missing_model))};
    }
    return Refusal{ClientError::no_route, std::string(default_message(ClientError::no_route))};
}

// ----------------------------------------------------------------- headers

// The header rules below run for every field of every request and answer:
// each switches on the name's length first, so a name is compared with only
// the fixed names of its length (issue 7).

bool is_hop_by_hop(std::string_view name) {
    switch (name.size()) {
        case 2: return iequals(name, "te");
        case 7: if (iequals(name, "trailer") || iequals(name, "upgrade")) return true; break;
        case 10: if (iequals(name, "connection") || iequals(name, "keep-alive")) return true; break;
        case 17: if (iequals(name, "transfer-encoding")) return true; break;
        default: break;
    }
    return istarts_with(name, "proxy-");
}

namespace {

// Calls `on_token` with each non-empty token of a Connection value, as sent
// (not lower-cased), until it returns true; whether one did.
template <class OnToken>
bool any_connection_token(std::string_view connection_value, OnToken on_token) {
    while (!connection_value.empty()) {
        const std::size_t comma = std::min(connection_value.find(','), connection_value.size());
        const std::string_view token = trim_ows(connection_value.substr(0, comma));
        if (!token.empty() && on_token(token)) return true;
        connection_value.remove_prefix(std::min(comma + 1, connection_value.size()));
    }
    return false;
}

}  // namespace

ConnectionListed connection_lists(std::string_view connection_value, std::string_view name) {
    const bool listed = any_connection_token(connection_value, [&](std::string_view token) { return iequals(token, name); });
    return listed ? ConnectionListed::yes : ConnectionListed::no;
}

ConnectionTokens::ConnectionTokens(std::string_view connection_value)
    : value_(connection_value),
      only_usual_(!any_connection_token(connection_value, [](std::string_view token) {
          return !iequals(token, "keep-alive") && !iequals(token, "close");
      })) {}

ConnectionListed ConnectionTokens::lists(std::string_view name) const {
    if (only_usual_ && name.size() != std::string_view("keep-alive").size() &&
        name.size() != std::string_view("close").size()) {
        return ConnectionListed::no;
    }
    return connection_lists(value_, name);
}

bool is_client_credential(std::string_view name) {
    return iequals(name, "authorization") || iequals(name, "x-api-key") || iequals(name, "api-key");
}

bool is_modelproxy_header(std::string_view name) { return istarts_with(name, "x-modelproxy-"); }

bool forward_request_header(std::string_view name, ConnectionListed listed, const CredentialRule& credentials) {
    if (is_hop_by_hop(name) || listed == ConnectionListed::yes) return false;
    switch (name.size()) {
        case 4: if (iequals(name, "host")) return false; break;
        case 6: if (iequals(name, "expect")) return false; break;
        case 14: if (iequals(name, "content-length")) return false; break;
        case 15: if (iequals(name, "accept-encoding")) return false; break;
        default: break;
    }
    if (is_modelproxy_header(name)) return false;
    if (!credentials.client_token_header.empty() && iequals(name, credentials.client_token_header)) {
        return false;
    }
    if (!credentials.injected_key_header.empty() &&
        (is_client_credential(name) || iequals(name, credentials.injected_key_header))) {
        return false;
    }
    return true;
}

bool forward_response_header(std::string_view name, ConnectionListed listed) {
    if (is_hop_by_hop(name) || listed == ConnectionListed::yes) return false;
    switch (name.size()) {
        case 14: if (iequals(name, "content-length")) return false; break;
        case 16: if (iequals(name, "content-encoding")) return false; break;
        default: break;
    }
    return !is_modelproxy_header(name);
}

// ----------------------------------------------------------- client tokens

ClientAuth authorize_client(std::optional<std::string_view> authorization,
                            std::optional<std::string_view> x_api_key,
                            const std::vector<std::string>& tokens) {
    if (tokens.empty()) return ClientAuth::open;
    // Both candidates are compared against every token, so the time taken
    // does not tell which header or which token came close.
    const std::optional<std::string_view> bearer =
        authorization ? bearer_token(*authorization) : std::nullopt;
    const bool bearer_ok = matches_any(bearer.value_or(std::string_view{}), tokens) && bearer.has_value();
    const std::string_view api_key = x_api_key ? trim_ows(*x_api_key) : std::string_view{};
    const bool api_key_ok = matches_any(api_key, tokens) && x_api_key.has_value();
    if (bearer_ok) return ClientAuth::bearer;
    if (api_key_ok) return ClientAuth::api_key;
    return ClientAuth::refused;
}

bool client_authorized(std::optional<std::string_view> authorization,
                       std::optional<std::string_view> x_api_key,
                       const std::vector<std::string>& tokens) {
    return authorize_client(authorization, x_api_key, tokens) != ClientAuth::refused;
}

std::string_view token_header(ClientAuth auth) {
    switch (auth) {
    case ClientAuth::bearer: return "authorization";
    case ClientAuth::api_key: return "x-api-key";
    default: return {};
    }
}

bool carries_client_token(std::string_view value, const std::vector<std::string>& tokens) {
    for (const auto& token : tokens)
        if (!token.empty() && value.find(token) != std::string_view::npos) return true;
    return false;
}

}  // namespace modelproxy::proxy
