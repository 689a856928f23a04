// docs/behaviour.md section 16: the shapes of the lines a resume reads and
// rewrites (sse/resume_walk.hpp): chat and completions choices, deltas, tool
// calls and logprobs, and Messages events.
#include "sse/resume_walk.hpp"

#include <optional>

namespace modelproxy::sse {

// A logprobs array: read, its tokens' lengths noted (token_of says
// how); rewritten, its first `skip` entries left out.
error_code ResumeReader::Impl::Walk::logprob_array(od::value& v, Lp which, bool strings) {
    const std::size_t drop = out ? skip[static_cast<int>(which)] : 0;
    auto& lengths = impl.token_bytes[static_cast<int>(which)];
    return array(v, [&](std::size_t i, od::value& element, bool& first) -> error_code {
        if (i < drop) {
            const bool was = out != nullptr;
            std::string* keep = out;
            out = nullptr;
            const error_code e = copy(element);
            out = keep;
            (void)was;
            return e;
        }
        comma(first);
        if (out) return copy(element);
        std::size_t bytes = 0;
        if (strings) {
            // completions: the element is the token itself
            od::json_type type;
            MP_RESUME_TRY(element.type().get(type));
            if (type == od::json_type::string) {
                std::string_view s;
                MP_RESUME_TRY(element.get_string().get(s));
                bytes = s.size();
            } else {
                MP_RESUME_TRY(copy(element));
            }
        } else {
            // chat: {"token": ..., ...}
            MP_RESUME_TRY(object(element, [&](std::string_view key, od::value& m, bool& f) {
                member(f, key);
                od::json_type type;
                MP_RESUME_TRY(m.type().get(type));
                if (key == "token" && type == od::json_type::string) {
                    std::string_view s;
                    MP_RESUME_TRY(m.get_string().get(s));
                    bytes = s.size();
                    return SUCCESS;
                }
                return copy(m);
            }));
        }
        lengths.push_back(bytes);
        return SUCCESS;
    });
}

error_code ResumeReader::Impl::Walk::logprobs(od::value& v) {
    return object(v, [&](std::string_view key, od::value& m, bool& first) {
        member(first, key);
        if (endpoint == policy::Endpoint::chat_completions) {
            if (key == "content") return logprob_array(m, Lp::chat_content, false);
            if (key == "refusal") return logprob_array(m, Lp::chat_refusal, false);
            return copy(m);
        }
        if (key == "tokens") return logprob_array(m, Lp::completion_tokens, true);
        if (key == "token_logprobs" || key == "top_logprobs" || key == "text_offset") {
            // Trimmed alike; their own lengths are not the tokens'.
            const std::size_t drop = out ? skip[static_cast<int>(Lp::completion_tokens)] : 0;
            return array(m, [&](std::size_t i, od::value& element, bool& f) -> error_code {
                if (i < drop) {
                    std::string* keep = out;
                    out = nullptr;
                    const error_code e = copy(element);
                    out = keep;
                    return e;
                }
                comma(f);
                return copy(element);
            });
        }
        return copy(m);
    });
}

error_code ResumeReader::Impl::Walk::function(od::value& v, std::int64_t sub) {
    return object(v, [&](std::string_view key, od::value& m, bool& first) {
        if (key == "name") {
            // The name the client has goes; a second `name` past
            // the cut (a duplicate member) is not the client's.
            if (published_entry() && line().pieces.size() < cut.published) {
                std::string* keep = out;
                out = nullptr;
                const error_code e = string_mark(m, Kind::name, Field::arguments, sub);
                out = keep;
                return e;
            }
            member(first, key);
            return string_mark(m, Kind::name, Field::arguments, sub);
        }
        member(first, key);
        if (key == "arguments") return text(m, Field::arguments, sub);
        return copy(m);
    });
}

error_code ResumeReader::Impl::Walk::tool_calls(od::value& v) {
    return array(v, [&](std::size_t, od::value& element, bool& first) -> error_code {
        comma(first);
        entry = static_cast<std::int64_t>(entries++);
        const std::size_t from = line().pieces.size();
        std::int64_t index = 0;
        const error_code e = object(element, [&](std::string_view key, od::value& m, bool& f) {
            if ((key == "id" || key == "type") && published_entry()) {
                std::string* keep = out;
                out = nullptr;
                const error_code c = copy(m);
                out = keep;
                return c;
            }
            member(f, key);
            if (key == "index") return integer(m, index);
            if (key == "function") return function(m, 0);
            return copy(m);
        });
        // The tool call's index, wherever it stood among its members.
        for (std::size_t p = from; p < line().pieces.size(); ++p) line().pieces[p].sub = index;
        entry = -1;
        return e;
    });
}

error_code ResumeReader::Impl::Walk::delta(od::value& v) {
    return object(v, [&](std::string_view key, od::value& m, bool& first) -> error_code {
        if (key == "role" && out && cut.any()) {
            // The client has the role already.
            std::string* keep = out;
            out = nullptr;
            const error_code e = copy(m);
            out = keep;
            return e;
        }
        member(first, key);
        if (key == "content") return text(m, Field::content);
        if (key == "refusal") return text(m, Field::refusal);
        if (key == "reasoning_content" || key == "reasoning") return text(m, Field::reasoning);
        if (key == "tool_calls") return tool_calls(m);
        if (key == "function_call") {
            entry = static_cast<std::int64_t>(entries++);
            const error_code e = function(m, -1);
            entry = -1;
            return e;
        }
        return copy(m);
    });
}

error_code ResumeReader::Impl::Walk::choices(od::value& v) {
    return array(v, [&](std::size_t i, od::value& element, bool& first) -> error_code {
        comma(first);
        ++choices_seen;
        if (i > 0) line().one_choice = false;
        return object(element, [&](std::string_view key, od::value& m, bool& f) -> error_code {
            member(f, key);
            if (key == "index") {
                std::int64_t n = 0;
                MP_RESUME_TRY(integer(m, n));
                if (n != 0) line().one_choice = false;
                return SUCCESS;
            }
            if (key == "delta" && endpoint == policy::Endpoint::chat_completions) return delta(m);
            if (key == "text" && endpoint == policy::Endpoint::completions) return text(m, Field::text);
            if (key == "logprobs") return logprobs(m);
            if (key == "finish_reason") return string_mark(m, Kind::finish, Field::content);
            return copy(m);
        });
    });
}

// A usage report is a mark only on a line without choices (the
// usage chunk that ends a stream): a provider that reports usage on
// every chunk would otherwise tie the marks to its event split.
error_code ResumeReader::Impl::Walk::openai_top(od::value& v) {
    bool usage = false;
    const error_code e = object(v, [&](std::string_view key, od::value& m, bool& first) -> error_code {
        member(first, key);
        if (key == "id") return replaced(m, line().id, ids ? &ids->id : nullptr);
        if (key == "created") return replaced(m, line().created, ids ? &ids->created : nullptr);
        if (key == "system_fingerprint")
            return replaced(m, line().system_fingerprint, ids ? &ids->system_fingerprint : nullptr);
        if (key == "choices") return choices(m);
        if (key == "usage") {
            od::json_type type;
            MP_RESUME_TRY(m.type().get(type));
            usage = type == od::json_type::object;
            return copy(m);
        }
        return copy(m);
    });
    if (usage && choices_seen == 0) add_piece(Kind::usage, Field::content, {});
    return e;
}

error_code ResumeReader::Impl::Walk::messages_top(od::value& v) {
    std::int64_t index = 0;
    std::string_view type_value;
    std::string type_copy;
    const error_code e = object(v, [&](std::string_view key, od::value& m, bool& first) -> error_code {
        member(first, key);
        if (key == "type") {
            od::json_type t;
            MP_RESUME_TRY(m.type().get(t));
            if (t != od::json_type::string) return copy(m);
            put(trimmed(m.raw_json_token()));
            MP_RESUME_TRY(m.get_string().get(type_value));
            type_copy.assign(type_value);
            return SUCCESS;
        }
        if (key == "index") return integer(m, index);
        if (key == "message") {
            return object(m, [&](std::string_view k, od::value& mm, bool& f) -> error_code {
                member(f, k);
                if (k == "id") return replaced(mm, line().id, ids ? &ids->id : nullptr);
                return copy(mm);
            });
        }
        if (key == "content_block") {
            std::string block_type, name;
            std::optional<std::size_t> mark;
            const error_code c = object(m, [&](std::string_view k, od::value& mm, bool& f) -> error_code {
                member(f, k);
                od::json_type t;
                MP_RESUME_TRY(mm.type().get(t));
                if ((k == "type" || k == "name") && t == od::json_type::string) {
                    put(trimmed(mm.raw_json_token()));
                    std::string_view s;
                    MP_RESUME_TRY(mm.get_string().get(s));
                    (k == "type" ? block_type : name).assign(s);
                    if (!mark) mark = add_piece(Kind::block_start, Field::content, {});
                    return SUCCESS;
                }
                if (k == "text") return text(mm, Field::content);
                return copy(mm);
            });
            if (!mark) mark = add_piece(Kind::block_start, Field::content, {});
            impl.block_mark = block_type;
            if (!name.empty()) impl.block_mark.append(":").append(name);
            line().pieces[*mark].text = impl.block_mark;
            return c;
        }
        if (key == "delta") {
            return object(m, [&](std::string_view k, od::value& mm, bool& f) -> error_code {
                member(f, k);
                if (k == "text") return text(mm, Field::content);
                if (k == "partial_json") return text(mm, Field::arguments);
                if (k == "thinking") return text(mm, Field::reasoning);
                if (k == "stop_reason") return string_mark(mm, Kind::finish, Field::content);
                if (k == "signature") add_piece(Kind::signature, Field::reasoning, {});
                return copy(mm);
            });
        }
        return copy(m);
    });
    if (type_copy == "content_block_stop") add_piece(Kind::block_stop, Field::content, {});
    for (ResumePiece& p : line().pieces) p.index = index;
    return e;
}

}  // namespace modelproxy::sse
