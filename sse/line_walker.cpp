#include "sse/line_walker.hpp"

#include <utility>

namespace modelproxy::sse::detail {

namespace {

namespace od = simdjson::ondemand;
using policy::Endpoint;
using simdjson::error_code;
using simdjson::SUCCESS;

#define MP_TRY(expr)                                              \
    do {                                                          \
        if (const error_code mp_e_ = (expr); mp_e_ != SUCCESS) {  \
            return mp_e_;                                         \
        }                                                         \
    } while (false)

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

error_code LineWalker::document(od::document& doc) {
    od::json_type type;
    MP_TRY(doc.type().get(type));
    switch (type) {
        case od::json_type::object: {
            od::object object;
            MP_TRY(doc.get_object().get(object));
            out_.object = true;
            for (auto result : object) {
                od::field field;
                MP_TRY(std::move(result).get(field));
                std::string_view key;
                MP_TRY(field.unescaped_key().get(key));
                MP_TRY(top_member(key, field.value()));
            }
            break;
        }
        case od::json_type::array: {
            od::array array;
            MP_TRY(doc.get_array().get(array));
            for (auto result : array) {
                od::value element;
                MP_TRY(result.get(element));
                MP_TRY(skip(element, 1));
            }
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
            if (key == "delta") return nonempty(v, 1, delta_nonempty);
            if (key == "response") return response_member(v);
            if (key == "code") return code_member(v, 1, top_code);
            break;
        case Endpoint::messages:
            if (key == "message") return message_member(v);
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
            for (auto result : array) {
                od::value element;
                MP_TRY(result.get(element));
                MP_TRY(skip(element, depth + 1));
            }
            return SUCCESS;
        }
        case od::json_type::object: {
            od::object object;
            MP_TRY(v.get_object().get(object));
            for (auto result : object) {
                od::field field;
                MP_TRY(std::move(result).get(field));
                std::string_view key;  // unescaping validates the key's escapes
                MP_TRY(field.unescaped_key().get(key));
                MP_TRY(skip(field.value(), depth + 1));
            }
            return SUCCESS;
        }
        case od::json_type::string: {
            std::string_view s;
            return v.get_string().get(s);
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
            MP_TRY(v.get_string().get(s));
            out = !s.empty();
            return SUCCESS;
        }
        case od::json_type::array: {
            od::array array;
            MP_TRY(v.get_array().get(array));
            bool any = false;
            for (auto result : array) {
                od::value element;
                MP_TRY(result.get(element));
                MP_TRY(skip(element, depth + 1));
                any = true;
            }
            out = any;
            return SUCCESS;
        }
        case od::json_type::object: {
            od::object object;
            MP_TRY(v.get_object().get(object));
            bool any = false;
            for (auto result : object) {
                od::field field;
                MP_TRY(std::move(result).get(field));
                std::string_view key;
                MP_TRY(field.unescaped_key().get(key));
                MP_TRY(skip(field.value(), depth + 1));
                any = true;
            }
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
    return v.get_string().get(out);
}

error_code LineWalker::type_member(od::value& v) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::string) {
        other_member = true;
        return skip(v, 1);
    }
    std::string_view s;
    MP_TRY(v.get_string().get(s));
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
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::object) return skip(v, depth);
    od::object object;
    MP_TRY(v.get_object().get(object));
    for (auto result : object) {
        od::field field;
        MP_TRY(std::move(result).get(field));
        std::string_view key;
        MP_TRY(field.unescaped_key().get(key));
        od::value& member = field.value();
        if (key == "code") {
            MP_TRY(code_member(member, depth + 1, into));
        } else if (key == "type") {
            MP_TRY(string_member(member, depth + 1, into.type));
        } else if (key == "innererror") {
            // Azure: {"error":{"code":"content_filter","innererror":{"code":"ResponsibleAIPolicyViolation"}}}
            od::json_type inner_type;
            MP_TRY(member.type().get(inner_type));
            if (inner_type != od::json_type::object) {
                MP_TRY(skip(member, depth + 1));
                continue;
            }
            od::object inner;
            MP_TRY(member.get_object().get(inner));
            for (auto inner_result : inner) {
                od::field inner_field;
                MP_TRY(std::move(inner_result).get(inner_field));
                std::string_view inner_key;
                MP_TRY(inner_field.unescaped_key().get(inner_key));
                if (inner_key == "code") {
                    MP_TRY(string_member(inner_field.value(), depth + 2, into.inner));
                } else {
                    MP_TRY(skip(inner_field.value(), depth + 2));
                }
            }
        } else {
            MP_TRY(skip(member, depth + 1));  // message is validated, never kept
        }
    }
    return SUCCESS;
}

error_code LineWalker::usage_member(od::value& v, int depth) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::object) return skip(v, depth);  // `"usage": null` in chat chunks
    od::object object;
    MP_TRY(v.get_object().get(object));
    for (auto result : object) {
        od::field field;
        MP_TRY(std::move(result).get(field));
        std::string_view key;
        MP_TRY(field.unescaped_key().get(key));
        od::value& member = field.value();
        std::optional<std::uint64_t>* slot = nullptr;
        if (key == "prompt_tokens" || key == "input_tokens") slot = &out_.usage.input_tokens;
        else if (key == "completion_tokens" || key == "output_tokens") slot = &out_.usage.output_tokens;
        else if (key == "total_tokens") slot = &out_.usage.total_tokens;
        std::uint64_t count = 0;
        od::json_type member_type;
        MP_TRY(member.type().get(member_type));
        if (slot && member_type == od::json_type::number && member.get_uint64().get(count) == SUCCESS) {
            *slot = count;
            continue;
        }
        MP_TRY(skip(member, depth + 1));
    }
    return SUCCESS;
}

error_code LineWalker::choices_member(od::value& v) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::array) return skip(v, 1);
    od::array choices;
    MP_TRY(v.get_array().get(choices));
    for (auto result : choices) {
        od::value choice;
        MP_TRY(result.get(choice));
        od::json_type choice_type;
        MP_TRY(choice.type().get(choice_type));
        if (choice_type != od::json_type::object) {
            MP_TRY(skip(choice, 2));
            continue;
        }
        od::object object;
        MP_TRY(choice.get_object().get(object));
        for (auto field_result : object) {
            od::field field;
            MP_TRY(std::move(field_result).get(field));
            std::string_view key;
            MP_TRY(field.unescaped_key().get(key));
            od::value& member = field.value();
            if (key == "finish_reason") {
                MP_TRY(finish_reason_member(member, 3));
            } else if (endpoint_ == Endpoint::chat_completions && key == "delta") {
                MP_TRY(delta_member(member, 3));
            } else if (endpoint_ == Endpoint::completions && key == "text") {
                std::string_view text;
                MP_TRY(string_member(member, 3, text));
                if (!text.empty()) out_.answer_text = true;
            } else {
                MP_TRY(skip(member, 3));
            }
        }
    }
    return SUCCESS;
}

error_code LineWalker::delta_member(od::value& v, int depth) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::object) return skip(v, depth);
    od::object delta;
    MP_TRY(v.get_object().get(delta));
    for (auto result : delta) {
        od::field field;
        MP_TRY(std::move(result).get(field));
        std::string_view key;
        MP_TRY(field.unescaped_key().get(key));
        if (key == "role") {
            MP_TRY(skip(field.value(), depth + 1));
            continue;
        }
        bool filled = false;
        MP_TRY(nonempty(field.value(), depth + 1, filled));
        if (filled) out_.answer_text = true;
    }
    return SUCCESS;
}

error_code LineWalker::finish_reason_member(od::value& v, int depth) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type == od::json_type::null) return skip(v, depth);
    std::string_view reason;
    if (type == od::json_type::string) {
        MP_TRY(v.get_string().get(reason));
    } else {
        MP_TRY(skip(v, depth));
    }
    if (!out_.finish_reason) out_.finish_reason = reason;
    return SUCCESS;
}

error_code LineWalker::response_member(od::value& v) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::object) return skip(v, 1);
    od::object response;
    MP_TRY(v.get_object().get(response));
    for (auto result : response) {
        od::field field;
        MP_TRY(std::move(result).get(field));
        std::string_view key;
        MP_TRY(field.unescaped_key().get(key));
        od::value& member = field.value();
        if (key == "model") {
            MP_TRY(model_member(member, 2));
        } else if (key == "usage") {
            MP_TRY(usage_member(member, 2));
        } else if (key == "error") {
            MP_TRY(error_member(member, 2, response_error));
        } else {
            MP_TRY(skip(member, 2));
        }
    }
    return SUCCESS;
}

error_code LineWalker::message_member(od::value& v) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::object) return skip(v, 1);
    od::object message;
    MP_TRY(v.get_object().get(message));
    for (auto result : message) {
        od::field field;
        MP_TRY(std::move(result).get(field));
        std::string_view key;
        MP_TRY(field.unescaped_key().get(key));
        od::value& member = field.value();
        if (key == "model") {
            MP_TRY(model_member(member, 2));
        } else if (key == "usage") {
            MP_TRY(usage_member(member, 2));
        } else {
            MP_TRY(skip(member, 2));
        }
    }
    return SUCCESS;
}

}  // namespace modelproxy::sse::detail
