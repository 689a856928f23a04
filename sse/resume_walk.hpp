// The walk behind sse::ResumeReader (sse/resume.hpp), internal to sse/: one
// simdjson On-Demand pass over a data line that reads its answer pieces and,
// when asked, writes the line rewritten (docs/behaviour.md section 16). The
// generic steps (validated copies, answer-text strings, marks) are in
// sse/resume_walk.cpp; the endpoints' shapes (chat and completions choices,
// tool calls, logprobs, Messages events) in sse/resume_lines.cpp.
#pragma once

#include "sse/resume.hpp"

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#define MP_RESUME_TRY(expr)                                                                         \
    do {                                                                                            \
        if (const ::simdjson::error_code mp_e_ = (expr); mp_e_ != ::simdjson::SUCCESS) return mp_e_; \
    } while (false)

namespace modelproxy::sse {

namespace resume_walk {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;
using Field = AnswerTextKey::Field;
using Kind = ResumePiece::Kind;

// A raw token without the whitespace after it.
std::string_view trimmed(std::string_view raw);
// `text` as a JSON string, quotes included.
void append_escaped(std::string& out, std::string_view text);

// Deeper nesting is refused as not JSON rather than risking the stack (as
// sse/line_walker.cpp does).
constexpr int max_depth = 512;

// The logprobs arrays a cut trims.
enum class Lp : std::uint8_t { chat_content, chat_refusal, completion_tokens, count };

}  // namespace resume_walk

using namespace resume_walk;


struct ResumeReader::Impl {
    od::parser parser;
    std::string padded;
    ResumeLine line;
    std::string block_mark;  // a Messages block_start mark's text
    // A read pass's facts that its rewrite pass needs.
    std::vector<std::int64_t> piece_entry;  // chat: the tool_calls entry a piece is in (-1: none)
    std::vector<std::size_t> token_bytes[static_cast<int>(Lp::count)];

    // One walk: reads `line`; with `out`, also writes the line rewritten.
    struct Walk {
        Walk(Impl& i, policy::Endpoint e) : impl(i), endpoint(e) {}
        Impl& impl;
        policy::Endpoint endpoint;
        std::string* out = nullptr;
        LineCut cut;
        const ResumeIds* ids = nullptr;
        std::vector<char> entry_published;          // rewrite: tool_calls entries the client has
        std::size_t skip[static_cast<int>(Lp::count)] = {0, 0, 0};  // rewrite: logprobs entries dropped
        std::int64_t entry = -1;                     // the tool_calls entry being walked
        std::size_t entries = 0;
        int depth = 0;                               // of the object or array being walked
        std::size_t choices_seen = 0;                // chat and completions: choices walked

        ResumeLine& line() { return impl.line; }
        void put(std::string_view s) {
            if (out) out->append(s);
        }
        void member(bool& first, std::string_view key) {
            if (!out) return;
            if (!first) *out += ',';
            first = false;
            append_escaped(*out, key);
            *out += ':';
        }
        void comma(bool& first) {
            if (!first) put(",");
            first = false;
        }
        std::size_t add_piece(Kind kind, Field field, std::string_view text, std::int64_t sub = 0) {
            line().pieces.push_back(ResumePiece{kind, field, 0, sub, text});
            impl.piece_entry.push_back(entry);
            return line().pieces.size() - 1;
        }
        bool published_entry() const {
            return out && entry >= 0 && static_cast<std::size_t>(entry) < entry_published.size() &&
                   entry_published[static_cast<std::size_t>(entry)];
        }

        // A scalar of type `type` validated (simdjson's raw token alone
        // checks nothing: `tru`, `01`, `"\x"` would pass); a number is left
        // unconsumed, the enclosing iterator steps over it.
        error_code scalar(od::value& v, od::json_type type);

        // A value copied as it is, validated whole: containers member by
        // member, scalars as their raw tokens.
        error_code copy(od::value& v);

        // A value that is replaced by `with` when the rewrite has one; its
        // raw token is noted in `seen`.
        error_code replaced(od::value& v, std::string_view& seen, const std::string* with);

        // An integer member (a choice, tool call or block index) into
        // `into`; any other valid value is copied and leaves `into` as it
        // was (1.5, 1e99, "0").
        error_code integer(od::value& v, std::int64_t& into);

        // A string that may be answer text: a non-empty one is a piece; in a
        // rewrite its published part is left out.
        error_code text(od::value& v, Field field, std::int64_t sub = 0);

        error_code string_mark(od::value& v, Kind kind, Field field, std::int64_t sub = 0);

        // A logprobs array: read, its tokens' lengths noted (token_of says
        // how); rewritten, its first `skip` entries left out.
        error_code logprob_array(od::value& v, Lp which, bool strings);

        error_code logprobs(od::value& v);

        error_code function(od::value& v, std::int64_t sub);

        error_code tool_calls(od::value& v);

        error_code delta(od::value& v);

        error_code choices(od::value& v);

        // A usage report is a mark only on a line without choices (the
        // usage chunk that ends a stream): a provider that reports usage on
        // every chunk would otherwise tie the marks to its event split.
        error_code openai_top(od::value& v);

        error_code messages_top(od::value& v);

        template <class OnField>
        error_code object(od::value& v, OnField&& on_field) {
            od::json_type type;
            MP_RESUME_TRY(v.type().get(type));
            if (type != od::json_type::object) return copy(v);
            if (depth >= max_depth) return simdjson::DEPTH_ERROR;
            od::object o;
            MP_RESUME_TRY(v.get_object().get(o));
            ++depth;
            put("{");
            bool first = true;
            for (auto result : o) {
                od::field f;
                MP_RESUME_TRY(std::move(result).get(f));
                std::string_view key;
                MP_RESUME_TRY(f.unescaped_key().get(key));
                // The key's view stays valid to the next document: On-Demand
                // appends each string it unescapes to one buffer sized for
                // the whole line.
                od::value value = f.value();
                MP_RESUME_TRY(on_field(key, value, first));
            }
            put("}");
            --depth;
            return SUCCESS;
        }

        template <class OnElement>
        error_code array(od::value& v, OnElement&& on_element) {
            od::json_type type;
            MP_RESUME_TRY(v.type().get(type));
            if (type != od::json_type::array) return copy(v);
            if (depth >= max_depth) return simdjson::DEPTH_ERROR;
            od::array a;
            MP_RESUME_TRY(v.get_array().get(a));
            ++depth;
            put("[");
            bool first = true;
            std::size_t i = 0;
            for (auto result : a) {
                od::value element;
                MP_RESUME_TRY(result.get(element));
                MP_RESUME_TRY(on_element(i++, element, first));
            }
            put("]");
            --depth;
            return SUCCESS;
        }
    };

    // Reads (and with w.out, rewrites) one data line into `line`.
    error_code walk(std::string_view data, Walk& w);
};

}  // namespace modelproxy::sse
