// docs/behaviour.md section 16: the pieces of a one-choice stream's lines,
// the published answer, the seam search and the rewrite of the lines that
// follow it. One simdjson On-Demand walk serves reading and rewriting: a
// rewrite copies every string and number as its raw JSON token (numbers and
// escapes as the provider wrote them; keys re-escaped, whitespace between
// tokens dropped) but for the values it replaces, so a forwarded line
// changes only where section 16 says. On-Demand alone is lazy, so the walk
// visits and validates every value, as sse/line_walker.hpp's does: a line
// that is not one JSON object reads as not JSON (json false), so it is never
// published as answer text nor goes out rewritten into something else.
#include "sse/resume.hpp"

#include "sse/line_walker.hpp"

#include <simdjson.h>

#include <algorithm>
#include <optional>

namespace modelproxy::sse {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;
using Field = AnswerTextKey::Field;
using Kind = ResumePiece::Kind;

#define MP_RESUME_TRY(expr)                                                   \
    do {                                                                      \
        if (const error_code mp_e_ = (expr); mp_e_ != SUCCESS) return mp_e_;  \
    } while (false)

std::uint64_t code_points(std::string_view utf8) {
    std::uint64_t n = 0;
    for (const char c : utf8)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

namespace {

std::string_view trimmed(std::string_view raw) {
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r'))
        raw.remove_suffix(1);
    return raw;
}

void append_escaped(std::string& out, std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    out += '"';
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (u < 0x20) {
                    out += "\\u00";
                    out += hex[u >> 4];
                    out += hex[u & 15];
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

// Deeper nesting is refused as not JSON rather than risking the stack (as
// sse/line_walker.cpp does).
constexpr int max_depth = 512;

// The logprobs arrays a cut trims.
enum class Lp : std::uint8_t { chat_content, chat_refusal, completion_tokens, count };

}  // namespace

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
        int depth = 0;
        std::size_t choices_seen = 0;                // chat and completions: choices walked                               // of the object or array being walked

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
        bool published_entry() const {
            return out && entry >= 0 && static_cast<std::size_t>(entry) < entry_published.size() &&
                   entry_published[static_cast<std::size_t>(entry)];
        }

        // A scalar of type `type` validated (simdjson's raw token alone
        // checks nothing: `tru`, `01`, `"\x"` would pass); a number is left
        // unconsumed, the enclosing iterator steps over it.
        error_code scalar(od::value& v, od::json_type type) {
            switch (type) {
                case od::json_type::string: {
                    std::string_view s;
                    return v.get_string().get(s);
                }
                case od::json_type::number:
                    return detail::valid_number(v.raw_json_token()) ? SUCCESS : simdjson::NUMBER_ERROR;
                case od::json_type::boolean: {
                    bool b;
                    return v.get_bool().get(b);
                }
                case od::json_type::null: {
                    bool is_null = false;
                    MP_RESUME_TRY(v.is_null().get(is_null));
                    return is_null ? SUCCESS : simdjson::N_ATOM_ERROR;
                }
                default:
                    return simdjson::INCORRECT_TYPE;
            }
        }

        // A value copied as it is, validated whole: containers member by
        // member, scalars as their raw tokens.
        error_code copy(od::value& v) {
            od::json_type type;
            MP_RESUME_TRY(v.type().get(type));
            if (type == od::json_type::object) {
                return object(v, [&](std::string_view key, od::value& m, bool& first) {
                    member(first, key);
                    return copy(m);
                });
            }
            if (type == od::json_type::array) {
                return array(v, [&](std::size_t, od::value& element, bool& first) {
                    comma(first);
                    return copy(element);
                });
            }
            const std::string_view raw = trimmed(v.raw_json_token());
            MP_RESUME_TRY(scalar(v, type));
            put(raw);
            return SUCCESS;
        }

        // A value that is replaced by `with` when the rewrite has one; its
        // raw token is noted in `seen`.
        error_code replaced(od::value& v, std::string_view& seen, const std::string* with) {
            od::json_type type;
            MP_RESUME_TRY(v.type().get(type));
            if (type == od::json_type::object || type == od::json_type::array) return copy(v);
            seen = trimmed(v.raw_json_token());
            MP_RESUME_TRY(scalar(v, type));
            put(with && !with->empty() ? std::string_view(*with) : seen);
            return SUCCESS;
        }

        // An integer member (a choice, tool call or block index) into
        // `into`; any other valid value is copied and leaves `into` as it
        // was (1.5, 1e99, "0").
        error_code integer(od::value& v, std::int64_t& into) {
            od::json_type type;
            MP_RESUME_TRY(v.type().get(type));
            if (type != od::json_type::number) return copy(v);
            const std::string_view raw = trimmed(v.raw_json_token());
            if (!detail::valid_number(raw)) return simdjson::NUMBER_ERROR;
            std::int64_t n = 0;
            if (v.get_int64().get(n) == SUCCESS) into = n;  // else left unconsumed, stepped over
            put(raw);
            return SUCCESS;
        }

        std::size_t add_piece(Kind kind, Field field, std::string_view text, std::int64_t sub = 0) {
            line().pieces.push_back(ResumePiece{kind, field, 0, sub, text});
            impl.piece_entry.push_back(entry);
            return line().pieces.size() - 1;
        }

        // A string that may be answer text: a non-empty one is a piece; in a
        // rewrite its published part is left out.
        error_code text(od::value& v, Field field, std::int64_t sub = 0) {
            od::json_type type;
            MP_RESUME_TRY(v.type().get(type));
            if (type != od::json_type::string) return copy(v);
            const std::string_view raw = trimmed(v.raw_json_token());
            std::string_view s;
            MP_RESUME_TRY(v.get_string().get(s));
            if (s.empty()) {
                put(raw);
                return SUCCESS;
            }
            const std::size_t p = add_piece(Kind::text, field, s, sub);
            if (!out) return SUCCESS;
            if (p < cut.published) {
                put("\"\"");
            } else if (p == cut.published && cut.cut_bytes > 0) {
                append_escaped(*out, s.substr(std::min(cut.cut_bytes, s.size())));
            } else {
                put(raw);
            }
            return SUCCESS;
        }

        error_code string_mark(od::value& v, Kind kind, Field field, std::int64_t sub = 0) {
            od::json_type type;
            MP_RESUME_TRY(v.type().get(type));
            if (type != od::json_type::string) return copy(v);
            const std::string_view raw = trimmed(v.raw_json_token());
            std::string_view s;
            MP_RESUME_TRY(v.get_string().get(s));
            add_piece(kind, field, s, sub);
            put(raw);
            return SUCCESS;
        }

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

        void comma(bool& first) {
            if (!first) put(",");
            first = false;
        }

        // A logprobs array: read, its tokens' lengths noted (token_of says
        // how); rewritten, its first `skip` entries left out.
        error_code logprob_array(od::value& v, Lp which, bool strings) {
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

        error_code logprobs(od::value& v) {
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

        error_code function(od::value& v, std::int64_t sub) {
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

        error_code tool_calls(od::value& v) {
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

        error_code delta(od::value& v) {
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

        error_code choices(od::value& v) {
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
        error_code openai_top(od::value& v) {
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

        error_code messages_top(od::value& v) {
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
    };

    error_code walk(std::string_view data, Walk& w) {
        line.json = false;
        line.done = false;
        line.one_choice = true;
        line.pieces.clear();
        line.id = line.created = line.system_fingerprint = {};
        piece_entry.clear();
        for (auto& t : token_bytes) t.clear();
        if (data == "[DONE]") {
            line.done = true;
            if (w.out) w.out->append(data);
            return SUCCESS;
        }
        padded.assign(data);
        padded.append(simdjson::SIMDJSON_PADDING, '\0');
        od::document doc;
        MP_RESUME_TRY(parser.iterate(padded.data(), data.size(), padded.size()).get(doc));
        od::value root;
        od::json_type type;
        MP_RESUME_TRY(doc.type().get(type));
        if (type != od::json_type::object) return simdjson::INCORRECT_TYPE;
        MP_RESUME_TRY(doc.get_value().get(root));
        const error_code e =
            w.endpoint == policy::Endpoint::messages ? w.messages_top(root) : w.openai_top(root);
        MP_RESUME_TRY(e);
        // After the whole object the iterator must be at the end: anything
        // else is trailing content ("{}}" or "{} x").
        if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return simdjson::TRAILING_CONTENT;
        line.json = true;
        return SUCCESS;
    }
};

ResumeReader::ResumeReader() : impl_(std::make_unique<Impl>()) {}
ResumeReader::~ResumeReader() = default;

const ResumeLine& ResumeReader::read(std::string_view data, policy::Endpoint endpoint) {
    Impl::Walk w(*impl_, endpoint);
    if (impl_->walk(data, w) != SUCCESS) {
        impl_->line.json = false;
        impl_->line.pieces.clear();
    }
    return impl_->line;
}

bool ResumeReader::rewrite(std::string_view data, policy::Endpoint endpoint, const LineCut& cut,
                           const ResumeIds& ids, std::string& out) {
    // A read first: which tool calls the client has, how many logprobs
    // tokens start in the published text.
    Impl::Walk first(*impl_, endpoint);
    if (impl_->walk(data, first) != SUCCESS) return false;
    Impl::Walk w(*impl_, endpoint);
    w.cut = cut;
    w.ids = &ids;
    const auto& pieces = impl_->line.pieces;
    if (cut.any()) {
        w.entry_published.assign(first.entries, 0);
        std::size_t dropped[3] = {0, 0, 0};  // content/text, refusal bytes the client has
        for (std::size_t p = 0; p < pieces.size() && p <= cut.published; ++p) {
            const ResumePiece& piece = pieces[p];
            const std::size_t bytes = p < cut.published ? piece.text.size() : std::min(cut.cut_bytes, piece.text.size());
            if (piece.kind == Kind::name && p < cut.published && impl_->piece_entry[p] >= 0)
                w.entry_published[static_cast<std::size_t>(impl_->piece_entry[p])] = 1;
            if (piece.kind != Kind::text) continue;
            if (piece.field == Field::content) dropped[0] += bytes;
            if (piece.field == Field::refusal) dropped[1] += bytes;
            if (piece.field == Field::text) dropped[2] += bytes;
        }
        for (int i = 0; i < static_cast<int>(Lp::count); ++i) {
            // The entries of tokens that start in the published text.
            std::size_t start = 0, k = 0;
            for (const std::size_t len : impl_->token_bytes[i]) {
                if (start >= dropped[i]) break;
                start += len;
                ++k;
            }
            w.skip[i] = k;
        }
    }
    const std::size_t size = out.size();
    w.out = &out;
    if (impl_->walk(data, w) != SUCCESS) {
        out.resize(size);
        return false;
    }
    return true;
}

void PublishedAnswer::clear() {
    runs_.clear();
    code_points_ = 0;
    one_choice_ = true;
    ids_ = {};
}

void PublishedAnswer::add(const ResumeLine& line) {
    if (!line.one_choice) one_choice_ = false;
    if (!line.id.empty()) ids_.id.assign(line.id);
    if (!line.created.empty()) ids_.created.assign(line.created);
    if (!line.system_fingerprint.empty()) ids_.system_fingerprint.assign(line.system_fingerprint);
    for (const ResumePiece& p : line.pieces) {
        if (p.kind == Kind::text) {
            code_points_ += sse::code_points(p.text);
            if (!runs_.empty()) {
                Run& last = runs_.back();
                if (last.kind == Kind::text && last.field == p.field && last.index == p.index && last.sub == p.sub) {
                    last.text.append(p.text);
                    continue;
                }
            }
        }
        runs_.push_back(Run{p.kind, p.field, p.index, p.sub, std::string(p.text)});
    }
}

bool Seam::reached() const { return !diverged_ && run_ >= published_->runs().size(); }

Seam::Verdict Seam::judge(const ResumeLine& line) {
    using Step = Seam::Step;
    if (diverged_) return {Step::diverged, {}};
    const auto& runs = published_->runs();
    if (reached()) return {Step::forward, {}};
    const auto diverge = [&] {
        diverged_ = true;
        return Verdict{Step::diverged, {}};
    };
    if (!line.one_choice) return diverge();
    for (std::size_t i = 0; i < line.pieces.size(); ++i) {
        if (run_ >= runs.size()) return {Step::cut, LineCut{i, 0}};
        const ResumePiece& piece = line.pieces[i];
        const PublishedAnswer::Run& r = runs[run_];
        if (piece.kind != r.kind || piece.field != r.field || piece.index != r.index || piece.sub != r.sub)
            return diverge();
        if (piece.kind != Kind::text) {
            if (offset_ != 0 || piece.text != r.text) return diverge();
            ++run_;
            continue;
        }
        const std::string_view remaining = std::string_view(r.text).substr(offset_);
        if (piece.text.size() <= remaining.size()) {
            if (remaining.compare(0, piece.text.size(), piece.text) != 0) return diverge();
            offset_ += piece.text.size();
            if (offset_ == r.text.size()) {
                ++run_;
                offset_ = 0;
            }
            continue;
        }
        // The piece runs past what the client has of this text: the seam is
        // inside it, when this was the last published run.
        if (piece.text.compare(0, remaining.size(), remaining) != 0 || run_ + 1 != runs.size()) return diverge();
        ++run_;
        offset_ = 0;
        return {Step::cut, LineCut{i, remaining.size()}};
    }
    return {Step::drop, {}};
}

}  // namespace modelproxy::sse
