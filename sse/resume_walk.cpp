// docs/behaviour.md section 16: the resume walk's generic steps (sse/resume_walk.hpp):
// every value visited and validated, as sse/line_walker.hpp's walk does, since
// On-Demand alone is lazy; a copy writes each string and number as its raw
// token, so a rewritten line changes only where section 16 says.
#include "sse/resume_walk.hpp"

#include "sse/line_walker.hpp"

#include <algorithm>

namespace modelproxy::sse {

namespace resume_walk {

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

}  // namespace resume_walk

// A scalar of type `type` validated (simdjson's raw token alone
// checks nothing: `tru`, `01`, `"\x"` would pass); a number is left
// unconsumed, the enclosing iterator steps over it.
error_code ResumeReader::Impl::Walk::scalar(od::value& v, od::json_type type) {
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
error_code ResumeReader::Impl::Walk::copy(od::value& v) {
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
error_code ResumeReader::Impl::Walk::replaced(od::value& v, std::string_view& seen, const std::string* with) {
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
error_code ResumeReader::Impl::Walk::integer(od::value& v, std::int64_t& into) {
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

// A string that may be answer text: a non-empty one is a piece; in a
// rewrite its published part is left out.
error_code ResumeReader::Impl::Walk::text(od::value& v, Field field, std::int64_t sub) {
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

error_code ResumeReader::Impl::Walk::string_mark(od::value& v, Kind kind, Field field, std::int64_t sub) {
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

error_code ResumeReader::Impl::walk(std::string_view data, Walk& w) {
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

}  // namespace modelproxy::sse
