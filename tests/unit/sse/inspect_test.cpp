#include "sse/inspect.hpp"

#include "sse/reader.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using modelproxy::policy::Endpoint;
using modelproxy::sse::DataInfo;
using modelproxy::sse::DataKind;
using modelproxy::sse::Inspector;

namespace {

// Copies out what a test compares (DataInfo's views die at the next call).
struct Seen {
    DataKind kind;
    bool answer_text;
    bool end_marker;
    bool structured_error;
    std::vector<std::string> models;
};

Seen seen(const DataInfo& info) {
    Seen s{info.kind, info.answer_text, info.end_marker, info.structured_error, {}};
    for (auto m : info.models()) s.models.emplace_back(m);
    return s;
}

Seen chat(std::string_view line) {
    Inspector inspector;
    return seen(inspector.inspect(line, Endpoint::chat_completions));
}

bool chat_answer(std::string_view delta) {
    return chat(R"({"model":"m","choices":[{"index":0,"delta":)" + std::string(delta) + "}]}").answer_text;
}

}  // namespace

// ---- [DONE] and JSON validity ------------------------------------------------

TEST_CASE("inspect: [DONE] is the chat end marker") {
    const Seen s = chat("[DONE]");
    CHECK(s.kind == DataKind::done);
    CHECK(s.end_marker);
    CHECK_FALSE(s.answer_text);
}

TEST_CASE("inspect: [DONE] with a trailing space is not done and not JSON") {
    CHECK(chat("[DONE] ").kind == DataKind::unparseable);
}

TEST_CASE("inspect: [DONE] is no end marker on messages") {
    Inspector inspector;
    const auto& info = inspector.inspect("[DONE]", Endpoint::messages);
    CHECK(info.kind == DataKind::done);
    CHECK_FALSE(info.end_marker);
}

TEST_CASE("inspect: an empty data line is unparseable") { CHECK(chat("").kind == DataKind::unparseable); }

TEST_CASE("inspect: whitespace only is unparseable") { CHECK(chat("  ").kind == DataKind::unparseable); }

TEST_CASE("inspect: plain text is unparseable") { CHECK(chat("hello").kind == DataKind::unparseable); }

TEST_CASE("inspect: trailing garbage after an object is unparseable") {
    CHECK(chat(R"({"model":"m"} x)").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m"}})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m"}{})").kind == DataKind::unparseable);
}

TEST_CASE("inspect: a truncated object is unparseable") {
    CHECK(chat(R"({"model":"m","choices":[{"delta":{"content":"a"})").kind == DataKind::unparseable);
}

TEST_CASE("inspect: malformed JSON inside an unread member is caught") {
    CHECK(chat(R"({"model":"m","x":[1,,2]})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m","x":{"a" 1}})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m","x":01})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m","x":tru})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m","x":"bad \q escape"})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m","x":1.})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m","x":[1 2]})").kind == DataKind::unparseable);
    CHECK(chat(R"({"model":"m",})").kind == DataKind::unparseable);
}

TEST_CASE("inspect: a raw control character in a string is unparseable") {
    CHECK(chat("{\"model\":\"m\",\"x\":\"a\tb\"}").kind == DataKind::unparseable);
}

TEST_CASE("inspect: invalid UTF-8 is unparseable") {
    CHECK(chat("{\"model\":\"m\",\"x\":\"\xC3\x28\"}").kind == DataKind::unparseable);
}

TEST_CASE("inspect: valid JSON numbers beyond 64 bits still parse") {
    CHECK(chat(R"({"model":"m","seed":123456789012345678901234567890,"t":1e400})").kind == DataKind::json);
}

TEST_CASE("inspect: surrounding whitespace is valid JSON") {
    CHECK(chat(R"(  {"model":"m"}  )").kind == DataKind::json);
}

TEST_CASE("inspect: scalars and arrays are JSON but not objects") {
    Inspector inspector;
    for (std::string_view line : {"1", "\"s\"", "true", "null", "[1,{\"a\":[]}]"}) {
        INFO(line);
        const auto& info = inspector.inspect(line, Endpoint::chat_completions);
        CHECK(info.kind == DataKind::json);
        CHECK_FALSE(info.object);
    }
    CHECK(inspector.inspect("1 2", Endpoint::chat_completions).kind == DataKind::unparseable);
    CHECK(inspector.inspect("nul", Endpoint::chat_completions).kind == DataKind::unparseable);
}

TEST_CASE("inspect: nesting too deep is unparseable") {
    const std::string deep = R"({"model":"m","x":)" + std::string(600, '[') + std::string(600, ']') + "}";
    CHECK(chat(deep).kind == DataKind::unparseable);
}

// ---- answer text (section 1) -------------------------------------------------

TEST_CASE("inspect: a role-only delta is not answer text") { CHECK_FALSE(chat_answer(R"({"role":"assistant"})")); }

TEST_CASE("inspect: empty content is not answer text") {
    CHECK_FALSE(chat_answer(R"({"role":"assistant","content":""})"));
}

TEST_CASE("inspect: null content is not answer text") { CHECK_FALSE(chat_answer(R"({"content":null})")); }

TEST_CASE("inspect: an empty delta is not answer text") { CHECK_FALSE(chat_answer("{}")); }

TEST_CASE("inspect: content is answer text") { CHECK(chat_answer(R"({"content":"Hi"})")); }

TEST_CASE("inspect: tool_calls are answer text") {
    CHECK(chat_answer(R"({"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]})"));
}

TEST_CASE("inspect: an empty tool_calls array is not answer text") { CHECK_FALSE(chat_answer(R"({"tool_calls":[]})")); }

TEST_CASE("inspect: reasoning_content is answer text") { CHECK(chat_answer(R"({"reasoning_content":"think"})")); }

TEST_CASE("inspect: refusal is answer text") { CHECK(chat_answer(R"({"refusal":"no"})")); }

TEST_CASE("inspect: an audio object is answer text, an empty one is not") {
    CHECK(chat_answer(R"({"audio":{"id":"a"}})"));
    CHECK_FALSE(chat_answer(R"({"audio":{}})"));
}

TEST_CASE("inspect: a number or boolean in a delta is answer text") {
    CHECK(chat_answer(R"({"x":0})"));
    CHECK(chat_answer(R"({"x":false})"));
}

TEST_CASE("inspect: answer text in the second choice counts") {
    CHECK(chat(R"({"choices":[{"delta":{"role":"assistant"}},{"delta":{"content":"b"}}]})").answer_text);
}

TEST_CASE("inspect: a completions choice with non-empty text is answer text") {
    Inspector inspector;
    CHECK(inspector.inspect(R"({"model":"m","choices":[{"text":"Hi","index":0}]})", Endpoint::completions).answer_text);
    CHECK_FALSE(inspector.inspect(R"({"model":"m","choices":[{"text":"","index":0}]})", Endpoint::completions).answer_text);
}

TEST_CASE("inspect: a chat delta does not count on completions") {
    Inspector inspector;
    CHECK_FALSE(inspector.inspect(R"({"choices":[{"delta":{"content":"a"}}]})", Endpoint::completions).answer_text);
}

TEST_CASE("inspect: a Responses text delta is answer text") {
    Inspector inspector;
    CHECK(inspector.inspect(R"({"type":"response.output_text.delta","delta":"Hi"})", Endpoint::responses).answer_text);
    CHECK(inspector.inspect(R"({"delta":"x","type":"response.function_call_arguments.delta"})", Endpoint::responses)
              .answer_text);
}

TEST_CASE("inspect: a Responses delta that is empty or of another type is not answer text") {
    Inspector inspector;
    CHECK_FALSE(inspector.inspect(R"({"type":"response.output_text.delta","delta":""})", Endpoint::responses).answer_text);
    CHECK_FALSE(inspector.inspect(R"({"type":"response.output_text.done","text":"Hi"})", Endpoint::responses).answer_text);
    CHECK_FALSE(inspector.inspect(R"({"type":"other.delta","delta":"Hi"})", Endpoint::responses).answer_text);
}

TEST_CASE("inspect: a Messages content_block_delta is answer text") {
    Inspector inspector;
    CHECK(inspector.inspect(R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})",
                            Endpoint::messages)
              .answer_text);
    CHECK_FALSE(inspector.inspect(R"({"type":"content_block_start","index":0})", Endpoint::messages).answer_text);
}

TEST_CASE("inspect: on other endpoints every JSON data line is answer text") {
    Inspector inspector;
    CHECK(inspector.inspect(R"({"status":"queued"})", Endpoint::other).answer_text);
    CHECK(inspector.inspect("[1]", Endpoint::other).answer_text);
    CHECK_FALSE(inspector.inspect("[DONE]", Endpoint::other).answer_text);
    CHECK_FALSE(inspector.inspect("oops", Endpoint::other).answer_text);
}

// ---- finish reasons and end markers -----------------------------------------

TEST_CASE("inspect: a null finish_reason is none") {
    Inspector inspector;
    CHECK_FALSE(inspector.inspect(R"({"choices":[{"delta":{},"finish_reason":null}]})", Endpoint::chat_completions)
                    .finish_reason);
}

TEST_CASE("inspect: finish_reason stop is reported, and is not the end marker") {
    Inspector inspector;
    const auto& info = inspector.inspect(R"({"choices":[{"delta":{},"finish_reason":"stop"}]})", Endpoint::chat_completions);
    REQUIRE(info.finish_reason);
    CHECK(*info.finish_reason == "stop");
    CHECK_FALSE(info.end_marker);
}

TEST_CASE("inspect: finish_reason in any choice") {
    Inspector inspector;
    const auto& info = inspector.inspect(
        R"({"choices":[{"text":"a","finish_reason":null},{"text":"","finish_reason":"length"}]})", Endpoint::completions);
    REQUIRE(info.finish_reason);
    CHECK(*info.finish_reason == "length");
}

TEST_CASE("inspect: Responses end markers") {
    Inspector inspector;
    CHECK(inspector.inspect(R"({"type":"response.completed","response":{}})", Endpoint::responses).end_marker);
    CHECK(inspector.inspect(R"({"type":"response.incomplete","response":{}})", Endpoint::responses).end_marker);
    CHECK_FALSE(inspector.inspect(R"({"type":"response.in_progress","response":{}})", Endpoint::responses).end_marker);
    CHECK_FALSE(inspector.inspect("[DONE]", Endpoint::responses).end_marker);
}

TEST_CASE("inspect: Messages end marker") {
    Inspector inspector;
    CHECK(inspector.inspect(R"({"type":"message_stop"})", Endpoint::messages).end_marker);
    CHECK_FALSE(inspector.inspect(R"({"type":"message_delta","delta":{}})", Endpoint::messages).end_marker);
}

TEST_CASE("inspect: message_stop means nothing on chat") {
    CHECK_FALSE(chat(R"({"type":"message_stop"})").end_marker);
}

// ---- identity ----------------------------------------------------------------

TEST_CASE("inspect: chat model is the identity") {
    CHECK(chat(R"({"model":"gpt-4o-mini","choices":[]})").models == std::vector<std::string>{"gpt-4o-mini"});
}

TEST_CASE("inspect: an empty model string names no model") { CHECK(chat(R"({"model":""})").models.empty()); }

TEST_CASE("inspect: a non-string model names no model") {
    CHECK(chat(R"({"model":null})").models.empty());
    CHECK(chat(R"({"model":7})").models.empty());
}

TEST_CASE("inspect: an escaped model name is unescaped") {
    CHECK(chat(R"({"model":"gpt\u002d4o"})").models == std::vector<std::string>{"gpt-4o"});
}

TEST_CASE("inspect: Responses identity is response.model and model") {
    Inspector inspector;
    const Seen s = seen(inspector.inspect(R"({"type":"response.created","response":{"id":"r","model":"gpt-4o"}})",
                                          Endpoint::responses));
    CHECK(s.models == std::vector<std::string>{"gpt-4o"});
    const Seen both = seen(inspector.inspect(R"({"model":"a","response":{"model":"b"}})", Endpoint::responses));
    CHECK(both.models == std::vector<std::string>({"a", "b"}));
}

TEST_CASE("inspect: Messages identity is message.model") {
    Inspector inspector;
    const Seen s = seen(inspector.inspect(R"({"type":"message_start","message":{"id":"m","model":"claude-3-5-haiku"}})",
                                          Endpoint::messages));
    CHECK(s.models == std::vector<std::string>{"claude-3-5-haiku"});
}

TEST_CASE("inspect: a nested model elsewhere is not an identity field") {
    CHECK(chat(R"({"choices":[{"delta":{"model":"x"}}],"meta":{"model":"y"}})").models.empty());
    Inspector inspector;
    CHECK(inspector.inspect(R"({"message":{"model":"x"}})", Endpoint::responses).models().empty());
}

// ---- structured error events (section 7) ------------------------------------

TEST_CASE("inspect: an object with only error is a structured error") {
    Inspector inspector;
    const auto& info = inspector.inspect(R"({"error":{"type":"service_unavailable","code":503,"message":"x"}})",
                                         Endpoint::chat_completions);
    REQUIRE(info.structured_error);
    CHECK(info.error.code_int == 503);
    CHECK(info.error.type == "service_unavailable");
    CHECK(info.error.code.empty());
    CHECK_FALSE(info.answer_text);
}

TEST_CASE("inspect: error with type error is a structured error") {
    Inspector inspector;
    const auto& info = inspector.inspect(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
                                         Endpoint::messages);
    REQUIRE(info.structured_error);
    CHECK(info.error.type == "overloaded_error");
    CHECK_FALSE(info.error.code_int);
}

TEST_CASE("inspect: error beside another member is no structured error") {
    CHECK_FALSE(chat(R"({"error":{"code":503},"id":"x"})").structured_error);
}

TEST_CASE("inspect: error beside a type other than error is no structured error") {
    CHECK_FALSE(chat(R"({"error":{"code":503},"type":"fault"})").structured_error);
}

TEST_CASE("inspect: type error without error is no structured error") {
    CHECK_FALSE(chat(R"({"type":"error"})").structured_error);
}

TEST_CASE("inspect: a string error code is the code, not a status") {
    Inspector inspector;
    const auto& info = inspector.inspect(R"({"error":{"code":"content_filter","type":"invalid_request_error"}})",
                                         Endpoint::chat_completions);
    REQUIRE(info.structured_error);
    CHECK_FALSE(info.error.code_int);
    CHECK(info.error.code == "content_filter");
}

TEST_CASE("inspect: a fractional error code is no integer code") {
    Inspector inspector;
    const auto& info = inspector.inspect(R"({"error":{"code":503.5}})", Endpoint::chat_completions);
    REQUIRE(info.structured_error);
    CHECK_FALSE(info.error.code_int);
}

TEST_CASE("inspect: an error that is not an object is a structured error with nothing declared") {
    Inspector inspector;
    const auto& info = inspector.inspect(R"({"error":"boom"})", Endpoint::chat_completions);
    CHECK(info.structured_error);
    CHECK(info.error.type.empty());
}

TEST_CASE("inspect: Responses type error event reads its top-level code") {
    Inspector inspector;
    const auto& info = inspector.inspect(
        R"({"type":"error","code":"server_error","message":"m","param":null,"sequence_number":3})", Endpoint::responses);
    REQUIRE(info.structured_error);
    CHECK(info.error.code == "server_error");
}

TEST_CASE("inspect: Responses type error event with an error object reads the object") {
    Inspector inspector;
    const auto& info = inspector.inspect(R"({"type":"error","sequence_number":3,"error":{"type":"server_error","code":502}})",
                                         Endpoint::responses);
    REQUIRE(info.structured_error);
    CHECK(info.error.type == "server_error");
    CHECK(info.error.code_int == 502);
}

TEST_CASE("inspect: Responses response.failed reads response.error") {
    Inspector inspector;
    const auto& info = inspector.inspect(
        R"({"type":"response.failed","sequence_number":9,"response":{"id":"r","model":"gpt-4o","status":"failed","error":{"code":"rate_limit_exceeded","message":"m"}}})",
        Endpoint::responses);
    REQUIRE(info.structured_error);
    CHECK(info.error.code == "rate_limit_exceeded");
    CHECK(seen(info).models == std::vector<std::string>{"gpt-4o"});  // still named, for section 8
}

TEST_CASE("inspect: type error with extra members counts only on responses") {
    CHECK_FALSE(chat(R"({"type":"error","code":"x","sequence_number":1})").structured_error);
}

TEST_CASE("inspect: Messages event error with a request_id is a structured error") {
    Inspector inspector;
    const std::string_view line = R"({"type":"error","error":{"type":"api_error","message":"m"},"request_id":"req_1"})";
    CHECK(inspector.inspect(line, Endpoint::messages, "error").structured_error);
    CHECK_FALSE(inspector.inspect(line, Endpoint::messages, "").structured_error);
}

TEST_CASE("inspect: Azure inner code") {
    Inspector inspector;
    const auto& info = inspector.inspect(
        R"({"error":{"code":"content_filter","innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{}}}})",
        Endpoint::chat_completions);
    REQUIRE(info.structured_error);
    CHECK(info.error.inner_code == "ResponsibleAIPolicyViolation");
}

TEST_CASE("inspect: a malformed structured error is unparseable, not an error") {
    const Seen s = chat(R"({"error":{"code":503,}})");
    CHECK(s.kind == DataKind::unparseable);
    CHECK_FALSE(s.structured_error);
}

TEST_CASE("inspect: the previous line's error does not leak") {
    Inspector inspector;
    REQUIRE(inspector.inspect(R"({"error":{"code":503,"type":"t"}})", Endpoint::chat_completions).structured_error);
    const auto& info = inspector.inspect(R"({"model":"m","choices":[]})", Endpoint::chat_completions);
    CHECK_FALSE(info.structured_error);
    CHECK_FALSE(info.error.code_int);
    CHECK(info.error.type.empty());
}

// ---- usage -------------------------------------------------------------------

TEST_CASE("inspect: chat usage chunk with empty choices") {
    Inspector inspector;
    const auto& info = inspector.inspect(
        R"({"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}}})",
        Endpoint::chat_completions);
    CHECK(info.usage.input_tokens == 9u);
    CHECK(info.usage.output_tokens == 2u);
    CHECK(info.usage.total_tokens == 11u);
    CHECK_FALSE(info.answer_text);
}

TEST_CASE("inspect: usage null is no usage") {
    CHECK_FALSE(Inspector().inspect(R"({"choices":[],"usage":null})", Endpoint::chat_completions).usage.present());
}

TEST_CASE("inspect: Responses usage under response") {
    Inspector inspector;
    const auto& info = inspector.inspect(
        R"({"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}})",
        Endpoint::responses);
    CHECK(info.usage.input_tokens == 3u);
    CHECK(info.usage.output_tokens == 1u);
    CHECK(info.usage.total_tokens == 4u);
}

TEST_CASE("inspect: Messages usage in message_start and message_delta") {
    Inspector inspector;
    CHECK(inspector.inspect(R"({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}})",
                            Endpoint::messages)
              .usage.input_tokens == 5u);
    CHECK(inspector.inspect(R"({"type":"message_delta","delta":{},"usage":{"output_tokens":7}})", Endpoint::messages)
              .usage.output_tokens == 7u);
}

// ---- padding and reader integration -------------------------------------------

TEST_CASE("inspect: a line with room after it is parsed in place, same answer") {
    Inspector inspector;
    const std::string line = R"({"model":"m","choices":[{"delta":{"content":"x"}}]})";
    const std::string room = line + std::string(64, '\n');
    const auto& info = inspector.inspect(std::string_view(room).substr(0, line.size()), Endpoint::chat_completions, {},
                                         room.data() + room.size());
    CHECK(info.answer_text);
    CHECK(info.models().size() == 1);
}

TEST_CASE("inspect: data lines of a reader event") {
    modelproxy::sse::Reader reader;
    reader.feed("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"},\"request_id\":\"r\"}\n\n");
    const auto* event = reader.next();
    REQUIRE(event);
    Inspector inspector;
    const auto& info = inspector.inspect(*event, 0, Endpoint::messages);
    CHECK(info.structured_error);
    CHECK(info.error.type == "overloaded_error");
}

TEST_CASE("inspect: a 4 MiB data line") {
    const std::string line = R"({"model":"m","choices":[{"delta":{"content":")" + std::string(4 * 1024 * 1024, 'a') + "\"}}]}";
    Inspector inspector;
    CHECK(inspector.inspect(line, Endpoint::chat_completions).answer_text);
    CHECK(inspector.inspect(R"({"model":"m"})", Endpoint::chat_completions).kind == DataKind::json);
}

TEST_CASE("inspect: a chat stream read and inspected event by event") {
    const std::string stream =
        "data: {\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\r\n\r\n"
        ": keep-alive\r\n\r\n"
        "data: {\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\r\n\r\n"
        "data: {\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n"
        "data: {\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"total_tokens\":5}}\r\n\r\n"
        "data: [DONE]\r\n\r\n";
    // One line per data event: answer text, finish reason, end marker, usage total.
    std::vector<std::string> trace;
    modelproxy::sse::Reader reader;
    Inspector inspector;
    for (std::size_t at = 0; at < stream.size(); at += 7) {
        reader.feed(std::string_view(stream).substr(at, 7));
        while (const auto* event = reader.next()) {
            for (std::size_t i = 0; i < event->data.size(); ++i) {
                const DataInfo& info = inspector.inspect(*event, i, Endpoint::chat_completions);
                trace.push_back(std::string(info.kind == DataKind::done ? "done" : "json") +
                                (info.answer_text ? " text" : "") +
                                (info.finish_reason ? " finish=" + std::string(*info.finish_reason) : "") +
                                (info.end_marker ? " end" : "") +
                                (info.usage.total_tokens ? " total=" + std::to_string(*info.usage.total_tokens) : "") +
                                (info.models().empty() ? "" : " model=" + std::string(info.models()[0])));
            }
        }
    }
    reader.finish();
    CHECK(reader.next() == nullptr);
    CHECK(trace == std::vector<std::string>{
                       "json model=gpt-4o-mini",
                       "json text model=gpt-4o-mini",
                       "json finish=stop model=gpt-4o-mini",
                       "json total=5 model=gpt-4o-mini",
                       "done end",
                   });
}

TEST_CASE("a Responses API response.failed names its kind in code, read as error.type", "[inspect]") {
    modelproxy::sse::Inspector inspector;
    const auto& info = inspector.inspect(
        R"({"type":"response.failed","response":{"id":"r","error":{"code":"server_error","message":"x"}}})",
        modelproxy::policy::Endpoint::responses);
    CHECK(info.structured_error);
    CHECK(info.error.code == "server_error");
    CHECK(info.error.type == "server_error");
}

// Regressions found by tests/fuzz/inspect_fuzz: simdjson 3.0.1's root scalar
// getters do not refuse trailing content, so a malformed line passed as JSON.
TEST_CASE("a root scalar followed by anything else is not JSON", "[inspect]") {
    modelproxy::sse::Inspector inspector;
    for (std::string_view line : {R"("just a string"#)", R"("a" x)", R"("a"])", R"("a""b")", "falsey", "nullr", "truex"}) {
        CAPTURE(line);
        CHECK(inspector.inspect(line, modelproxy::policy::Endpoint::chat_completions).kind ==
              modelproxy::sse::DataKind::unparseable);
    }
}

TEST_CASE("a root scalar with trailing white space is JSON", "[inspect]") {
    modelproxy::sse::Inspector inspector;
    for (std::string_view line : {"false  ", "true   ", "null ", R"("a" )", "12 "}) {
        CAPTURE(line);
        CHECK(inspector.inspect(line, modelproxy::policy::Endpoint::chat_completions).kind ==
              modelproxy::sse::DataKind::json);
    }
}

// Found by inspect_fuzz: On-Demand reads the byte after an invalid line, and
// a copied line's padding once held what a longer line before it left there
// (here `}`), which made the walk fault earlier and keep no answer text for
// the credential scan. The padding is now a line's end, as in place.
TEST_CASE("inspect: an invalid line keeps the same answer text whatever longer line came before it",
          "[inspect]") {
    for (const std::string line : {R"({"choices":[{"delta":{"content":" quick"},"f":12}}}"a":null})",
                                   R"({"choices":[{"delta":{"content":" quick"}}}}"a":null})"}) {
        Inspector fresh;
        const DataInfo& alone = fresh.inspect(line, Endpoint::chat_completions);
        REQUIRE(alone.kind == DataKind::unparseable);
        REQUIRE(alone.answer_fragments.size() == 1);
        CHECK(alone.answer_fragments[0].text == " quick");

        Inspector after;
        after.inspect(line + std::string(20, '}'), Endpoint::chat_completions);
        const DataInfo& info = after.inspect(line, Endpoint::chat_completions);
        CHECK(info.kind == DataKind::unparseable);
        REQUIRE(info.answer_fragments.size() == 1);
        CHECK(info.answer_fragments[0].text == " quick");
    }
}

// The same, in place: after an unterminated last line the bytes that follow
// it in the read buffer are stale, and the walk must not read them.
TEST_CASE("inspect: an invalid line read in place keeps the same answer text whatever bytes follow it",
          "[inspect]") {
    const std::string line = R"({"choices":[{"delta":{"content":" quick"},"f":12}}}"a":null})";
    for (const std::string after : {std::string(64, '\n'), std::string(64, '}'), "\n" + std::string(63, '"')}) {
        CAPTURE(after);
        const std::string buffer = line + after;
        Inspector inspector;
        const DataInfo& info = inspector.inspect(std::string_view(buffer).substr(0, line.size()),
                                                 Endpoint::chat_completions, {}, buffer.data() + buffer.size());
        CHECK(info.kind == DataKind::unparseable);
        REQUIRE(info.answer_fragments.size() == 1);
        CHECK(info.answer_fragments[0].text == " quick");
    }
}
