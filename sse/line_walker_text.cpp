// LineWalker's answer-text members (sse/line_walker.hpp): section 1's answer
// text and the finish reason of chat / completions choices, and the decoded
// answer-text strings of every endpoint (DataInfo::answer_fragments) that the
// credential scan reads as its second channel. Collected on the Inspector's
// one walk, so the line is never parsed a second time for section 8.
//
// On-Demand is forward only: a fragment is recorded when met and its choice /
// tool call / block index is filled in when the enclosing object ends (an
// `index` may come after `delta`, a `type` after the responses `delta`).
#include "sse/line_walker.hpp"

#include <utility>

namespace modelproxy::sse::detail {

namespace {

namespace od = simdjson::ondemand;
using policy::Endpoint;
using simdjson::error_code;
using simdjson::SUCCESS;
using Field = AnswerTextKey::Field;

void push(std::vector<AnswerFragment>& out, Field field, std::string_view text) {
    if (!text.empty()) out.push_back({{0, 0, field}, text});
}

Field responses_field(std::string_view type) {
    if (type == "response.output_text.delta") return Field::content;
    if (type == "response.refusal.delta") return Field::refusal;
    if (type == "response.function_call_arguments.delta") return Field::arguments;
    if (type == "response.reasoning_text.delta") return Field::reasoning;
    if (type == "response.reasoning_summary_text.delta") return Field::reasoning_summary;
    return Field::other_delta;
}

}  // namespace

error_code LineWalker::choices_member(od::value& v) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::array) return skip(v, 1);
    od::array choices;
    MP_TRY(v.get_array().get(choices));
    std::vector<AnswerFragment>& fragments = out_.answer_fragments;
    std::int64_t position = 0;
    return each_element(choices, [&](od::value& choice) -> error_code {
        std::int64_t index = position++;  // a choice without `index` is known by its position
        const std::size_t first = fragments.size();
        MP_TRY(object_fields(choice, 2, [&](std::string_view key, od::value& member) -> error_code {
            if (key == "finish_reason") return finish_reason_member(member, 3);
            if (key == "index") return int_member(member, 3, index);
            if (endpoint_ == Endpoint::chat_completions && key == "delta") return delta_member(member, 3);
            if (endpoint_ == Endpoint::completions && key == "text") {
                std::string_view text;
                MP_TRY(string_member(member, 3, text));
                if (!text.empty()) out_.answer_text = true;
                push(fragments, Field::text, text);
                return SUCCESS;
            }
            return skip(member, 3);
        }));
        for (std::size_t i = first; i < fragments.size(); ++i) fragments[i].key.index = index;
        return SUCCESS;
    });
}

// A chat choice's delta: answer text when a member other than `role` is
// non-empty; the text members' strings are fragments.
error_code LineWalker::delta_member(od::value& v, int depth) {
    return object_fields(v, depth, [&](std::string_view key, od::value& member) -> error_code {
        bool filled = false;
        if (key == "role") {
            MP_TRY(skip(member, depth + 1));
        } else if (key == "content") {
            MP_TRY(text_member(member, depth + 1, Field::content, filled));
        } else if (key == "reasoning_content" || key == "reasoning") {
            MP_TRY(text_member(member, depth + 1, Field::reasoning, filled));
        } else if (key == "refusal") {
            MP_TRY(text_member(member, depth + 1, Field::refusal, filled));
        } else if (key == "function_call") {
            MP_TRY(function_member(member, depth + 1, filled));
        } else if (key == "tool_calls") {
            MP_TRY(tool_calls_member(member, depth + 1, filled));
        } else {
            MP_TRY(nonempty(member, depth + 1, filled));
        }
        if (filled) out_.answer_text = true;
        return SUCCESS;
    });
}

// A member whose string is answer text (pushed when non-empty); `filled` is
// section 1's non-empty, which any non-string value may be too.
error_code LineWalker::text_member(od::value& v, int depth, Field field, bool& filled) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::string) return nonempty(v, depth, filled);
    std::string_view text;
    MP_TRY(string_of(v, text));
    filled = !text.empty();
    push(out_.answer_fragments, field, text);
    return SUCCESS;
}

// `{"name":..,"arguments":".."}` of a tool or function call: `arguments` is
// a fragment (tool call index 0; tool_calls_member sets it).
error_code LineWalker::function_member(od::value& v, int depth, bool& filled) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::object) return nonempty(v, depth, filled);
    od::object function;
    MP_TRY(v.get_object().get(function));
    return each_field(function, [&](std::string_view key, od::value& member) -> error_code {
        filled = true;
        if (key != "arguments") return skip(member, depth + 1);
        std::string_view text;
        MP_TRY(string_member(member, depth + 1, text));
        push(out_.answer_fragments, Field::arguments, text);
        return SUCCESS;
    });
}

error_code LineWalker::tool_calls_member(od::value& v, int depth, bool& filled) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type != od::json_type::array) return nonempty(v, depth, filled);
    od::array calls;
    MP_TRY(v.get_array().get(calls));
    std::vector<AnswerFragment>& fragments = out_.answer_fragments;
    std::int64_t position = 0;
    return each_element(calls, [&](od::value& call) -> error_code {
        filled = true;
        std::int64_t index = position++;
        const std::size_t first = fragments.size();
        MP_TRY(object_fields(call, depth + 1, [&](std::string_view key, od::value& member) -> error_code {
            bool ignored = false;
            if (key == "index") return int_member(member, depth + 2, index);
            if (key == "function") return function_member(member, depth + 2, ignored);
            return skip(member, depth + 2);
        }));
        for (std::size_t i = first; i < fragments.size(); ++i) fragments[i].key.sub = index;
        return SUCCESS;
    });
}

// Messages: a `content_block_delta`'s delta.{text, partial_json, thinking}
// (settle_fragments drops them on other event types).
error_code LineWalker::messages_delta_member(od::value& v) {
    return object_fields(v, 1, [&](std::string_view key, od::value& member) -> error_code {
        Field kind;
        if (key == "text") {
            kind = Field::content;
        } else if (key == "partial_json") {
            kind = Field::arguments;
        } else if (key == "thinking") {
            kind = Field::reasoning;
        } else {
            return skip(member, 2);
        }
        std::string_view text;
        MP_TRY(string_member(member, 2, text));
        push(out_.answer_fragments, kind, text);
        return SUCCESS;
    });
}

error_code LineWalker::finish_reason_member(od::value& v, int depth) {
    od::json_type type;
    MP_TRY(v.type().get(type));
    if (type == od::json_type::null) return skip(v, depth);
    std::string_view reason;
    if (type == od::json_type::string) {
        MP_TRY(string_of(v, reason));
    } else {
        MP_TRY(skip(v, depth));
    }
    if (!out_.finish_reason) out_.finish_reason = reason;
    return SUCCESS;
}

void LineWalker::settle_fragments() {
    std::vector<AnswerFragment>& fragments = out_.answer_fragments;
    if (fragments.empty()) return;
    const std::string_view type = out_.type;
    if (endpoint_ == Endpoint::responses) {
        if (!type.starts_with("response.") || !type.ends_with(".delta")) {
            fragments.clear();
            return;
        }
        const Field field = responses_field(type);
        for (AnswerFragment& f : fragments) f.key = {top_index, top_sub, field};
    } else if (endpoint_ == Endpoint::messages) {
        if (type != "content_block_delta") {
            fragments.clear();
            return;
        }
        for (AnswerFragment& f : fragments) f.key.index = top_index;
    }
}

}  // namespace modelproxy::sse::detail
