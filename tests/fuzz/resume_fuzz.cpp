// libFuzzer target: the resume seam of docs/behaviour.md section 16
// (sse/resume.hpp). The input names an endpoint (chat completions,
// completions or Messages) and a list of data lines; the first k lines are
// the published stream, the rest a second stream of the same request.
//
// Input: byte 0 chooses the endpoint (% 3) and modes (/ 3: bit 0 wraps each
// fragment into a well-formed chunk line of the endpoint, so the fuzzer
// reaches the seam and not only the JSON parser; bit 1 writes every non-ASCII
// character of a wrapped text as a \u escape; bit 2 lets the rebuilt second
// stream straddle the seam; bit 3 inserts lines without answer pieces into
// it), byte 1 is k, the rest is split on '\n' into the lines (wrapped: each
// fragment's first byte picks a chunk template, its second an index, the
// rest is the text, made valid UTF-8).
//
// What must hold, never crashing:
//  1. read: a line that is not one strict JSON object (tests/fuzz/
//     strict_json.hpp) has json false and no pieces, and one that is has
//     json true (bar the documented refusals: deep nesting, an escaped lone
//     surrogate); every piece's text is valid UTF-8, answer text is never
//     empty, and the pieces are of kinds the endpoint has. A rewrite with
//     no cut and no ids reads back to the same pieces.
//  2. PublishedAnswer of the published JSON lines: code_points() is the
//     sum of sse::code_points over their text pieces, the runs hold the same
//     text and marks, and the ids are the last ones seen.
//  3. Seam::judge over the second stream; for forward and cut, rewrite with
//     the published ids succeeds exactly for the lines read took (JSON or
//     [DONE]), writes one strict JSON document, and reads back to the
//     pieces the verdict says: forward, all unchanged; cut, no text (and no
//     tool-call name) before cut.published, the piece there minus its first
//     cut_bytes bytes, every later piece unchanged; the ids replaced. Once
//     diverged, every later verdict is diverged. Each verdict is the one
//     worked out from whole answers (the second stream's pieces so far,
//     joined, against the published runs), not from the seam's state.
//  4. A second stream built from the published pieces themselves, the text
//     split differently, a tool call's name and arguments or text and a
//     finish sometimes in one line: the seam is reached and nothing
//     diverges; the lines after it go out (cut exactly past the published
//     text when the last line straddles it).
#include "check.hpp"
#include "strict_json.hpp"

#include "policy/endpoint.hpp"
#include "sse/resume.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using modelproxy::fuzz::check_strict_json;
using modelproxy::fuzz::StrictJson;
using modelproxy::policy::Endpoint;
namespace sse = modelproxy::sse;
using Kind = sse::ResumePiece::Kind;
using Field = sse::AnswerTextKey::Field;
using Step = sse::Seam::Step;

// A piece with its own copy of the text (a reader's views last to its next call).
struct Piece {
    Kind kind = Kind::text;
    Field field = Field::content;
    std::int64_t index = 0, sub = 0;
    std::string text;
    bool operator==(const Piece&) const = default;
};

struct Line {
    bool json = false, done = false, one_choice = true;
    std::vector<Piece> pieces;
    std::string id, created, system_fingerprint;
};

Line own(const sse::ResumeLine& l) {
    Line o{l.json, l.done, l.one_choice, {}, std::string(l.id), std::string(l.created),
           std::string(l.system_fingerprint)};
    for (const sse::ResumePiece& p : l.pieces) o.pieces.push_back({p.kind, p.field, p.index, p.sub, std::string(p.text)});
    return o;
}

using modelproxy::fuzz::utf8_length_at;

bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length_at(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

// Invalid bytes become '?'.
std::string sanitized(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length_at(s, i);
        if (n == 0) {
            out += '?';
            ++i;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    return out;
}

// A JSON string of valid UTF-8 `s`; with `escape_all`, every non-ASCII
// character as \u escapes (a surrogate pair above U+FFFF).
std::string js(std::string_view s, bool escape_all = false) {
    static constexpr char hex[] = "0123456789abcdef";
    const auto u4 = [&](std::string& out, unsigned u) {
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) out += hex[(u >> shift) & 15];
    };
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            u4(out, c);
            ++i;
        } else if (c < 0x80 || !escape_all) {
            out += static_cast<char>(c);
            ++i;
        } else {
            const std::size_t n = utf8_length_at(s, i);
            unsigned cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
            for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                u4(out, 0xD800 + (cp >> 10));
                u4(out, 0xDC00 + (cp & 0x3FF));
            } else {
                u4(out, cp);
            }
            i += n;
        }
    }
    return out + "\"";
}

// The code point boundaries inside valid UTF-8 `s` (not 0, not size).
std::vector<std::size_t> inner_boundaries(std::string_view s) {
    std::vector<std::size_t> at;
    for (std::size_t i = 1; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) at.push_back(i);
    return at;
}

// The fuzzer's choices after the lines are laid out: bytes taken in turn,
// 0 once spent.
struct Choices {
    const std::uint8_t* p;
    std::size_t n, i = 0;
    std::uint8_t next() { return i < n ? p[i++] : 0; }
};

// Logprobs entries of `text` split into tokens of 1..3 code points.
std::vector<std::string> tokens_of(std::string_view text, unsigned per) {
    std::vector<std::string> out;
    std::string cur;
    unsigned in = 0;
    for (std::size_t i = 0; i < text.size();) {
        std::size_t n = utf8_length_at(text, i);
        if (n == 0) n = 1;
        cur.append(text.substr(i, n));
        i += n;
        if (++in == per) {
            out.push_back(cur);
            cur.clear();
            in = 0;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

std::string chat_logprobs(std::string_view text, unsigned per, bool esc) {
    std::string out = "[";
    for (const std::string& t : tokens_of(text, per)) {
        if (out.size() > 1) out += ',';
        out += R"({"token":)" + js(t, esc) + R"(,"logprob":-0.5,"bytes":[)";
        for (std::size_t i = 0; i < t.size(); ++i) {
            if (i) out += ',';
            out += std::to_string(static_cast<unsigned char>(t[i]));
        }
        out += R"(],"top_logprobs":[]})";
    }
    return out + "]";
}

// One fragment as a chunk line of the endpoint.
std::string wrap(Endpoint ep, std::string_view frag, bool esc) {
    const unsigned t = frag.empty() ? 0 : static_cast<unsigned char>(frag[0]);
    const unsigned a = frag.size() > 1 ? static_cast<unsigned char>(frag[1]) : 0;
    const std::string_view rest = frag.size() > 2 ? frag.substr(2) : std::string_view();
    const std::string text = sanitized(rest);
    const std::string T = js(text, esc);
    const std::string I = std::to_string(a % 4);
    if (ep == Endpoint::chat_completions) {
        const std::string head =
            R"({"id":"chatcmpl-F","object":"chat.completion.chunk","created":7,"model":"m","system_fingerprint":"fp_F","choices":[{"index":0,)";
        const std::string tail = "}]}";
        switch (t % 16) {
            case 0: return head + R"("delta":{"content":)" + T + R"(},"finish_reason":null)" + tail;
            case 1: return head + R"("delta":{"role":"assistant","content":)" + T + R"(},"logprobs":null,"finish_reason":null)" + tail;
            case 2: return head + R"("delta":{"reasoning_content":)" + T + "}" + tail;
            case 3: return head + R"("delta":{"refusal":)" + T + "}" + tail;
            case 4:
                return head + R"("delta":{"tool_calls":[{"index":)" + I + R"(,"id":"call_)" + I +
                       R"(","type":"function","function":{"name":)" + T + R"(,"arguments":""}}]})" + tail;
            case 5: return head + R"("delta":{"tool_calls":[{"index":)" + I + R"(,"function":{"arguments":)" + T + "}}]}" + tail;
            case 6:
                return head + R"("delta":{"tool_calls":[{"index":)" + I + R"(,"id":"call_)" + I +
                       R"(","type":"function","function":{"name":"fn_)" + I + R"(","arguments":)" + T + "}}]}" + tail;
            case 7: return head + R"("delta":{},"finish_reason":)" + T + tail;
            case 8:
                return head + R"("delta":{"content":)" + T + R"(},"logprobs":{"content":)" +
                       chat_logprobs(text, a % 3 + 1, esc) + R"(,"refusal":null},"finish_reason":null)" + tail;
            case 9: return head + R"("delta":{"content":)" + T + R"(},"finish_reason":"stop")" + tail;
            case 10:
                return R"({"id":"chatcmpl-F","object":"chat.completion.chunk","created":7,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})";
            case 11:
                return head + R"("delta":{"function_call":{)" + (a % 2 ? R"("name":)" + T : R"("name":"f","arguments":)" + T) +
                       "}}" + tail;
            case 12:
                return head + R"("delta":{"tool_calls":[{"index":)" + I + R"(,"function":{"arguments":)" + T +
                       R"(}},{"index":)" + std::to_string(a % 4 + 1) +
                       R"(,"id":"call_x","type":"function","function":{"name":"g","arguments":)" + T + "}}]}" + tail;
            case 13:
                return head + R"("delta":{"refusal":)" + T + R"(},"logprobs":{"content":null,"refusal":)" +
                       chat_logprobs(text, a % 3 + 1, esc) + "}" + tail;
            case 14: return "[DONE]";
            default: return std::string(rest);
        }
    }
    if (ep == Endpoint::completions) {
        const std::string head = R"({"id":"cmpl-F","object":"text_completion","created":7,"choices":[{)";
        const std::string tail = R"(}],"model":"m"})";
        switch (t % 7) {
            case 0: return head + R"("text":)" + T + R"(,"index":0,"logprobs":null,"finish_reason":null)" + tail;
            case 1: {
                std::string tokens = "[", lps = "[", tops = "[", offsets = "[";
                std::size_t offset = 0;
                for (const std::string& tok : tokens_of(text, a % 3 + 1)) {
                    if (tokens.size() > 1) tokens += ',', lps += ',', tops += ',', offsets += ',';
                    tokens += js(tok, esc);
                    lps += "-1.25";
                    tops += R"({"x":-2})";
                    offsets += std::to_string(offset);
                    offset += tok.size();
                }
                return head + R"("text":)" + T + R"(,"index":0,"logprobs":{"tokens":)" + tokens +
                       R"(],"token_logprobs":)" + lps + R"(],"top_logprobs":)" + tops + R"(],"text_offset":)" +
                       offsets + R"(]},"finish_reason":null)" + tail;
            }
            case 2: return head + R"("text":"","index":0,"finish_reason":)" + T + tail;
            case 3: return head + R"("text":)" + T + R"(,"index":0,"finish_reason":"stop")" + tail;
            case 4:
                return R"({"id":"cmpl-F","object":"text_completion","created":7,"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})";
            case 5: return "[DONE]";
            default: return std::string(rest);
        }
    }
    const std::string delta = R"({"type":"content_block_delta","index":)" + I + R"(,"delta":{"type":)";
    switch (t % 14) {
        case 0:
            return R"({"type":"message_start","message":{"id":"msg_F","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}})";
        case 1: return R"({"type":"content_block_start","index":)" + I + R"(,"content_block":{"type":"text","text":""}})";
        case 2: return R"({"type":"content_block_start","index":)" + I + R"(,"content_block":{"type":"text","text":)" + T + "}}";
        case 3:
            return R"({"type":"content_block_start","index":)" + I +
                   R"(,"content_block":{"type":"tool_use","id":"toolu_1","name":)" + T + R"(,"input":{}}})";
        case 4:
            return R"({"type":"content_block_start","index":)" + I + R"(,"content_block":{"type":"thinking","thinking":""}})";
        case 5: return delta + R"("text_delta","text":)" + T + "}}";
        case 6: return delta + R"("input_json_delta","partial_json":)" + T + "}}";
        case 7: return delta + R"("thinking_delta","thinking":)" + T + "}}";
        case 8: return delta + R"("signature_delta","signature":)" + T + "}}";
        case 9: return R"({"type":"content_block_stop","index":)" + I + "}";
        case 10:
            return R"({"type":"message_delta","delta":{"stop_reason":)" + T +
                   R"(,"stop_sequence":null},"usage":{"output_tokens":9}})";
        case 11: return R"({"type":"message_stop"})";
        case 12: return R"({"type":"ping"})";
        default: return std::string(rest);
    }
}

bool object_root(std::string_view s) {
    const std::size_t i = s.find_first_not_of(" \t\r\n");
    return i != std::string_view::npos && s[i] == '{';
}

// Check 1: what read says of one line.
void check_read(const Line& r, std::string_view data, Endpoint ep) {
    MP_FUZZ_CHECK(r.done == (data == "[DONE]"));
    if (r.done) MP_FUZZ_CHECK(!r.json && r.pieces.empty());
    const StrictJson strict = check_strict_json(data);
    const bool json_object = strict.valid && object_root(data);
    if (r.json) MP_FUZZ_CHECK_THAT(json_object, "read took a line that is not one JSON object as JSON");
    if (json_object && !strict.too_deep && !strict.lone_surrogate)
        MP_FUZZ_CHECK_THAT(r.json, "read refused a line that is one JSON object");
    if (!r.json) {
        MP_FUZZ_CHECK_THAT(r.pieces.empty(), "a line read as not JSON has pieces");
        return;
    }
    for (const Piece& p : r.pieces) {
        MP_FUZZ_CHECK_THAT(valid_utf8(p.text), "a piece's text is not valid UTF-8");
        if (p.kind == Kind::text) MP_FUZZ_CHECK_THAT(!p.text.empty(), "an empty string became a text piece");
        if (p.kind == Kind::block_stop || p.kind == Kind::usage || p.kind == Kind::signature)
            MP_FUZZ_CHECK(p.text.empty());
        switch (ep) {
            case Endpoint::chat_completions:
                MP_FUZZ_CHECK(p.index == 0);
                MP_FUZZ_CHECK(p.kind == Kind::text || p.kind == Kind::name || p.kind == Kind::finish ||
                              p.kind == Kind::usage);
                if (p.kind == Kind::text)
                    MP_FUZZ_CHECK(p.field == Field::content || p.field == Field::refusal ||
                                  p.field == Field::reasoning || p.field == Field::arguments);
                if (p.kind == Kind::text && p.field != Field::arguments) MP_FUZZ_CHECK(p.sub == 0);
                break;
            case Endpoint::completions:
                MP_FUZZ_CHECK(p.index == 0 && p.sub == 0);
                MP_FUZZ_CHECK(p.kind == Kind::text || p.kind == Kind::finish || p.kind == Kind::usage);
                if (p.kind == Kind::text) MP_FUZZ_CHECK(p.field == Field::text);
                break;
            default:
                MP_FUZZ_CHECK(p.sub == 0);
                MP_FUZZ_CHECK(p.kind != Kind::name && p.kind != Kind::usage);
                if (p.kind == Kind::text)
                    MP_FUZZ_CHECK(p.field == Field::content || p.field == Field::reasoning ||
                                  p.field == Field::arguments);
                break;
        }
    }
}

// The text and marks of `pieces` joined as PublishedAnswer joins them.
std::vector<Piece> joined(const std::vector<Piece>& pieces) {
    std::vector<Piece> runs;
    for (const Piece& p : pieces) {
        if (p.kind == Kind::text && !runs.empty()) {
            Piece& last = runs.back();
            if (last.kind == Kind::text && last.field == p.field && last.index == p.index && last.sub == p.sub) {
                last.text += p.text;
                continue;
            }
        }
        runs.push_back(p);
    }
    return runs;
}

struct Fuzz {
    Endpoint ep;
    sse::ResumeReader reader;

    // Check 3 for one verdict of forward or cut on `data` (read as `before`):
    // the rewrite and what it reads back as.
    void check_rewrite(std::string_view data, const Line& before, const sse::Seam::Verdict& v, const sse::ResumeIds& ids) {
        std::string out = "kept";
        const bool ok = reader.rewrite(data, ep, v.cut, ids, out);
        if (!before.json && !before.done) {
            MP_FUZZ_CHECK_THAT(!ok && out == "kept", "a line read as not JSON was rewritten");
            return;
        }
        MP_FUZZ_CHECK_THAT(ok, "a line read as JSON was not rewritten");
        MP_FUZZ_CHECK(out.starts_with("kept"));
        const std::string written = out.substr(4);
        if (before.done) {
            MP_FUZZ_CHECK(written == "[DONE]");
            return;
        }
        MP_FUZZ_CHECK_THAT(check_strict_json(written).valid, "a rewritten line is not one JSON document");
        const Line after = own(reader.read(written, ep));
        MP_FUZZ_CHECK_THAT(after.json, "a rewritten line does not read as JSON");
        MP_FUZZ_CHECK(after.one_choice == before.one_choice);

        std::vector<Piece> expected;
        if (v.step == Step::forward) {
            MP_FUZZ_CHECK(!v.cut.any());
            expected = before.pieces;
        } else {
            MP_FUZZ_CHECK(v.step == Step::cut);
            const std::size_t at = v.cut.published;
            MP_FUZZ_CHECK_THAT(at < before.pieces.size(), "a cut past the line's pieces");
            // What the client has of the line goes; the marks it has stay
            // but a tool call's name (rewrite drops it with the call's id).
            for (std::size_t i = 0; i < at; ++i)
                if (before.pieces[i].kind != Kind::text && before.pieces[i].kind != Kind::name)
                    expected.push_back(before.pieces[i]);
            Piece p = before.pieces[at];
            if (v.cut.cut_bytes > 0) {
                MP_FUZZ_CHECK_THAT(p.kind == Kind::text && v.cut.cut_bytes < p.text.size(),
                                   "a cut inside a piece that is not text, or not inside it");
                MP_FUZZ_CHECK_THAT((static_cast<unsigned char>(p.text[v.cut.cut_bytes]) & 0xC0) != 0x80,
                                   "a cut inside a character");
                p.text.erase(0, v.cut.cut_bytes);
            }
            expected.push_back(p);
            for (std::size_t i = at + 1; i < before.pieces.size(); ++i) expected.push_back(before.pieces[i]);
        }
        MP_FUZZ_CHECK_THAT(after.pieces == expected, "a rewritten line reads back to other pieces");

        const auto replaced = [](const std::string& was, const std::string& with, const std::string& now) {
            return was.empty() ? now.empty() : now == (with.empty() ? was : with);
        };
        MP_FUZZ_CHECK_THAT(replaced(before.id, ids.id, after.id), "the id was not the published one");
        MP_FUZZ_CHECK_THAT(replaced(before.created, ids.created, after.created), "created was not the published one");
        MP_FUZZ_CHECK_THAT(replaced(before.system_fingerprint, ids.system_fingerprint, after.system_fingerprint),
                           "system_fingerprint was not the published one");
    }

    // Check 3 over `second` against `published`; returns the verdicts,
    // each also held to the model's (expected_verdict).
    std::vector<Step> seam_over(const std::vector<std::string>& second, const sse::PublishedAnswer& published) {
        std::vector<Piece> runs;
        for (const auto& r : published.runs()) runs.push_back({r.kind, r.field, r.index, r.sub, r.text});
        sse::Seam seam(published);
        std::vector<Step> steps;
        std::vector<Piece> seen;  // the pieces judged before the seam
        bool diverged = false, reached = runs.empty();
        for (const std::string& data : second) {
            const Line before = own(reader.read(data, ep));
            const sse::Seam::Verdict v = seam.judge(reader.read(data, ep));
            if (diverged) MP_FUZZ_CHECK_THAT(v.step == Step::diverged, "a diverged seam judged again");
            if (v.step == Step::cut) MP_FUZZ_CHECK_THAT(seam.reached(), "a cut short of the seam");
            if (v.step == Step::forward || v.step == Step::cut) check_rewrite(data, before, v, published.ids());
            if (!diverged) {
                sse::Seam::Verdict want{Step::forward, {}};
                if (!reached) want = expected_verdict(seen, before, runs);
                MP_FUZZ_CHECK_THAT(v.step == want.step && v.cut.published == want.cut.published &&
                                       v.cut.cut_bytes == want.cut.cut_bytes,
                                   "the seam's verdict is not the one the published answer implies");
                if (want.step == Step::cut) reached = true;
                if (want.step == Step::diverged) diverged = true;
                if (want.step == Step::drop) {
                    seen.insert(seen.end(), before.pieces.begin(), before.pieces.end());
                    reached = joined(seen) == runs;
                }
            }
            MP_FUZZ_CHECK(seam.reached() == (reached && !diverged));
            steps.push_back(v.step);
        }
        return steps;
    }

    // The verdict section 16 implies for `line` after the second stream
    // said `seen` (all before the seam), against the published `runs`,
    // worked out from whole answers rather than the seam's state: a line
    // whose answer so far is still a beginning of the published one is
    // dropped; one that gets past it goes out cut where its answer so far
    // equals the published one; anything else diverges.
    static sse::Seam::Verdict expected_verdict(const std::vector<Piece>& seen, const Line& line,
                                               const std::vector<Piece>& runs) {
        if (!line.one_choice) return {Step::diverged, {}};
        std::vector<Piece> so_far = seen;
        so_far.insert(so_far.end(), line.pieces.begin(), line.pieces.end());
        if (beginning_of(joined(so_far), runs)) return {Step::drop, {}};
        std::vector<Piece> x = seen;
        for (std::size_t i = 0; i < line.pieces.size(); ++i) {
            const std::vector<Piece> before = joined(x);
            if (before == runs) return {Step::cut, {i, 0}};
            if (!beginning_of(before, runs)) break;
            const Piece& p = line.pieces[i];
            if (p.kind == Kind::text && !runs.empty()) {
                // The bytes of p that would complete the published answer.
                const bool continues = !before.empty() && before.size() == runs.size() &&
                                       before.back().kind == Kind::text && before.back().field == p.field &&
                                       before.back().index == p.index && before.back().sub == p.sub;
                const std::size_t have = continues ? before.back().text.size() : 0;
                if (runs.back().text.size() > have) {
                    const std::size_t b = runs.back().text.size() - have;
                    if (b < p.text.size()) {
                        std::vector<Piece> cut = x;
                        cut.push_back(p);
                        cut.back().text.resize(b);
                        if (joined(cut) == runs) return {Step::cut, {i, b}};
                    }
                }
            }
            x.push_back(p);
        }
        return {Step::diverged, {}};
    }

    // `s` could still become `r`: every run equal but the last, which may
    // be a beginning of r's text.
    static bool beginning_of(const std::vector<Piece>& s, const std::vector<Piece>& r) {
        if (s.size() > r.size()) return false;
        for (std::size_t j = 0; j < s.size(); ++j) {
            const Piece &a = s[j], &b = r[j];
            if (a.kind != b.kind || a.field != b.field || a.index != b.index || a.sub != b.sub) return false;
            if (j + 1 == s.size() && a.kind == Kind::text ? !b.text.starts_with(a.text) : a.text != b.text) return false;
        }
        return true;
    }
};

// A piece of a rebuilt stream: the published run it comes from, with its
// text (a part of the run's text for answer text).
struct Part {
    const Piece* run;
    std::string text;
};

// What a chat delta holds for a text or name piece ("" for another).
std::string chat_delta(const Piece& p, const std::string& T) {
    const std::string sub = std::to_string(p.sub);
    const std::string call = p.sub == -1 ? R"("function_call":{)" : R"("tool_calls":[{"index":)" + sub + R"(,"function":{)";
    const std::string call_end = p.sub == -1 ? "}" : "}}]";
    if (p.kind == Kind::name) return call + R"("name":)" + T + call_end;
    if (p.kind != Kind::text) return {};
    switch (p.field) {
        case Field::content: return R"("content":)" + T;
        case Field::refusal: return R"("refusal":)" + T;
        case Field::reasoning: return R"("reasoning_content":)" + T;
        case Field::arguments: return call + R"("arguments":)" + T + call_end;
        default: return {};
    }
}

std::string openai_head(Endpoint ep) {
    return ep == Endpoint::chat_completions
               ? R"({"id":"chatcmpl-B","created":222,"system_fingerprint":"fp_B","choices":[{"index":0,)"
               : R"({"id":"cmpl-B","created":222,"choices":[{"index":0,)";
}

// A line that carries exactly `part`'s piece ("" when the endpoint has no such piece).
std::string line_of(Endpoint ep, const Part& part) {
    const Piece& p = *part.run;
    const std::string& text = part.text;
    const std::string T = js(text);
    const std::string idx = std::to_string(p.index);
    if (ep == Endpoint::messages) {
        const std::string delta = R"({"type":"content_block_delta","index":)" + idx + R"(,"delta":{)";
        switch (p.kind) {
            case Kind::text:
                if (p.field == Field::content) return delta + R"("type":"text_delta","text":)" + T + "}}";
                if (p.field == Field::arguments) return delta + R"("type":"input_json_delta","partial_json":)" + T + "}}";
                if (p.field == Field::reasoning) return delta + R"("type":"thinking_delta","thinking":)" + T + "}}";
                return {};
            case Kind::block_start: {
                // "type:name", or "type" alone (which may hold a ':').
                const std::size_t colon = text.find(':');
                std::string block;
                if (colon != std::string::npos && colon + 1 < text.size())
                    block = R"("type":)" + js(text.substr(0, colon)) + R"(,"name":)" + js(text.substr(colon + 1));
                else
                    block = R"("type":)" + T;
                return R"({"type":"content_block_start","index":)" + idx + R"(,"content_block":{)" + block + "}}";
            }
            case Kind::block_stop: return R"({"type":"content_block_stop","index":)" + idx + "}";
            case Kind::finish: return R"({"type":"message_delta","index":)" + idx + R"(,"delta":{"stop_reason":)" + T + "}}";
            case Kind::signature: return delta + R"("type":"signature_delta","signature":"sig_B"}})";
            default: return {};
        }
    }
    if (p.kind == Kind::usage) return R"({"id":"B","choices":[],"usage":{"total_tokens":1}})";
    if (p.kind == Kind::finish && ep == Endpoint::completions)
        return openai_head(ep) + R"("text":"","finish_reason":)" + T + "}]}";
    if (p.kind == Kind::finish) return openai_head(ep) + R"("delta":{},"finish_reason":)" + T + "}]}";
    if (ep == Endpoint::completions)
        return p.kind == Kind::text && p.field == Field::text ? openai_head(ep) + R"("text":)" + T + "}]}" : "";
    const std::string member = chat_delta(p, T);
    return member.empty() ? "" : openai_head(ep) + R"("delta":{)" + member + "}}]}";
}

// One line that carries `a`'s piece then `b`'s, where the endpoint has one
// ("" else): a chat tool call's name and its arguments, answer text and a
// finish reason.
std::string pair_line(Endpoint ep, const Part& a, const Part& b) {
    const Piece &p = *a.run, &q = *b.run;
    if (ep == Endpoint::messages) return {};
    if (ep == Endpoint::chat_completions && p.kind == Kind::name && q.kind == Kind::text &&
        q.field == Field::arguments && q.sub == p.sub) {
        const std::string call =
            p.sub == -1 ? R"("function_call":{)" : R"("tool_calls":[{"index":)" + std::to_string(p.sub) + R"(,"function":{)";
        const std::string call_end = p.sub == -1 ? "}" : "}}]";
        return openai_head(ep) + R"("delta":{)" + call + R"("name":)" + js(a.text) + R"(,"arguments":)" + js(b.text) +
               call_end + "}}]}";
    }
    if (p.kind == Kind::text && q.kind == Kind::finish) {
        if (ep == Endpoint::completions)
            return openai_head(ep) + R"("text":)" + js(a.text) + R"(,"finish_reason":)" + js(b.text) + "}]}";
        const std::string member = chat_delta(p, js(a.text));
        if (!member.empty()) return openai_head(ep) + R"("delta":{)" + member + R"(},"finish_reason":)" + js(b.text) + "}]}";
    }
    return {};
}

std::string quiet_line(Endpoint ep) {
    switch (ep) {
        case Endpoint::chat_completions: return R"({"id":"B","choices":[{"index":0,"delta":{"role":"assistant"}}]})";
        case Endpoint::completions: return R"({"id":"B","choices":[{"index":0,"text":""}]})";
        default: return R"({"type":"ping"})";
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    if (size < 2) return 0;
    const unsigned mode = bytes[0] / 3;
    const Endpoint ep = bytes[0] % 3 == 0   ? Endpoint::chat_completions
                        : bytes[0] % 3 == 1 ? Endpoint::completions
                                            : Endpoint::messages;
    const bool wrapped = mode & 1, escape_all = mode & 2, straddle = mode & 4, quiet = mode & 8;
    const std::string_view body(reinterpret_cast<const char*>(bytes + 2), size - 2);

    std::vector<std::string> lines;
    for (std::size_t from = 0;;) {
        const std::size_t nl = body.find('\n', from);
        const std::string_view frag = body.substr(from, nl == std::string_view::npos ? body.npos : nl - from);
        lines.push_back(wrapped ? wrap(ep, frag, escape_all) : std::string(frag));
        if (nl == std::string_view::npos) break;
        from = nl + 1;
    }
    const std::size_t k = std::min<std::size_t>(bytes[1], lines.size());

    Fuzz f{ep, {}};

    // 1: every line read; a rewrite without cut or ids changes no piece.
    std::vector<Line> read;
    for (const std::string& data : lines) {
        read.push_back(own(f.reader.read(data, ep)));
        check_read(read.back(), data, ep);
        if (read.back().json) f.check_rewrite(data, read.back(), {Step::forward, {}}, {});
    }

    // 2: the published answer.
    sse::PublishedAnswer published;
    std::uint64_t points = 0;
    std::vector<Piece> pieces;
    bool one_choice = true;
    sse::ResumeIds ids;
    for (std::size_t i = 0; i < k; ++i) {
        if (!read[i].json) continue;
        published.add(f.reader.read(lines[i], ep));
        for (const Piece& p : read[i].pieces) {
            if (p.kind == Kind::text) points += sse::code_points(p.text);
            pieces.push_back(p);
        }
        one_choice = one_choice && read[i].one_choice;
        if (!read[i].id.empty()) ids.id = read[i].id;
        if (!read[i].created.empty()) ids.created = read[i].created;
        if (!read[i].system_fingerprint.empty()) ids.system_fingerprint = read[i].system_fingerprint;
    }
    MP_FUZZ_CHECK_THAT(published.code_points() == points, "code_points() is not the published text's");
    const std::vector<Piece> runs = joined(pieces);
    MP_FUZZ_CHECK(published.runs().size() == runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const auto& r = published.runs()[i];
        MP_FUZZ_CHECK_THAT((Piece{r.kind, r.field, r.index, r.sub, r.text} == runs[i]), "a run is not the published pieces'");
    }
    MP_FUZZ_CHECK(published.one_choice() == one_choice);
    MP_FUZZ_CHECK(published.ids().id == ids.id && published.ids().created == ids.created &&
                  published.ids().system_fingerprint == ids.system_fingerprint);

    // 3: the rest of the input as the second stream.
    const std::vector<std::string> rest(lines.begin() + static_cast<std::ptrdiff_t>(k), lines.end());
    f.seam_over(rest, published);

    // 4: a second stream of the same pieces, the text split elsewhere, some
    // pieces sharing a line, then the rest of the input.
    Choices choose{bytes + 2, size - 2};
    std::vector<Part> parts;
    for (const Piece& run : runs) {
        if (run.kind != Kind::text) {
            parts.push_back({&run, run.text});
            continue;
        }
        std::size_t from = 0;
        for (const std::size_t at : inner_boundaries(run.text)) {
            if (choose.next() % 3 != 0) continue;
            parts.push_back({&run, run.text.substr(from, at - from)});
            from = at;
        }
        parts.push_back({&run, run.text.substr(from)});
    }
    // The last part may run on past the seam: the line that holds it is cut.
    std::size_t extra = 0;
    if (straddle && !parts.empty() && parts.back().run->kind == Kind::text) {
        const std::string more =
            "+" + sanitized(std::string_view(reinterpret_cast<const char*>(bytes + 2),
                                             std::min<std::size_t>(size - 2, choose.next() % 8)));
        extra = more.size();
        parts.back().text += more;
    }
    std::vector<std::string> same;
    std::vector<std::vector<const Part*>> carried;  // each line's parts, in line order
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (quiet && choose.next() % 4 == 0) {
            same.push_back(quiet_line(ep));
            carried.push_back({});
        }
        std::string line;
        std::vector<const Part*> in{&parts[i]};
        if (i + 1 < parts.size() && choose.next() % 2 == 0) line = pair_line(ep, parts[i], parts[i + 1]);
        if (line.empty()) {
            line = line_of(ep, parts[i]);
        } else {
            in.push_back(&parts[++i]);
        }
        if (line.empty()) return 0;  // a piece this endpoint's lines cannot carry
        // The rebuilt line says what it was built to say.
        const Line check = own(f.reader.read(line, ep));
        MP_FUZZ_CHECK(check.json && check.pieces.size() == in.size());
        for (std::size_t k = 0; k < in.size(); ++k) {
            Piece want = *in[k]->run;
            want.text = in[k]->text;
            MP_FUZZ_CHECK_THAT(check.pieces[k] == want, "a rebuilt line reads as another piece");
        }
        same.push_back(std::move(line));
        carried.push_back(std::move(in));
    }
    const std::size_t seam_lines = same.size();
    same.insert(same.end(), rest.begin(), rest.end());
    const std::vector<Step> steps = f.seam_over(same, published);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const bool straddling = extra > 0 && i + 1 == seam_lines;
        if (i >= seam_lines) {
            MP_FUZZ_CHECK_THAT(steps[i] == Step::forward, "the same pieces did not reach the seam");
        } else if (straddling) {
            MP_FUZZ_CHECK_THAT(steps[i] == Step::cut, "the straddling line is not cut");
        } else {
            MP_FUZZ_CHECK_THAT(steps[i] == Step::drop, "a line of published pieces is not dropped");
        }
    }
    if (extra > 0) {
        // The straddling line goes out with exactly the text past the seam
        // (seam_over checked the rest of its rewrite).
        sse::Seam seam(published);
        for (std::size_t i = 0; i + 1 < seam_lines; ++i) seam.judge(f.reader.read(same[i], ep));
        const sse::Seam::Verdict v = seam.judge(f.reader.read(same[seam_lines - 1], ep));
        const auto& in = carried[seam_lines - 1];
        MP_FUZZ_CHECK(v.step == Step::cut && v.cut.published + 1 == in.size());
        MP_FUZZ_CHECK(v.cut.cut_bytes + extra == in.back()->text.size());
    }
    return 0;
}
