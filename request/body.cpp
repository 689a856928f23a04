#include "request/body.hpp"

#include "request/json_string.hpp"
#include "request/text.hpp"

#include <algorithm>
#include <optional>

namespace modelproxy::request {

namespace {

// The media type of a Content-Type value, without parameters, as sent:
// compared case-insensitively, never copied (a lower-cased copy of
// "application/json" is past the short string size, one allocation per request).
std::string_view media_type(std::string_view content_type) {
    return trim_ows(content_type.substr(0, content_type.find(';')));
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

std::string replace_span(std::string_view body, Span span, std::string_view replacement) {
    std::string out;
    out.reserve(body.size() - span.size + replacement.size());
    out.append(body.substr(0, span.offset));
    out.append(replacement);
    out.append(body.substr(span.offset + span.size));
    return out;
}

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

}  // namespace

std::string rewrite_model(std::string_view body, Span span, std::string_view new_model) {
    std::string value;
    append_json_string(value, new_model);
    return replace_span(body, span, value);
}

std::optional<std::vector<MultipartPart>> multipart_parts(std::string_view content_type, std::string_view body) {
    const auto boundary = header_param(content_type, "boundary");
    if (!boundary || boundary->empty()) return std::nullopt;
    const std::string delimiter = "--" + *boundary;
    const std::string next_delimiter = "\r\n" + delimiter;

    // The first delimiter opens the body or follows a preamble's CRLF.
    std::size_t pos = 0;
    if (!body.starts_with(delimiter)) {
        pos = body.find(next_delimiter);
        if (pos == std::string_view::npos) return std::nullopt;
        pos += 2;
    }
    std::vector<MultipartPart> parts;
    while (true) {
        pos += delimiter.size();
        if (body.substr(pos, 2) == "--") break;  // the close delimiter
        while (pos < body.size() && is_ows(body[pos])) ++pos;  // transport padding
        if (body.substr(pos, 2) != "\r\n") return std::nullopt;
        pos += 2;
        const std::size_t part_end = body.find(next_delimiter, pos);
        if (part_end == std::string_view::npos) return std::nullopt;
        std::string_view headers;
        std::size_t content = pos;
        if (body.substr(pos, 2) == "\r\n") {
            content = pos + 2;  // a part without headers
        } else {
            const std::size_t blank = body.find("\r\n\r\n", pos);
            if (blank == std::string_view::npos || blank > part_end) return std::nullopt;
            headers = body.substr(pos, blank - pos);
            content = blank + 4;
        }
        if (content > part_end) return std::nullopt;
        parts.push_back(MultipartPart{headers, Span{content, part_end - content}});
        pos = part_end + 2;
    }
    return parts;
}

bool is_file_part(std::string_view headers) {
    while (!headers.empty()) {
        const std::size_t eol = std::min(headers.find("\r\n"), headers.size());
        const std::string_view line = headers.substr(0, eol);
        headers.remove_prefix(std::min(eol + 2, headers.size()));
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view name = trim_ows(line.substr(0, colon));
        const std::string_view value = trim_ows(line.substr(colon + 1));
        if (iequals(name, "content-disposition") &&
            (header_param(value, "filename") || header_param(value, "filename*"))) {
            return true;
        }
        if (iequals(name, "content-type") && !istarts_with(media_type(value), "text/")) return true;
    }
    return false;
}

MultipartModel multipart_model(std::string_view content_type, std::string_view body) {
    const auto parts = multipart_parts(content_type, body);
    if (!parts) return {};
    MultipartModel found;
    int models = 0;
    for (const MultipartPart& part : *parts) {
        if (is_model_part(part.headers) && ++models == 1) {
            found.model_span = part.content;
            found.model_name = std::string(body.substr(part.content.offset, part.content.size));
        }
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

}  // namespace modelproxy::request
