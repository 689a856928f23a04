#include "sse/line_walker.hpp"

#include <utility>

namespace modelproxy::sse::detail {

namespace {

namespace od = simdjson::ondemand;
using policy::Endpoint;
using simdjson::error_code;
using simdjson::SUCCESS;

// Deeper nesting is refused as unparseable rather than risking the stack.
constexpr int max_depth = 512;

}  // namespace

// JSON's number grammar, then only whitespace (On-Demand's token runs to the
// next structural character). Checked here rather than with simdjson's number
// parser, which refuses valid JSON it cannot represent (integers beyond 64
// bits, 1e400).
bool valid_number(std::string_view t) {
    const auto digit = [&](std::size_t i) { return i < t.size() && t[i] >= '0' && t[i] <= '9'; };
    std::size_t i = 0;
    if (i < t.size() && t[i] == '-') ++i;
    if (!digit(i)) return false;
    if (t[i] == '0') {
        ++i;
    } else {
        while (digit(i)) ++i;
    }
    if (i < t.size() && t[i] == '.') {
        ++i;
        if (!digit(i)) return false;
        while (digit(i)) ++i;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
        ++i;
        if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
        if (!digit(i)) return false;
        while (digit(i)) ++i;
    }
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
    return i == t.size();
}

// Keys and strings through simdjson's own accessors: this walk is the
// fallback for lines the DOM parser refuses, and it decides whether they are
// JSON, so it must not skip any of On-Demand's checks. (Reading escape-free
// strings in place here let `{"a":"b":5}` through.)
error_code key_of(od::field& field, std::string_view& out) { return field.unescaped_key().get(out); }

error_code string_of(od::value& v, std::string_view& out) { return v.get_string().get(out); }

error_code LineWalker::document(od::document& doc) {
    od::json_type type;
    MP_TRY(doc.type().get(type));
    switch (type) {
        case od::json_type::object: {
            od::object object;
            MP_TRY(doc.get_object().get(object));
            out_.object = true;
            MP_TRY(each_field(object, [&](std::string_view key, od::value& v) { return top_member(key, v); }));
            break;
        }
        case od::json_type::array: {
            od::array array;
            MP_TRY(doc.get_array().get(array));
            MP_TRY(each_element(array, [&](od::value& element) { return skip(element, 1); }));
            break;
        }
        // Root scalars: simdjson 3.0.1's root getters are not strict (a root
        // string takes trailing content, `nullx` and `falsey` pass, `false  `
        // fails), so the token is checked here: the document's only token
        // (it runs to the end of the text), exactly one JSON scalar.
        default: {
            std::string_view token;
            MP_TRY(doc.raw_json_token().get(token));
            if (token.data() + token.size() != text_end_) return simdjson::TRAILING_CONTENT;
            std::size_t n = token.size();
            while (n > 0 && (token[n - 1] == ' ' || token[n - 1] == '\t' || token[n - 1] == '\n' || token[n - 1] == '\r')) --n;
            token = token.substr(0, n);
            switch (type) {
                case od::json_type::string: {
                    std::size_t i = 1;
                    while (i < token.size() && token[i] != '"') i += token[i] == '\\' ? 2 : 1;
                    if (i + 1 != token.size()) return simdjson::TRAILING_CONTENT;
                    std::string_view s;
                    return doc.get_string().get(s);
                }
                case od::json_type::number:
                    return valid_number(token) ? SUCCESS : simdjson::NUMBER_ERROR;
                case od::json_type::boolean:
                    return token == "true" || token == "false" ? SUCCESS : simdjson::T_ATOM_ERROR;
                case od::json_type::null:
                    return token == "null" ? SUCCESS : simdjson::N_ATOM_ERROR;
                default:
                    return simdjson::INCORRECT_TYPE;
            }
        }
    }
    // After a whole object or array the iterator must be at the end: anything
    // else is trailing content ("{}}" or "{} x").
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return simdjson::TRAILING_CONTENT;
    return SUCCESS;
}

error_code LineWalker::top_member(std::string_view key, od::value& v) {
    if (key == "error") {
        saw_error = true;
        return error_member(v, 1, top_error);
    }
    if (key == "type") return type_member(v);
    other_member = true;
    if (key == "model") return model_member(v, 1);
    if (key == "usage") return usage_member(v, 1);
    switch (endpoint_) {
        case Endpoint::chat_completions:
        case Endpoint::completions:
            if (key == "choices") return choices_member(v);
            break;
        case Endpoint::responses:
            if (key == "delta") return text_member(v, 1, AnswerTextKey::Field::other_delta, delta_nonempty);
            if (key == "response") return response_member(v);
            if (key == "code") return code_member(v, 1, top_code);
            if (key == "output_index") return int_member(v, 1, top_index);
            if (key == "content_index" || key == "summary_index") return int_member(v, 1, top_sub);
            break;
        case Endpoint::messages:
            if (key == "message") return message_member(v);
            if (key == "delta") return messages_delta_member(v);
            if (key == "index") return int_member(v, 1, top_index);
            break;
        default:
            break;
    }
    return skip(v, 1);
}

error_code LineWalker::skip(od::value& v, int depth) {
    if (depth > max_depth) return simdjson::DEPTH_ERROR;
    od::json_type type;
    MP_TRY(v.type().get(type));
    switch (type) {
        case od::json_type::array: {
            od::array array;
            MP_TRY(v.get_array().get(array));
            return each_element(array, [&](od::value& element) { return skip(element, depth + 1); });
        }
        case od::json_type::object: {
            od::object object;
            MP_TRY(v.get_object().get(object));
            // each_field unescapes every key, which validates its escapes.
            return each_field(object, [&](std::string_view, od::value& member) { return skip(member, depth + 1); });
        }
        case od::json_type::string: {
            std::string_view s;
            return string_of(v, s);
        }
        case od::json_type::number:
            // Left unconsumed: the enclosing iterator steps over it.
            return valid_number(v.raw_json_token()) ? SUCCESS : simdjson::NUMBER_ERROR;
        case od::json_type::boolean: {
            bool b;
            return v.get_bool().get(b);
        }
        case od::json_type::null: {
            bool is_null = false;
            MP_TRY(v.is_null().get(is_null));
            return is_null ? SUCCESS : simdjson::N_ATOM_ERROR;
        }
    }
    return simdjson::INCORRECT_TYPE;
}

// Section 1's "non-empty": a non-empty string, array or object, or any
// number or boolean; null is empty.
error_code LineWalker::nonempty(od::value& v, int depth, bool& out) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    switch (type) {
        case od::json_type::string: {
            std::string_view s;
            MP_TRY(string_of(v, s));
            out = !s.empty();
            return SUCCESS;
        }
        case od::json_type::array: {
            od::array array;
            MP_TRY(v.get_array().get(array));
            bool any = false;
            MP_TRY(each_element(array, [&](od::value& element) {
                any = true;
                return skip(element, depth + 1);
            }));
            out = any;
            return SUCCESS;
        }
        case od::json_type::object: {
            od::object object;
            MP_TRY(v.get_object().get(object));
            bool any = false;
            MP_TRY(each_field(object, [&](std::string_view, od::value& member) {
                any = true;
                return skip(member, depth + 1);
            }));
            out = any;
            return SUCCESS;
        }
        case od::json_type::null:
            out = false;
            return skip(v, depth);
        case od::json_type::number:
        case od::json_type::boolean:
            out = true;
            return skip(v, depth);
    }
    return simdjson::INCORRECT_TYPE;
}

error_code LineWalker::string_member(od::value& v, int depth, std::string_view& out) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::string) return skip(v, depth);
    return string_of(v, out);
}

// An integer member (a choice or block index); any other valid value is
// validated and leaves `out` as it was (1.5, 1e99: the position stands).
error_code LineWalker::int_member(od::value& v, int depth, std::int64_t& out) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::number) return skip(v, depth);
    if (!valid_number(v.raw_json_token())) return simdjson::NUMBER_ERROR;
    std::int64_t n = 0;
    if (v.get_int64().get(n) == SUCCESS) out = n;  // else left unconsumed, stepped over
    return SUCCESS;
}

error_code LineWalker::type_member(od::value& v) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::string) {
        other_member = true;
        return skip(v, 1);
    }
    std::string_view s;
    MP_TRY(string_of(v, s));
    out_.type = s;
    if (s != "error") other_member = true;
    return SUCCESS;
}

error_code LineWalker::model_member(od::value& v, int depth) {
    std::string_view model;
    MP_TRY(string_member(v, depth, model));
    if (!model.empty() && out_.model_count < out_.model_slots.size()) {
        out_.model_slots[out_.model_count++] = model;
    }
    return SUCCESS;
}

error_code LineWalker::code_member(od::value& v, int depth, ErrorFields& into) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type == od::json_type::number) {
        std::int64_t code = 0;
        if (v.get_int64().get(code) == SUCCESS) {
            into.code_int = code;
            return SUCCESS;
        }
        return skip(v, depth);  // 503.0, 1e3, beyond 64 bits: valid, not an integer code
    }
    return string_member(v, depth, into.code);
}

error_code LineWalker::error_member(od::value& v, int depth, ErrorFields& into) {
    into.present = true;
    return object_fields(v, depth, [&](std::string_view key, od::value& member) -> error_code {
        if (key == "code") return code_member(member, depth + 1, into);
        if (key == "type") return string_member(member, depth + 1, into.type);
        if (key == "innererror") {
            // Azure: {"error":{"code":"content_filter","innererror":{"code":"ResponsibleAIPolicyViolation"}}}
            return object_fields(member, depth + 1, [&](std::string_view inner_key, od::value& inner) {
                if (inner_key == "code") return string_member(inner, depth + 2, into.inner);
                return skip(inner, depth + 2);
            });
        }
        return skip(member, depth + 1);  // message is validated, never kept
    });
}

error_code LineWalker::usage_member(od::value& v, int depth) {
    // Not an object (`"usage": null` in chat chunks): validated and skipped.
    return object_fields(v, depth, [&](std::string_view key, od::value& member) -> error_code {
        std::optional<std::uint64_t>* slot = nullptr;
        if (key == "prompt_tokens" || key == "input_tokens") slot = &out_.usage.input_tokens;
        else if (key == "completion_tokens" || key == "output_tokens") slot = &out_.usage.output_tokens;
        else if (key == "total_tokens") slot = &out_.usage.total_tokens;
        std::uint64_t count = 0;
        od::json_type member_type;
        MP_TRY(member.type().get(member_type));
        if (slot && member_type == od::json_type::number) {
            if (member.get_uint64().get(count) == SUCCESS) {
                *slot = count;
                return SUCCESS;
            }
            // `-0` counts 0, as simdjson's DOM parser (the fast path) reads
            // it; another negative integer counts nothing. Either way the
            // value was consumed.
            std::int64_t negative = 0;
            if (member.get_int64().get(negative) == SUCCESS) {
                if (negative == 0) *slot = 0;
                return SUCCESS;
            }
        }
        return skip(member, depth + 1);
    });
}

error_code LineWalker::response_member(od::value& v) {
    return object_fields(v, 1, [&](std::string_view key, od::value& member) -> error_code {
        if (key == "model") return model_member(member, 2);
        if (key == "usage") return usage_member(member, 2);
        if (key == "error") return error_member(member, 2, response_error);
        return skip(member, 2);
    });
}

error_code LineWalker::message_member(od::value& v) {
    return object_fields(v, 1, [&](std::string_view key, od::value& member) -> error_code {
        if (key == "model") return model_member(member, 2);
        if (key == "usage") return usage_member(member, 2);
        return skip(member, 2);
    });
}

}  // namespace modelproxy::sse::detail
