// Request bodies the request tests build: multipart parts, and the text of a span.
#pragma once

#include "request/json_body.hpp"

#include <string>
#include <string_view>

namespace modelproxy::test {

inline std::string_view span_text(std::string_view body, request::Span span) {
    return body.substr(span.offset, span.size);
}

// One multipart part with its delimiter line, headers, blank line and content.
inline std::string part(std::string_view boundary, std::string_view headers, std::string_view content) {
    std::string out = "--";
    out += boundary;
    out += "\r\n";
    out += headers;
    out += "\r\n\r\n";
    out += content;
    out += "\r\n";
    return out;
}

// The close delimiter of a multipart body.
inline std::string close(std::string_view boundary) { return "--" + std::string(boundary) + "--\r\n"; }

inline const std::string model_part_headers = "Content-Disposition: form-data; name=\"model\"";
inline const std::string file_part_headers =
    "Content-Disposition: form-data; name=\"file\"; filename=\"model\"\r\nContent-Type: audio/wav";

}  // namespace modelproxy::test
