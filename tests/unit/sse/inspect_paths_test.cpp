// The Inspector reads a line with simdjson's DOM parser when it can (the fast
// path, sse/line_walker_dom.cpp) and with the On-Demand walk otherwise. The
// two must say the same of every line: here every field of DataInfo, answer
// fragments included, is compared for a set of lines of every endpoint and
// for every truncation and a few byte changes of each (most of them invalid
// JSON, which the fast path must leave to the On-Demand walk).
#include "sse/inspect.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using modelproxy::policy::Endpoint;
using modelproxy::sse::AnswerFragment;
using modelproxy::sse::DataInfo;
using modelproxy::sse::DataKind;
using modelproxy::sse::Inspector;
using modelproxy::sse::LineMemo;

namespace {

const Endpoint endpoints[] = {Endpoint::chat_completions, Endpoint::completions, Endpoint::responses,
                              Endpoint::messages, Endpoint::embeddings, Endpoint::other};

// Everything a DataInfo says, as text, so a difference prints readably.
std::string describe(const DataInfo& info) {
    std::string out = "kind=" + std::to_string(static_cast<int>(info.kind)) + " object=" +
                      std::to_string(info.object) + " answer=" + std::to_string(info.answer_text) +
                      " end=" + std::to_string(info.end_marker) + " type=" + std::string(info.type);
    out += " finish=" + (info.finish_reason ? "[" + std::string(*info.finish_reason) + "]" : std::string("none"));
    for (std::string_view m : info.models()) out += " model=" + std::string(m);
    out += " error=" + std::to_string(info.structured_error);
    if (info.error.code_int) out += " code_int=" + std::to_string(*info.error.code_int);
    out += " code=" + info.error.code + " etype=" + info.error.type + " inner=" + info.error.inner_code;
    const auto count = [](const std::optional<std::uint64_t>& n) { return n ? std::to_string(*n) : std::string("-"); };
    out += " usage=" + count(info.usage.input_tokens) + "/" + count(info.usage.output_tokens) + "/" +
           count(info.usage.total_tokens);
    for (const AnswerFragment& f : info.answer_fragments) {
        out += " frag(" + std::to_string(f.key.index) + "," + std::to_string(f.key.sub) + "," +
               std::to_string(static_cast<int>(f.key.field)) + ")=" + std::string(f.text);
    }
    return out;
}

const std::vector<std::string> lines = {
    R"({"id":"c1","object":"chat.completion.chunk","created":1720000000,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi \"there\"\u00e9"},"logprobs":null,"finish_reason":null}],"usage":null})",
    R"({"choices":[{"delta":{"reasoning_content":"think","refusal":"","audio":{"id":"a"},"n":0},"index":2},{"finish_reason":"stop","index":1,"delta":{}}],"usage":{"prompt_tokens":3,"completion_tokens":4.0,"total_tokens":-1}})",
    R"({"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"},"index":3},{"function":{"arguments":"x"}},7]}}],"model":""})",
    R"({"choices":[{"delta":{"function_call":{"arguments":"abc"},"tool_calls":[]}},"x",{"index":1.5,"delta":{"content":"y"}}]})",
    R"({"choices":[{"text":"Hello","index":0,"finish_reason":7},{"text":"","index":1},{"text":3}],"model":"m"})",
    R"({"type":"response.output_text.delta","output_index":1,"content_index":2,"delta":"sk-proj-AAAA"})",
    R"({"delta":"r","type":"response.reasoning_summary_text.delta","summary_index":4,"output_index":-0})",
    R"({"type":"response.completed","response":{"model":"gpt-4o","usage":{"input_tokens":10,"output_tokens":20,"total_tokens":30}}})",
    R"({"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}})",
    R"({"type":"error","code":"rate_limit_exceeded","message":"slow down","sequence_number":3})",
    R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"k\": 1"}})",
    R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm","text":"t"}})",
    R"({"type":"message_start","message":{"model":"claude-3-5-sonnet-20241022","usage":{"input_tokens":25,"output_tokens":1}}})",
    R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}})",
    R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
    R"({"error":{"code":503,"type":"server_error","innererror":{"code":"ResponsibleAIPolicyViolation"}}})",
    R"({"error":{"code":503.0,"message":"m"}})",
    R"({"error":{"code":99999999999999999999}})",
    R"({"error":"plain","request_id":"r"})",
    R"({"mod\u0065l":"escaped-key","\u0074ype":"x"})",
    R"({"model":"a","model":"b","model":"c"})",
    R"({"n":1e400,"big":123456789012345678901234567890,"choices":[{"delta":{"content":"z"}}]})",
    R"({"object":"embedding","data":[{"embedding":[0.1,-2e-3,3]}]})",
    R"([1,"two",{"three":null},[true,false]])",
    R"("a string")",
    "  17  ",
    "null",
    R"({"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],"model":"deep"})",
    R"({"choices":[{"delta":{"content":"\ud83d\ude00 \ud800"}}]})",
};

void compare(Inspector& fast, Inspector& slow, std::string_view line) {
    for (const Endpoint endpoint : endpoints) {
        for (std::string_view event : {std::string_view(), std::string_view("error")}) {
            const std::string a = describe(fast.inspect(line, endpoint, event));
            const std::string b = describe(slow.inspect(line, endpoint, event));
            if (a != b) {
                CAPTURE(line, static_cast<int>(endpoint), event);
                CHECK(a == b);
            }
        }
    }
}

}  // namespace

TEST_CASE("inspect paths: the DOM fast path reads each line as the On-Demand walk does", "[inspect]") {
    Inspector fast;
    Inspector slow(false);
    for (const std::string& line : lines) compare(fast, slow, line);
}

TEST_CASE("inspect paths: alike on every truncation and byte change", "[inspect]") {
    Inspector fast;
    Inspector slow(false);
    const std::string swaps = "\"\\{}[],:0-e. x";
    for (const std::string& line : lines) {
        for (std::size_t at = 0; at < line.size(); ++at) {
            compare(fast, slow, std::string_view(line).substr(0, at));
            for (char c : swaps) {
                std::string changed = line;
                changed[at] = c;
                compare(fast, slow, changed);
            }
        }
    }
}

TEST_CASE("inspect paths: the fast path takes a typical chunk", "[inspect]") {
    // The point of it: a valid line must not be left to the slow walk.
    Inspector fast;
    const DataInfo& info = fast.inspect(lines[0], Endpoint::chat_completions);
    REQUIRE(info.kind == DataKind::json);
    CHECK(fast.last_line_took_fast_path());
    Inspector slow(false);
    slow.inspect(lines[0], Endpoint::chat_completions);
    CHECK_FALSE(slow.last_line_took_fast_path());
    // An invalid line goes to the walk, which decides.
    fast.inspect(R"({"a":"b":5})", Endpoint::chat_completions);
    CHECK_FALSE(fast.last_line_took_fast_path());
}

// Found by inspect_fuzz: a string value followed by `:` or by stray bytes is
// not JSON. The On-Demand walk once read escape-free strings in place and so
// skipped the check of what follows them; both paths must refuse such lines.
TEST_CASE("inspect: a value after a string value, or bytes after a member, is unparseable on both paths",
          "[inspect]") {
    const std::string lines[] = {
        R"({"a":"b":5})",
        R"({"type":"response.completed","response":{"status":"complettokens":5,"x":1}})",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}\xd4\xdd_reason\":null}]}",
        R"({"model":"gpt-4o","choices":[{"delta":{"content":"hi" "x"}}]})",
    };
    for (const std::string& line : lines) {
        for (Endpoint endpoint : endpoints) {
            CAPTURE(line, static_cast<int>(endpoint));
            Inspector fast(true), walk(false);
            CHECK(fast.inspect(line, endpoint).kind == DataKind::unparseable);
            CHECK(walk.inspect(line, endpoint).kind == DataKind::unparseable);
        }
    }
}

// A line that repeats the line before it except for its answer text is read
// without a parse (sse/repeated_shape.hpp). Whatever the next line is, the
// Inspector must say of it exactly what a fresh On-Demand walk says: here
// each base line is followed, on every endpoint and event name, by every
// truncation of it, every byte change, and insertions of bytes that could
// end, escape or break the answer text's string.
namespace {

// Chunks without a backslash and with one answer-text fragment, the shape
// the repeated path learns from.
const std::vector<std::string> shaped_lines = {
    R"({"id":"chatcmpl-B9","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_06","choices":[{"index":0,"delta":{"content":" quick"},"logprobs":null,"finish_reason":null}]})",
    R"({"choices":[{"index":1,"delta":{"reasoning_content":"think"}}],"model":"m","usage":null})",
    R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"function":{"arguments":"{"}}]}}]})",
    R"({"choices":[{"text":"Hello","index":0,"finish_reason":null}],"model":"m"})",
    R"({"type":"response.output_text.delta","output_index":1,"content_index":2,"delta":"sk-proj-AAAA"})",
    R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a b"}})",
    R"({"error":{"code":"x","message":"m"},"choices":[{"delta":{"content":"c"}}]})",
    R"({"id":"chatcmpl-1","created":17,"model":"m","choices":[{"index":0,"delta":{"content":" a"},"finish_reason":null}],"obfuscation":"Zq"})",
    R"({"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","obfuscation":"xy"})",
    R"({"type":"response.output_text.delta","sequence_number":-0,"created":1e5,"id":{"a":"b"},"delta":"Hel"})",
    R"({"choices":[{"index":0,"delta":{"content":"end"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}})",
    R"({"choices":[{"delta":{"content":"x"}}],"id":"x"})",  // two tokens "x": never learned
    R"({"model":"x","choices":[{"delta":{"content":"x"}}]})",
};

void compare_after(Inspector& fast, Inspector& slow, const std::string& base, std::string_view line,
                   Endpoint endpoint, std::string_view event) {
    LineMemo memo;
    fast.inspect(base, endpoint, event, nullptr, memo);
    const std::string a = describe(fast.inspect(line, endpoint, event, nullptr, memo));
    const std::string b = describe(slow.inspect(line, endpoint, event));
    if (a != b) {
        CAPTURE(base, line, static_cast<int>(endpoint), event);
        CHECK(a == b);
    }
}

}  // namespace

TEST_CASE("inspect paths: a line after a line of the same shape reads as the On-Demand walk reads it",
          "[inspect]") {
    Inspector fast;
    Inspector slow(false);
    const std::string swaps = "\"\\{}[],:0-e. x\x01\x7f";
    const std::string inserts[] = {"\"", "\\", "\\\"", "\",\"model\":\"evil", "\\u0041", "\n", "\xc3\xa9",
                                   "\xc3", "\xff", "\xe2\x82", "", "ok"};
    for (const std::string& base : shaped_lines) {
        for (const Endpoint endpoint : endpoints) {
            for (std::string_view event : {std::string_view(), std::string_view("error")}) {
                for (std::size_t at = 0; at <= base.size(); ++at) {
                    compare_after(fast, slow, base, std::string_view(base).substr(0, at), endpoint, event);
                    for (const std::string& insert : inserts) {
                        std::string changed = base;
                        changed.insert(at, insert);
                        compare_after(fast, slow, base, changed, endpoint, event);
                    }
                    if (at == base.size()) continue;
                    for (char c : swaps) {
                        std::string changed = base;
                        changed[at] = c;
                        compare_after(fast, slow, base, changed, endpoint, event);
                    }
                }
            }
        }
    }
}

TEST_CASE("inspect paths: a chunk that only changes its answer text is read without a parse", "[inspect]") {
    // The point of it: the stream's common line must take the repeated path,
    // and say what a parse says.
    const std::string first =
        R"({"id":"c","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]})";
    const std::string next =
        R"({"id":"c","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" quick brown \u00e9"},"finish_reason":null}]})";
    const std::string third =
        "{\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" fox \xc3\xa9\"},"
        "\"finish_reason\":null}]}";
    const auto chat = Endpoint::chat_completions;
    Inspector fast;
    Inspector slow(false);
    LineMemo memo;
    fast.inspect(first, chat, {}, nullptr, memo);
    CHECK_FALSE(fast.last_line_repeated_shape());

    // An escape: parsed whole (and it teaches the memo nothing).
    const DataInfo& escaped = fast.inspect(next, chat, {}, nullptr, memo);
    CHECK_FALSE(fast.last_line_repeated_shape());
    CHECK(describe(escaped) == describe(slow.inspect(next, chat)));
    fast.inspect(third, chat, {}, nullptr, memo);
    CHECK_FALSE(fast.last_line_repeated_shape());

    fast.inspect(first, chat, {}, nullptr, memo);
    const DataInfo& info = fast.inspect(third, chat, {}, nullptr, memo);
    CHECK(fast.last_line_repeated_shape());
    CHECK(fast.last_line_took_fast_path());
    REQUIRE(info.answer_fragments.size() == 1);
    CHECK(info.answer_fragments[0].text == " fox \xc3\xa9");
    CHECK(info.answer_text);
    REQUIRE(info.models().size() == 1);
    CHECK(info.models()[0] == "gpt-4o-mini");
    CHECK(describe(info) == describe(slow.inspect(third, chat)));

    // OpenAI's per-line `obfuscation` changes with the text.
    const std::string obfuscated =
        R"({"id":"c","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" the"}}],"obfuscation":"Zq"})";
    const std::string obfuscated_next =
        R"({"id":"c","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" lazy dog"}}],"obfuscation":"x1"})";
    fast.inspect(obfuscated, chat, {}, nullptr, memo);
    const DataInfo& next_info = fast.inspect(obfuscated_next, chat, {}, nullptr, memo);
    CHECK(fast.last_line_repeated_shape());
    CHECK(describe(next_info) == describe(slow.inspect(obfuscated_next, chat)));

    // Another endpoint or event name, or [DONE] in between: parsed whole.
    fast.inspect(first, chat, {}, nullptr, memo);
    fast.inspect(third, Endpoint::completions, {}, nullptr, memo);
    CHECK_FALSE(fast.last_line_repeated_shape());
    fast.inspect(first, chat, {}, nullptr, memo);
    fast.inspect(third, chat, "error", nullptr, memo);
    CHECK_FALSE(fast.last_line_repeated_shape());
    fast.inspect(first, chat, {}, nullptr, memo);
    CHECK(fast.inspect("[DONE]", chat, {}, nullptr, memo).kind == DataKind::done);
    fast.inspect(third, chat, {}, nullptr, memo);
    CHECK_FALSE(fast.last_line_repeated_shape());

    // The memo keeps its own strings: another stream's lines, a body and a
    // line read without a memo in between change nothing it says.
    LineMemo other;
    fast.inspect(first, chat, {}, nullptr, memo);
    fast.inspect(R"({"model":"m2","choices":[{"delta":{"content":"a"}}]})", chat, {}, nullptr, other);
    CHECK(fast.body_identity(R"({"model":"other"})", chat).models.at(0) == "other");
    fast.inspect(R"({"model":"m3","choices":[{"delta":{"content":"b"}}]})", chat);
    const DataInfo& after = fast.inspect(third, chat, {}, nullptr, memo);
    CHECK(fast.last_line_repeated_shape());
    REQUIRE(after.models().size() == 1);
    CHECK(after.models()[0] == "gpt-4o-mini");
    CHECK(describe(after) == describe(slow.inspect(third, chat)));
    const DataInfo& theirs = fast.inspect(R"({"model":"m2","choices":[{"delta":{"content":"cc"}}]})", chat, {},
                                          nullptr, other);
    CHECK(fast.last_line_repeated_shape());
    REQUIRE(theirs.models().size() == 1);
    CHECK(theirs.models()[0] == "m2");

    // Without a memo, or on the On-Demand-only Inspector: never.
    fast.inspect(first, chat);
    fast.inspect(third, chat);
    CHECK_FALSE(fast.last_line_repeated_shape());
    LineMemo slow_memo;
    slow.inspect(first, chat, {}, nullptr, slow_memo);
    slow.inspect(third, chat, {}, nullptr, slow_memo);
    CHECK_FALSE(slow.last_line_repeated_shape());
}

TEST_CASE("inspect paths: a memo whose learned line was never repeated learns less often, until one is",
          "[inspect]") {
    const auto chat = Endpoint::chat_completions;
    const auto line = [](std::string_view model, std::string_view text) {
        return R"({"model":")" + std::string(model) + R"(","choices":[{"index":0,"delta":{"content":")" +
               std::string(text) + R"("}}]})";
    };
    Inspector fast;
    Inspector slow(false);
    LineMemo memo;
    const auto read = [&](const std::string& l) {
        const std::string a = describe(fast.inspect(l, chat, {}, nullptr, memo));
        CHECK(a == describe(slow.inspect(l, chat)));
        return fast.last_line_repeated_shape();
    };
    CHECK_FALSE(read(line("a", "1")));  // learned
    CHECK_FALSE(read(line("b", "1")));  // a's shape never matched: b's is not learned
    CHECK_FALSE(read(line("b", "2")));  // learned
    CHECK(read(line("b", "3")));        // matched: learning as before
    CHECK_FALSE(read(line("c", "1")));  // learned at once
    CHECK(read(line("c", "2")));
    // A hundred shapes that never repeat, then one that does: learning has
    // backed off (to every 33rd line), so the repeats are found a little
    // later, and within 33 lines; every line reads as a parse reads it.
    for (int i = 0; i < 100; ++i) CHECK_FALSE(read(line("m" + std::to_string(i), "x")));
    int first_match = -1;
    for (int i = 0; i < 40 && first_match < 0; ++i)
        if (read(line("z", "t" + std::to_string(i)))) first_match = i;
    CHECK(first_match > 1);
    CHECK(first_match <= 33);
    CHECK(read(line("z", "more")));
}
