// The official SDKs through the real binary (docs/behaviour.md sections 6, 7, 9 and 12):
// the `openai` and `@anthropic-ai/sdk` npm packages, pinned in
// tests/sdk/package-lock.json and installed into the build directory by
// tests/sdk/install (deploy/test runs it), each make one call as a user's
// code does (tests/sdk/check.cjs). What they must see: the answer, plain and
// streamed; a stream cut after answer text as an error carrying the proxy's
// message, after the text that came; a turn the proxy gave up on as an error
// with the proxy's message, the SDK's own retries held off by
// `x-should-retry: false` (the upstream sees exactly the proxy's attempts).
#include "support/fake_provider.hpp"

#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

const std::filesystem::path sdk_modules = std::filesystem::path(MODELPROXY_BUILD_DIR) / "sdk" / "node_modules";

// Two attempts, waits of 1 ms: a failing turn ends at once with bound
// max_attempts.
// `extra`: more keys for both routes (indented by four).
std::string routes(const FakeProvider& fake, std::string_view extra = "") {
    const std::string upstream = fake.base_url("/v1");
    const std::string retry = "    retry: {max_attempts: 2, base_delay_ms: 1, max_delay_ms: 1}\n" + std::string(extra);
    return "routes:\n"
           "  - name: openai\n    upstream: " + upstream + "\n    models: [gpt-4o-mini]\n" + retry +
           "  - name: anthropic\n    upstream: " + upstream +
           "\n    dialect: anthropic\n    models: [claude-sonnet-4-5]\n" + retry;
}

struct SdkResult {
    std::string text;
    std::string id;             // the resume scenarios: the final message's id
    boost::json::array tools;   // ... and its tool calls: {id, name, arguments}
    boost::json::object error;  // empty when the call succeeded
    bool failed() const { return !error.empty(); }
    std::string error_string(std::string_view key) const {
        const auto* v = error.if_contains(key);
        return v && v->is_string() ? std::string(v->as_string()) : std::string();
    }
};

// Runs one scenario of check.cjs against the proxy; REQUIREs that it ran.
SdkResult run_sdk(const std::string& scenario, const ProxyProcess& proxy) {
    INFO("the SDKs are installed by tests/sdk/install (deploy/test runs it) into " << sdk_modules.string());
    REQUIRE(std::filesystem::is_directory(sdk_modules / "openai"));
    REQUIRE(std::filesystem::is_directory(sdk_modules / "@anthropic-ai" / "sdk"));
    const char* path = std::getenv("PATH");
    const CommandResult r = run_command(
        {"node", std::string(MODELPROXY_SOURCE_DIR) + "/tests/sdk/check.cjs", scenario,
         "http://127.0.0.1:" + std::to_string(proxy.port())},
        {{"NODE_PATH", sdk_modules.string()}, {"PATH", path ? path : "/usr/bin:/bin"}}, std::nullopt, 60s);
    CAPTURE(scenario, r.out, r.err);
    REQUIRE(r.exit_code == 0);
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(r.out, ec);
    REQUIRE_FALSE(ec);
    SdkResult result;
    result.text = std::string(doc.at("text").as_string());
    if (doc.at("error").is_object()) result.error = doc.at("error").as_object();
    if (const auto* id = doc.as_object().if_contains("id"); id && id->is_string()) result.id = std::string(id->as_string());
    if (const auto* tools = doc.as_object().if_contains("tools"); tools && tools->is_array()) result.tools = tools->as_array();
    return result;
}

std::string chat_chunk(std::string_view delta, std::string_view finish = "null", std::string_view id = "chatcmpl-1") {
    return R"(data: {"id":")" + std::string(id) +
           R"(","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":)" +
           std::string(delta) + R"(,"finish_reason":)" + std::string(finish) + "}]}\n\n";
}

std::string anthropic_event(std::string_view type, std::string_view data) {
    return "event: " + std::string(type) + "\ndata: " + std::string(data) + "\n\n";
}
const std::string message_start = anthropic_event(
    "message_start",
    R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}})");
const std::string block_start = anthropic_event(
    "content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
std::string text_delta(std::string_view text) {
    return anthropic_event("content_block_delta",
                           R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":")" +
                               std::string(text) + R"("}})");
}

// The closing error event of a stream whose connection broke after answer
// text (docs/behaviour.md section 7): what the proxy says, the SDK must show.
constexpr std::string_view cut_message = "the upstream stream broke before its end";
constexpr std::string_view dropped_message = "the upstream dropped the connection before its answer was complete";

}  // namespace

TEST_CASE("sdk: the openai client gets a chat answer through the proxy", "[sdk]") {
    FakeProvider fake;
    fake.push(Script::json(
        200, R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}]})"));
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("openai-chat", *proxy);
    CHECK_FALSE(r.failed());
    CHECK(r.text == "Hello there");
}

TEST_CASE("sdk: the openai client streams a chat answer through the proxy", "[sdk]") {
    FakeProvider fake;
    fake.push(Script::sse({chat_chunk(R"({"role":"assistant","content":""})"), chat_chunk(R"({"content":"Hello"})"),
                           chat_chunk(R"({"content":" there"})"), chat_chunk("{}", "\"stop\""), "data: [DONE]\n\n"}));
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("openai-stream", *proxy);
    CHECK_FALSE(r.failed());
    CHECK(r.text == "Hello there");
}

TEST_CASE("sdk: a chat stream cut after answer text is an error with the proxy's message in the openai client",
          "[sdk]") {
    FakeProvider fake;
    SseOptions cut;
    cut.end = SseEnd::close;
    fake.push(Script::sse({chat_chunk(R"({"role":"assistant","content":""})"), chat_chunk(R"({"content":"Hello"})")}, cut));
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("openai-cut", *proxy);
    CHECK(r.text == "Hello");
    REQUIRE(r.failed());
    CHECK(r.error_string("name") == "APIError");
    CHECK_THAT(r.error_string("message"), Contains(std::string(cut_message)));
    CHECK(fake.request_count() == 1);
}

TEST_CASE("sdk: a turn the proxy gave up on is one error in the openai client, which does not retry it", "[sdk]") {
    FakeProvider fake;
    fake.set_default(Script::refuse_head_then_close());
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("openai-error", *proxy);
    REQUIRE(r.failed());
    CHECK(r.error.at("status") == 502);
    CHECK_THAT(r.error_string("message"), Contains(std::string(dropped_message)));
    // The proxy's two attempts, and no SDK retry of the turn (its default
    // is two): x-should-retry: false.
    CHECK(fake.request_count() == 2);
}

TEST_CASE("sdk: the anthropic client gets a message through the proxy", "[sdk]") {
    FakeProvider fake;
    fake.push(Script::json(
        200, R"({"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hello there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}})"));
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("anthropic-message", *proxy);
    CHECK_FALSE(r.failed());
    CHECK(r.text == "Hello there");
}

TEST_CASE("sdk: the anthropic client streams a message through the proxy", "[sdk]") {
    FakeProvider fake;
    fake.push(Script::sse(
        {message_start, block_start, text_delta("Hello"), text_delta(" there"),
         anthropic_event("content_block_stop", R"({"type":"content_block_stop","index":0})"),
         anthropic_event("message_delta",
                         R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}})"),
         anthropic_event("message_stop", R"({"type":"message_stop"})")}));
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("anthropic-stream", *proxy);
    CHECK_FALSE(r.failed());
    CHECK(r.text == "Hello there");
}

TEST_CASE("sdk: a message stream cut after answer text is an error with the proxy's message in the anthropic client",
          "[sdk]") {
    FakeProvider fake;
    SseOptions cut;
    cut.end = SseEnd::close;
    fake.push(Script::sse({message_start, block_start, text_delta("Hello")}, cut));
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("anthropic-cut", *proxy);
    CHECK(r.text == "Hello");
    REQUIRE(r.failed());
    CHECK(r.error_string("name") == "APIError");
    CHECK(r.error_string("apiMessage") == cut_message);
    CHECK(r.error_string("type") == "api_error");
    CHECK(fake.request_count() == 1);
}

TEST_CASE("sdk: a turn the proxy gave up on is one error in the anthropic client, in Anthropic's shape, not retried",
          "[sdk]") {
    FakeProvider fake;
    fake.set_default(Script::refuse_head_then_close());
    auto proxy = start_proxy(routes(fake));
    const SdkResult r = run_sdk("anthropic-error", *proxy);
    REQUIRE(r.failed());
    CHECK(r.error.at("status") == 502);
    CHECK(r.error_string("apiMessage") == dropped_message);
    CHECK(r.error_string("type") == "api_error");
    CHECK(fake.request_count() == 2);
}

// docs/behaviour.md section 16 through the SDKs' own accumulators: a stream
// cut inside a tool call's arguments, continued from a replay split
// differently under other ids, builds the uncut message once.
TEST_CASE("sdk: a chat stream cut inside a tool call and resumed builds the whole message in the openai client",
          "[sdk][resume]") {
    FakeProvider fake;
    const auto call = [](std::string_view id_tag, std::string_view args_first, bool with_head) {
        std::string head = with_head ? std::string(R"("id":"call_)") + std::string(id_tag) +
                                           R"(","type":"function","function":{"name":"get_weather","arguments":")"
                                     : std::string(R"("function":{"arguments":")");
        return R"({"tool_calls":[{"index":0,)" + head + std::string(args_first) + R"("}}]})";
    };
    const std::string a = "chatcmpl-A", b = "chatcmpl-B";
    SseOptions cut;
    cut.end = SseEnd::reset;
    fake.push(Script::sse({chat_chunk(R"({"role":"assistant","content":""})", "null", a),
                           chat_chunk(R"({"content":"Let me check."})", "null", a),
                           chat_chunk(call("A", R"({\"ci)", true), "null", a)},
                          cut));
    fake.push(Script::sse({chat_chunk(R"({"role":"assistant","content":""})", "null", b),
                           chat_chunk(R"({"content":"Let me "})", "null", b),
                           chat_chunk(R"({"content":"check."})", "null", b),
                           chat_chunk(call("B", R"({\"city\":)", true), "null", b),
                           chat_chunk(call("B", R"(\"Paris\"})", false), "null", b),
                           chat_chunk("{}", "\"tool_calls\"", b), "data: [DONE]\n\n"}));
    auto proxy = start_proxy(routes(fake, "    resume: {enabled: true}\n"));
    const SdkResult r = run_sdk("openai-resume", *proxy);
    CHECK_FALSE(r.failed());
    CHECK(r.text == "Let me check.");
    CHECK(r.id == a);
    REQUIRE(r.tools.size() == 1);
    CHECK(r.tools[0].at("id") == "call_A");
    CHECK(r.tools[0].at("name") == "get_weather");
    CHECK(r.tools[0].at("arguments") == R"({"city":"Paris"})");
    CHECK(fake.request_count() == 2);
}

TEST_CASE("sdk: a message stream cut inside a tool_use block and resumed builds the whole message in the anthropic "
          "client",
          "[sdk][resume]") {
    FakeProvider fake;
    const auto start = [](std::string_view id) {
        return anthropic_event(
            "message_start",
            R"({"type":"message_start","message":{"id":")" + std::string(id) +
                R"(","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}})");
    };
    const auto tool_start = [](std::string_view id) {
        return anthropic_event("content_block_start",
                               R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":")" +
                                   std::string(id) + R"(","name":"get_weather","input":{}}})");
    };
    const auto json_delta = [](std::string_view part) {
        return anthropic_event("content_block_delta",
                               R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":")" +
                                   std::string(part) + R"("}})");
    };
    const std::string text_stop = anthropic_event("content_block_stop", R"({"type":"content_block_stop","index":0})");
    const std::string tool_stop = anthropic_event("content_block_stop", R"({"type":"content_block_stop","index":1})");
    const std::string end = anthropic_event(
        "message_delta",
        R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}})");
    SseOptions cut;
    cut.end = SseEnd::close;
    fake.push(Script::sse({start("msg_A"), block_start, text_delta("Let me check."), text_stop, tool_start("toolu_A"),
                           json_delta(R"({\"ci)")},
                          cut));
    fake.push(Script::sse({start("msg_B"), block_start, text_delta("Let me "), text_delta("check."), text_stop,
                           tool_start("toolu_B"), json_delta(R"({\"city\":)"), json_delta(R"( \"Paris\"})"), tool_stop,
                           end, anthropic_event("message_stop", R"({"type":"message_stop"})")}));
    auto proxy = start_proxy(routes(fake, "    resume: {enabled: true}\n"));
    const SdkResult r = run_sdk("anthropic-resume", *proxy);
    CHECK_FALSE(r.failed());
    CHECK(r.text == "Let me check.");
    CHECK(r.id == "msg_A");
    REQUIRE(r.tools.size() == 1);
    CHECK(r.tools[0].at("id") == "toolu_A");
    CHECK(r.tools[0].at("name") == "get_weather");
    CHECK(r.tools[0].at("arguments") == R"({"city":"Paris"})");
    CHECK(fake.request_count() == 2);
}
