// What a request body tells routing (docs/behaviour.md section 4), whatever its kind, and
// the body sent upstream with its model rewritten.
// Pure functions over plain values; no I/O.
#pragma once

#include "request/json_body.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::request {

// body with the bytes of span replaced by new_model as a JSON string (quoted,
// escaped); every other byte is unchanged. span must come from
// inspect_json_body on the same body.
std::string rewrite_model(std::string_view body, Span span, std::string_view new_model);

struct MultipartModel {
    ModelField model = ModelField::absent;  // absent also when the body is not well-formed
    std::string model_name;                 // the part's content, when model == string
    Span model_span;                        // the part's content bytes, no CRLF
};

// One part of a multipart/form-data body: its header block (CRLF-separated
// lines, without the blank line) and its content's bytes.
struct MultipartPart {
    std::string_view headers;
    Span content;
};

// The parts of a multipart/form-data body whose boundary comes from
// content_type (quoted or not), in order. Lines must end in CRLF (RFC
// 7578/2046). nullopt when the body is not well-formed (no boundary, no
// close delimiter, a part without its header block's end).
std::optional<std::vector<MultipartPart>> multipart_parts(std::string_view content_type, std::string_view body);

// Whether a part's header block is a file's: its Content-Disposition has a
// filename (or filename*) parameter, or it has a Content-Type other than
// text/* (RFC 7578 section 4.2: form fields carry no file name).
bool is_file_part(std::string_view headers);

// The value of the part named "model" (Content-Disposition: form-data;
// name="model", quoted or not, any case) in a multipart/form-data body, whose
// boundary comes from content_type (quoted or not). Lines must end in CRLF
// (RFC 7578/2046). Two model parts are ModelField::duplicate.
MultipartModel multipart_model(std::string_view content_type, std::string_view body);

enum class BodyKind {
    none,       // an empty body, whatever its Content-Type
    json,       // application/json or application/<x>+json, parameters and case ignored
    multipart,  // multipart/form-data
    other,      // any other or no Content-Type
};

BodyKind body_kind(std::string_view content_type, std::size_t body_size);

// The body facts routing needs: only the member matching kind is filled.
struct BodyFacts {
    BodyKind kind = BodyKind::none;
    JsonBody json;
    MultipartModel multipart;

    // The top-level model as routing sees it, whichever the kind.
    ModelField model() const;
    const std::string& model_name() const;
    // Section 4: the client wants a stream iff its JSON body has "stream": true.
    bool wants_stream() const { return kind == BodyKind::json && json.stream; }
};

BodyFacts inspect_body(std::string_view content_type, std::string_view body, std::size_t readable = 0);

// The body to send upstream: body with the model value replaced by
// upstream_model (JSON-escaped for JSON, raw bytes for multipart). A body
// whose facts carry no string model is returned unchanged.
std::string upstream_body(std::string_view body, const BodyFacts& facts,
                          std::string_view upstream_model);

}  // namespace modelproxy::request
