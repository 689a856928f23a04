// LineWalker's fast path (sse/line_walker.hpp): the same rules as the
// On-Demand walk, read from a document simdjson's DOM parser has built and
// validated in one go. Why two walks: DOM's validating stage 2 runs in
// simdjson's runtime-selected SIMD kernel, where On-Demand's value-by-value
// validation runs in the portable kernel the build targets; on a typical
// 200-byte chunk the DOM parse plus this read costs about half the On-Demand
// walk (tests/bench/boundary_bench.cpp). Nothing here can fail: the document
// is whole and valid JSON, so each reader only looks for what it needs.
//
// Keep each reader in step with its On-Demand twin (line_walker.cpp,
// line_walker_text.cpp); tests/unit/sse/inspect_paths_test.cpp compares the
// two walks line by line.
#include "sse/line_walker.hpp"

namespace modelproxy::sse::detail {

namespace {

namespace dom = simdjson::dom;
using policy::Endpoint;
using simdjson::SUCCESS;
using Field = AnswerTextKey::Field;

void push(std::vector<AnswerFragment>& out, Field field, std::string_view text) {
    if (!text.empty()) out.push_back({{0, 0, field}, text});
}

// Section 1's "non-empty": a non-empty string, array or object, or any
// number or boolean; null is empty.
bool is_nonempty(dom::element v) {
    switch (v.type()) {
        case dom::element_type::STRING: return !v.get_string().value_unsafe().empty();
        case dom::element_type::ARRAY: {
            const dom::array a = v.get_array().value_unsafe();
            return a.begin() != a.end();
        }
        case dom::element_type::OBJECT: {
            const dom::object o = v.get_object().value_unsafe();
            return o.begin() != o.end();
        }
        case dom::element_type::NULL_VALUE: return false;
        default: return true;  // numbers, booleans
    }
}

// A string member: `out` is set only when it is one (as string_member).
void string_in(dom::element v, std::string_view& out) {
    std::string_view s;
    if (v.get_string().get(s) == SUCCESS) out = s;
}

void int_in(dom::element v, std::int64_t& out) {
    std::int64_t n = 0;
    if (v.get_int64().get(n) == SUCCESS) out = n;  // 1.5, 1e99, beyond 63 bits: as it was
}

}  // namespace

void LineWalker::dom_document(dom::element root) {
    dom::object object;
    if (root.get_object().get(object) != SUCCESS) return;  // any other value: nothing to read
    out_.object = true;
    for (const dom::key_value_pair member : object) dom_top_member(member.key, member.value);
}

void LineWalker::dom_top_member(std::string_view key, dom::element v) {
    if (key == "error") {
        saw_error = true;
        return dom_error(v, top_error);
    }
    if (key == "type") {
        std::string_view s;
        if (v.get_string().get(s) != SUCCESS) {
            other_member = true;
            return;
        }
        out_.type = s;
        if (s != "error") other_member = true;
        return;
    }
    other_member = true;
    if (key == "model") return dom_model(v);
    if (key == "usage") return dom_usage(v);
    switch (endpoint_) {
        case Endpoint::chat_completions:
        case Endpoint::completions:
            if (key == "choices") return dom_choices(v);
            break;
        case Endpoint::responses:
            if (key == "delta") {
                delta_nonempty = dom_text(v, Field::other_delta);
            } else if (key == "response") {
                dom_response(v);
            } else if (key == "code") {
                dom_code(v, top_code);
            } else if (key == "output_index") {
                int_in(v, top_index);
            } else if (key == "content_index" || key == "summary_index") {
                int_in(v, top_sub);
            }
            break;
        case Endpoint::messages:
            if (key == "message") {
                dom_message(v);
            } else if (key == "delta") {
                dom_messages_delta(v);
            } else if (key == "index") {
                int_in(v, top_index);
            }
            break;
        default:
            break;
    }
}

void LineWalker::dom_model(dom::element v) {
    std::string_view model;
    string_in(v, model);
    if (!model.empty() && out_.model_count < out_.model_slots.size()) out_.model_slots[out_.model_count++] = model;
}

void LineWalker::dom_code(dom::element v, ErrorFields& into) {
    std::int64_t code = 0;
    if (v.is_number()) {
        if (v.get_int64().get(code) == SUCCESS) into.code_int = code;  // 503.0, 1e3: not an integer code
        return;
    }
    string_in(v, into.code);
}

void LineWalker::dom_error(dom::element v, ErrorFields& into) {
    into.present = true;
    dom::object object;
    if (v.get_object().get(object) != SUCCESS) return;
    for (const dom::key_value_pair member : object) {
        if (member.key == "code") {
            dom_code(member.value, into);
        } else if (member.key == "type") {
            string_in(member.value, into.type);
        } else if (member.key == "innererror") {
            dom::object inner;
            if (member.value.get_object().get(inner) != SUCCESS) continue;
            for (const dom::key_value_pair inner_member : inner)
                if (inner_member.key == "code") string_in(inner_member.value, into.inner);
        }
    }
}

void LineWalker::dom_usage(dom::element v) {
    dom::object object;
    if (v.get_object().get(object) != SUCCESS) return;
    for (const dom::key_value_pair member : object) {
        std::optional<std::uint64_t>* slot = nullptr;
        const std::string_view key = member.key;
        if (key == "prompt_tokens" || key == "input_tokens") slot = &out_.usage.input_tokens;
        else if (key == "completion_tokens" || key == "output_tokens") slot = &out_.usage.output_tokens;
        else if (key == "total_tokens") slot = &out_.usage.total_tokens;
        std::uint64_t count = 0;
        if (slot && member.value.get_uint64().get(count) == SUCCESS) *slot = count;
    }
}

void LineWalker::dom_choices(dom::element v) {
    dom::array choices;
    if (v.get_array().get(choices) != SUCCESS) return;
    std::vector<AnswerFragment>& fragments = out_.answer_fragments;
    std::int64_t position = 0;
    for (const dom::element choice : choices) {
        std::int64_t index = position++;
        dom::object object;
        if (choice.get_object().get(object) != SUCCESS) continue;
        const std::size_t first = fragments.size();
        for (const dom::key_value_pair member : object) {
            const std::string_view key = member.key;
            if (key == "finish_reason") {
                if (member.value.is_null()) continue;
                std::string_view reason;  // empty for a non-string
                string_in(member.value, reason);
                if (!out_.finish_reason) out_.finish_reason = reason;
            } else if (key == "index") {
                int_in(member.value, index);
            } else if (endpoint_ == Endpoint::chat_completions && key == "delta") {
                dom_delta(member.value);
            } else if (endpoint_ == Endpoint::completions && key == "text") {
                std::string_view text;
                string_in(member.value, text);
                if (!text.empty()) out_.answer_text = true;
                push(fragments, Field::text, text);
            }
        }
        for (std::size_t i = first; i < fragments.size(); ++i) fragments[i].key.index = index;
    }
}

void LineWalker::dom_delta(dom::element v) {
    dom::object delta;
    if (v.get_object().get(delta) != SUCCESS) return;
    for (const dom::key_value_pair member : delta) {
        const std::string_view key = member.key;
        bool filled = false;
        if (key == "role") {
            continue;
        } else if (key == "content") {
            filled = dom_text(member.value, Field::content);
        } else if (key == "reasoning_content" || key == "reasoning") {
            filled = dom_text(member.value, Field::reasoning);
        } else if (key == "refusal") {
            filled = dom_text(member.value, Field::refusal);
        } else if (key == "function_call") {
            filled = dom_function(member.value);
        } else if (key == "tool_calls") {
            filled = dom_tool_calls(member.value);
        } else {
            filled = is_nonempty(member.value);
        }
        if (filled) out_.answer_text = true;
    }
}

bool LineWalker::dom_text(dom::element v, Field field) {
    std::string_view text;
    if (v.get_string().get(text) != SUCCESS) return is_nonempty(v);
    push(out_.answer_fragments, field, text);
    return !text.empty();
}

bool LineWalker::dom_function(dom::element v) {
    dom::object function;
    if (v.get_object().get(function) != SUCCESS) return is_nonempty(v);
    bool filled = false;
    for (const dom::key_value_pair member : function) {
        filled = true;
        if (member.key != "arguments") continue;
        std::string_view text;
        string_in(member.value, text);
        push(out_.answer_fragments, Field::arguments, text);
    }
    return filled;
}

bool LineWalker::dom_tool_calls(dom::element v) {
    dom::array calls;
    if (v.get_array().get(calls) != SUCCESS) return is_nonempty(v);
    std::vector<AnswerFragment>& fragments = out_.answer_fragments;
    bool filled = false;
    std::int64_t position = 0;
    for (const dom::element call : calls) {
        filled = true;
        std::int64_t index = position++;
        dom::object object;
        if (call.get_object().get(object) != SUCCESS) continue;
        const std::size_t first = fragments.size();
        for (const dom::key_value_pair member : object) {
            if (member.key == "index") {
                int_in(member.value, index);
            } else if (member.key == "function") {
                dom_function(member.value);
            }
        }
        for (std::size_t i = first; i < fragments.size(); ++i) fragments[i].key.sub = index;
    }
    return filled;
}

void LineWalker::dom_messages_delta(dom::element v) {
    dom::object delta;
    if (v.get_object().get(delta) != SUCCESS) return;
    for (const dom::key_value_pair member : delta) {
        Field kind;
        if (member.key == "text") {
            kind = Field::content;
        } else if (member.key == "partial_json") {
            kind = Field::arguments;
        } else if (member.key == "thinking") {
            kind = Field::reasoning;
        } else {
            continue;
        }
        std::string_view text;
        string_in(member.value, text);
        push(out_.answer_fragments, kind, text);
    }
}

void LineWalker::dom_response(dom::element v) {
    dom::object response;
    if (v.get_object().get(response) != SUCCESS) return;
    for (const dom::key_value_pair member : response) {
        if (member.key == "model") {
            dom_model(member.value);
        } else if (member.key == "usage") {
            dom_usage(member.value);
        } else if (member.key == "error") {
            dom_error(member.value, response_error);
        }
    }
}

void LineWalker::dom_message(dom::element v) {
    dom::object message;
    if (v.get_object().get(message) != SUCCESS) return;
    for (const dom::key_value_pair member : message) {
        if (member.key == "model") {
            dom_model(member.value);
        } else if (member.key == "usage") {
            dom_usage(member.value);
        }
    }
}

}  // namespace modelproxy::sse::detail
