// One pass over a whole JSON document (a data line or a body) with simdjson
// On-Demand: it validates every value, since On-Demand alone is lazy and
// would not notice malformed JSON in a member nobody reads, and records on the
// way what the endpoint's rules need (sse/inspect.hpp says which). Every
// handler consumes the value it is given fully, so nothing is skipped
// unvalidated. Internal to sse/: the Inspector is the interface.
#pragma once

#include "policy/endpoint.hpp"
#include "sse/inspect.hpp"

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::sse::detail {

// What one `error` object declared, as views into the parser (valid until
// its next iterate).
struct ErrorFields {
    bool present = false;
    std::optional<std::int64_t> code_int;
    std::string_view code;
    std::string_view type;
    std::string_view inner;
};

class LineWalker {
public:
    LineWalker(DataInfo& out, policy::Endpoint endpoint, const char* text_end = nullptr)
        : out_(out), endpoint_(endpoint), text_end_(text_end) {}

    // SUCCESS when the document is one whole JSON value. Fills out's
    // object, answer_text (chat/completions), finish_reason, type, models and
    // usage; the members below hold the rest for the Inspector's rules.
    simdjson::error_code document(simdjson::ondemand::document& doc);

    ErrorFields top_error;        // top-level `error`
    ErrorFields response_error;   // `response.error` (responses)
    ErrorFields top_code;         // top-level `code` (responses `type: "error"`)
    bool saw_error = false;       // a top-level `error` member
    bool other_member = false;    // a top-level member other than `error` and `"type":"error"`
    bool delta_nonempty = false;  // responses: top-level `delta` is non-empty

private:
    using value = simdjson::ondemand::value;
    using error_code = simdjson::error_code;

    error_code top_member(std::string_view key, value& v);
    error_code skip(value& v, int depth);
    error_code nonempty(value& v, int depth, bool& out);
    error_code string_member(value& v, int depth, std::string_view& out);
    error_code type_member(value& v);
    error_code model_member(value& v, int depth);
    error_code code_member(value& v, int depth, ErrorFields& into);
    error_code error_member(value& v, int depth, ErrorFields& into);
    error_code usage_member(value& v, int depth);
    error_code choices_member(value& v);
    error_code delta_member(value& v, int depth);
    error_code finish_reason_member(value& v, int depth);
    error_code response_member(value& v);
    error_code message_member(value& v);

    DataInfo& out_;
    policy::Endpoint endpoint_;
    const char* text_end_;
};

// JSON's number grammar, whole token, trailing whitespace allowed.
bool valid_number(std::string_view token);

}  // namespace modelproxy::sse::detail
