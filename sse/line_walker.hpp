// One pass over a whole JSON document (a data line or a body) with simdjson
// On-Demand: it validates every value, since On-Demand alone is lazy and
// would not notice malformed JSON in a member nobody reads, and records on the
// way what the endpoint's rules need (sse/inspect.hpp says which). Every
// handler consumes the value it is given fully, so nothing is skipped
// unvalidated. Internal to sse/: the Inspector is the interface.
//
// Keys and strings are read through simdjson's own accessors, which run all
// of On-Demand's checks (an in-place read once skipped the check of what
// follows a value and let `{"a":"b":5}` through).
#pragma once

#include "policy/endpoint.hpp"
#include "sse/inspect.hpp"

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

// Returns a simdjson error from the enclosing function (every step of the
// On-Demand walk can fail); shared by line_walker.cpp and line_walker_text.cpp.
#define MP_TRY(expr)                                                          \
    do {                                                                      \
        if (const ::simdjson::error_code mp_e_ = (expr); mp_e_ != ::simdjson::SUCCESS) { \
            return mp_e_;                                                     \
        }                                                                     \
    } while (false)

namespace modelproxy::sse::detail {

// JSON's number grammar, whole token, trailing whitespace allowed.
bool valid_number(std::string_view token);
// A member's key, unescaped (which validates its escapes).
simdjson::error_code key_of(simdjson::ondemand::field& field, std::string_view& out);
// A value known to be a string, unescaped (which validates its escapes).
simdjson::error_code string_of(simdjson::ondemand::value& v, std::string_view& out);

// An object's fields, each key read with key_of, handed in order to
// on_field(key, value), which must consume the value (On-Demand is forward
// only). The first error stops the walk.
template <class OnField>
simdjson::error_code each_field(simdjson::ondemand::object& object, OnField&& on_field) {
    for (auto result : object) {
        simdjson::ondemand::field field;
        MP_TRY(std::move(result).get(field));
        std::string_view key;
        MP_TRY(key_of(field, key));
        MP_TRY(on_field(key, field.value()));
    }
    return simdjson::SUCCESS;
}

// An array's elements, handed in order to on_element(value).
template <class OnElement>
simdjson::error_code each_element(simdjson::ondemand::array& array, OnElement&& on_element) {
    for (auto result : array) {
        simdjson::ondemand::value element;
        MP_TRY(result.get(element));
        MP_TRY(on_element(element));
    }
    return simdjson::SUCCESS;
}

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
    // object, answer_text (chat/completions), finish_reason, type, models,
    // usage and answer_fragments; the members below hold the rest for the
    // Inspector's rules.
    simdjson::error_code document(simdjson::ondemand::document& doc);

    // The same rules over a document simdjson's DOM parser has already
    // validated whole (sse/line_walker_dom.cpp): the fast path. The DOM
    // parser is the stricter of the two where they differ (it refuses what
    // it cannot represent, which On-Demand then decides), so a line it takes
    // is one document() takes too, and reads the same.
    void dom_document(simdjson::dom::element root);

    // Applies the responses / messages rules to the fragments collected
    // (which event types carry answer text, and their keys). Called after
    // document() whatever it returned: `type` may come after `delta`.
    void settle_fragments();

    ErrorFields top_error;        // top-level `error`
    ErrorFields response_error;   // `response.error` (responses)
    ErrorFields top_code;         // top-level `code` (responses `type: "error"`)
    bool saw_error = false;       // a top-level `error` member
    bool other_member = false;    // a top-level member other than `error` and `"type":"error"`
    bool delta_nonempty = false;  // responses: top-level `delta` is non-empty
    std::int64_t top_index = 0;   // responses `output_index`; messages `index`
    std::int64_t top_sub = 0;     // responses `content_index` / `summary_index`

private:
    using element = simdjson::dom::element;
    using value = simdjson::ondemand::value;
    using error_code = simdjson::error_code;

    // A member that should be an object: its fields to on_field (each_field);
    // any other value is validated and skipped at `depth`.
    template <class OnField>
    error_code object_fields(value& v, int depth, OnField&& on_field) {
        simdjson::ondemand::json_type type;
        MP_TRY(v.type().get(type));
        if (type != simdjson::ondemand::json_type::object) return skip(v, depth);
        simdjson::ondemand::object object;
        MP_TRY(v.get_object().get(object));
        return each_field(object, on_field);
    }

    error_code top_member(std::string_view key, value& v);
    error_code skip(value& v, int depth);
    error_code nonempty(value& v, int depth, bool& out);
    error_code string_member(value& v, int depth, std::string_view& out);
    error_code int_member(value& v, int depth, std::int64_t& out);
    error_code type_member(value& v);
    error_code model_member(value& v, int depth);
    error_code code_member(value& v, int depth, ErrorFields& into);
    error_code error_member(value& v, int depth, ErrorFields& into);
    error_code usage_member(value& v, int depth);
    error_code choices_member(value& v);
    error_code delta_member(value& v, int depth);
    error_code text_member(value& v, int depth, AnswerTextKey::Field field, bool& nonempty_out);
    error_code function_member(value& v, int depth, bool& nonempty_out);
    error_code tool_calls_member(value& v, int depth, bool& nonempty_out);
    error_code messages_delta_member(value& v);

    void dom_top_member(std::string_view key, element v);
    void dom_model(element v);
    void dom_code(element v, ErrorFields& into);
    void dom_error(element v, ErrorFields& into);
    void dom_usage(element v);
    void dom_choices(element v);
    void dom_delta(element v);
    bool dom_text(element v, AnswerTextKey::Field field);
    bool dom_function(element v);
    bool dom_tool_calls(element v);
    void dom_messages_delta(element v);
    void dom_response(element v);
    void dom_message(element v);
    error_code finish_reason_member(value& v, int depth);
    error_code response_member(value& v);
    error_code message_member(value& v);

    DataInfo& out_;
    policy::Endpoint endpoint_;
    const char* text_end_;
};


}  // namespace modelproxy::sse::detail
