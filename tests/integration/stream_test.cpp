// SSE streams through the real binary (docs/behaviour.md sections 5, 7, 8 and 9): hold-back
// and replay before answer text, end markers per endpoint, structured error
// events, line endings, idle timeouts, the closing error event after
// publication, a client that leaves mid-stream, and streams the boundary
// refuses. The fake chooses every chunk boundary; routes use tiny delays.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <thread>
#include <tuple>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

// An OpenAI route for gpt-4o-mini and an Anthropic route for claude-3-5-haiku,
// both to `fake`, with tiny waits; `extra` holds more keys for both routes,
// each line indented by four spaces.
std::string routes(const FakeProvider& fake, std::string_view retry = "{}", std::string_view extra = "") {
    std::string yaml = "retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\nroutes:\n";
    for (const auto& [name, dialect, model] : {std::tuple{"openai", "openai", "gpt-4o-mini"},
                                               std::tuple{"anthropic", "anthropic", "claude-3-5-haiku"}}) {
        yaml += std::string("  - name: ") + name + "\n    upstream: " + fake.base_url("/v1") + "\n    dialect: " +
                dialect + "\n    models: [" + model + "]\n    retry: " + std::string(retry) + "\n";
        yaml += extra;
    }
    return yaml;
}

const std::string chat_request =
    R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})";
const std::string responses_request = R"({"model":"gpt-4o-mini","stream":true,"input":"hi"})";
const std::string messages_request =
    R"({"model":"claude-3-5-haiku","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";

// Chat completion chunks; `id` tells one attempt's bytes from another's.
std::string role_event(std::string_view id = "c1", std::string_view eol = "\n") {
    return "data: {\"id\":\"" + std::string(id) +
           R"(","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})" +
           std::string(eol) + std::string(eol);
}
std::string text_event(std::string_view text = "Hello", std::string_view id = "c1", std::string_view eol = "\n") {
    return "data: {\"id\":\"" + std::string(id) +
           R"(","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":")" +
           std::string(text) + R"("},"finish_reason":null}]})" + std::string(eol) + std::string(eol);
}
std::string finish_event(std::string_view id = "c1") {
    return "data: {\"id\":\"" + std::string(id) +
           R"(","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
           "\n\n";
}
const std::string done_event = "data: [DONE]\n\n";

// A whole good chat stream, one chunk per event.
std::vector<std::string> good_chat(std::string_view id = "good") {
    return {role_event(id), text_event("Hello", id), finish_event(id), done_event};
}

std::string joined(const std::vector<std::string>& pieces) {
    std::string all;
    for (const auto& piece : pieces) all += piece;
    return all;
}

// Anthropic Messages events.
std::string anthropic_event(std::string_view name, std::string_view data) {
    return "event: " + std::string(name) + "\ndata: " + std::string(data) + "\n\n";
}
const std::string message_start = anthropic_event(
    "message_start",
    R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-3-5-haiku","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}})");
const std::string block_start = anthropic_event(
    "content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
const std::string block_delta = anthropic_event(
    "content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}})");
const std::string block_stop = anthropic_event("content_block_stop", R"({"type":"content_block_stop","index":0})");
const std::string message_delta = anthropic_event(
    "message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}})");
const std::string message_stop = anthropic_event("message_stop", R"({"type":"message_stop"})");

// A stream turn that succeeded: 200 event stream, exactly `body`, `attempts`
// attempts, a turn record with outcome ok.
void check_stream_success(const ProxyProcess& proxy, const Response& r, const std::string& body,
                          std::size_t attempts) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("content-type") == "text/event-stream");
    CHECK(r.body == body);
    CHECK(r.header("x-modelproxy-attempts") == std::to_string(attempts));
    const auto turn = turn_record(proxy);
    REQUIRE(turn);
    CAPTURE(turn->line());
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->integer("attempts") == static_cast<std::int64_t>(attempts));
    CHECK(turn->boolean("stream") == true);
}

// A stream refused before publication: 502 envelope with `code`, one attempt.
void check_refused(const ProxyProcess& proxy, const FakeProvider& fake, const Response& r, std::string_view code) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("code") == boost::json::value(code));
    CHECK(error.at("attempts") == 1);
    CHECK(r.header("x-should-retry") == "false");
    REQUIRE(turn_record(proxy));
    CHECK(fake.request_count() == 1);  // refusals are not retried
}

// An error-only first attempt is replayed; the client sees only the good stream.
void check_error_event_replayed(const std::string& path, const std::string& request,
                                const std::vector<std::string>& bad, const std::vector<std::string>& good) {
    FakeProvider fake;
    fake.push(Script::sse(bad));
    fake.push(Script::sse(good));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json(path, request);
    check_stream_success(*proxy, r, joined(good), 2);
    CHECK(fake.request_count() == 2);
}

}  // namespace

// ---------------------------------------------------------------------------
// Hold-back and replay before answer text

TEST_CASE("a stream that ends after the role chunk is replayed, the client sees only the good attempt",
          "[stream]") {
    FakeProvider fake;
    fake.push(Script::sse({role_event("bad")}));
    fake.push(Script::sse(good_chat()));
    auto proxy = start_proxy(routes(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_stream_success(*proxy, r, joined(good_chat()), 2);
    CHECK(r.body.find("\"bad\"") == std::string::npos);
    CHECK(fake.request_count() == 2);
}

TEST_CASE("a stream that fails before answer text on every attempt ends in a 502 envelope, never a 200",
          "[stream]") {
    FakeProvider fake;
    fake.set_default(Script::sse({role_event("bad")}));
    auto proxy = start_proxy(routes(fake, "{max_attempts: 3}"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "stream-incomplete");
    CHECK(error.at("attempts") == 3);
    CHECK(error.at("decision") == "exhausted");
    CHECK(error.at("bound") == "max_attempts");
    CHECK(r.header("x-should-retry") == "false");
    CHECK(fake.request_count() == 3);
}

TEST_CASE("a stream reset before answer text on every attempt ends in a 502 network envelope", "[stream]") {
    FakeProvider fake;
    SseOptions options;
    options.end = SseEnd::reset;
    fake.set_default(Script::sse({role_event("bad")}, options));
    auto proxy = start_proxy(routes(fake, "{max_attempts: 3}"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "network");
    CHECK(error.at("attempts") == 3);
    CHECK(fake.request_count() == 3);
}

// ---------------------------------------------------------------------------
// End markers and the closing error event

TEST_CASE("a stream that ends cleanly after answer text gets one closing error event and no [DONE]",
          "[stream]") {
    FakeProvider fake;
    const std::vector<std::string> upstream{role_event(), text_event()};
    fake.push(Script::sse(upstream));
    fake.set_default(Script::sse(good_chat()));  // a replay after publication would show up
    auto proxy = start_proxy(routes(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());  // the chunked body ends cleanly
    CHECK(r.status == 200);
    REQUIRE(r.body.rfind(joined(upstream), 0) == 0);
    const std::string tail = r.body.substr(joined(upstream).size());
    CAPTURE(tail);
    CHECK(tail.rfind("data: ", 0) == 0);
    CHECK(tail.find("data: ", 1) == std::string::npos);  // exactly one event follows
    const auto event = last_data(tail);
    REQUIRE(event.contains("error"));
    const auto& error = event.at("error").as_object();
    CHECK(error.at("type") == "stream_incomplete");
    CHECK(error.at("code") == 502);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->boolean("published") == true);
    CHECK(turn->str("outcome") != "ok");
    CHECK(fake.request_count() == 1);
}

TEST_CASE("[DONE] without a finish_reason is a success", "[stream]") {
    FakeProvider fake;
    const std::vector<std::string> upstream{role_event(), text_event(), done_event};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_stream_success(*proxy, r, joined(upstream), 1);
}

TEST_CASE("a finish_reason then a clean end without [DONE] is a success", "[stream]") {
    FakeProvider fake;
    const std::vector<std::string> upstream{role_event(), text_event(), finish_event("c1")};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_stream_success(*proxy, r, joined(upstream), 1);
}

// ---------------------------------------------------------------------------
// Structured error events before answer text

TEST_CASE("an error event with code 503 before answer text is replayed", "[stream]") {
    check_error_event_replayed("/v1/chat/completions", chat_request,
                               {role_event("bad"), "data: {\"error\":{\"code\":503,\"message\":\"overloaded\"}}\n\n"},
                               good_chat());
}

TEST_CASE("an error event with code 504 before answer text is replayed", "[stream]") {
    check_error_event_replayed("/v1/chat/completions", chat_request,
                               {"data: {\"error\":{\"code\":504,\"message\":\"upstream timed out\"}}\n\n"},
                               good_chat());
}

TEST_CASE("an error event with type service_unavailable before answer text is replayed", "[stream]") {
    check_error_event_replayed("/v1/chat/completions", chat_request,
                               {"data: {\"error\":{\"type\":\"service_unavailable\"}}\n\n"}, good_chat());
}

TEST_CASE("an Anthropic overloaded_error event before answer text is replayed", "[stream]") {
    check_error_event_replayed(
        "/v1/messages", messages_request,
        {anthropic_event("error", R"({"type":"error","error":{"type":"overloaded_error","message":"x"}})")},
        {message_start, block_start, block_delta, block_stop, message_delta, message_stop});
}

TEST_CASE("an error event with code 429 is terminal: a 200 stream holding that event, one attempt", "[stream]") {
    FakeProvider fake;
    const std::string event = "data: {\"error\":{\"code\":429,\"message\":\"quota exceeded\"}}\n\n";
    fake.push(Script::sse({event}));
    fake.set_default(Script::sse(good_chat()));  // a replay would show up as the good stream
    auto proxy = start_proxy(routes(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == event);
    CHECK(r.header("x-modelproxy-attempts") == "1");
    REQUIRE(turn_record(*proxy));
    CHECK(fake.request_count() == 1);
}

// ---------------------------------------------------------------------------
// Line endings

TEST_CASE("a CR-only stream is relayed byte-identical and its [DONE] recognised", "[stream]") {
    FakeProvider fake;
    // No finish_reason: only a recognised [DONE] makes this a success.
    const std::vector<std::string> upstream{role_event("c1", "\r"), text_event("Hello", "c1", "\r") + "data: [DONE]\r",
                                            "\r"};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_stream_success(*proxy, r, joined(upstream), 1);
}

TEST_CASE("a CRLF stream split inside its line ends is relayed byte-identical and its [DONE] recognised",
          "[stream]") {
    FakeProvider fake;
    const std::string role = role_event("c1", "\r\n");
    const std::string text = text_event("Hello", "c1", "\r\n");
    const std::vector<std::string> upstream{role.substr(0, role.size() - 1), "\n" + text.substr(0, text.size() - 3),
                                            text.substr(text.size() - 3) + "data: [DONE]\r", "\n\r\n"};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_stream_success(*proxy, r, joined(upstream), 1);
}

TEST_CASE("a BOM at the start of lines is relayed byte-identical and a BOM-led [DONE] recognised", "[stream]") {
    FakeProvider fake;
    const std::string bom = "\xEF\xBB\xBF";
    const std::vector<std::string> upstream{bom + role_event(), bom + bom + text_event(), bom + done_event};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_stream_success(*proxy, r, joined(upstream), 1);
}

// ---------------------------------------------------------------------------
// Idle timeout

TEST_CASE("an upstream that goes idle after answer text: the client gets the closing error event", "[stream]") {
    FakeProvider fake;
    SseOptions options;
    options.end = SseEnd::hang;
    const std::vector<std::string> upstream{role_event(), text_event()};
    fake.push(Script::sse(upstream, options));
    fake.set_default(Script::sse(good_chat()));
    auto proxy = start_proxy(routes(fake, "{}", "    stream_idle_timeout_ms: 300\n"));

    const auto start = std::chrono::steady_clock::now();
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(std::chrono::steady_clock::now() - start >= 250ms);
    REQUIRE(r.body.rfind(joined(upstream), 0) == 0);
    const auto event = last_data(r.body.substr(joined(upstream).size()));
    REQUIRE(event.contains("error"));
    CHECK(event.at("error").at("type") == "stream_incomplete");
    CHECK(event.at("error").at("code") == 502);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    CHECK(fake.request_count() == 1);
    // The idle upstream connection is closed, never reused.
    CHECK(fake.wait_for_peer_close(0, bound));
    // Recorded as the stream-idle timer firing (docs/behaviour.md section 5), not as a drop.
    REQUIRE(turn_record(*proxy));
    const auto attempts = attempt_records(*proxy);
    CAPTURE(proxy->stdout_lines());
    REQUIRE(attempts.size() == 1);
    CHECK(attempts[0].str("class") == "timeout");
    CHECK(attempts[0].str("timeout_source") == "stream-idle");
}

TEST_CASE("an upstream that goes idle before answer text is replayed", "[stream]") {
    FakeProvider fake;
    SseOptions options;
    options.end = SseEnd::hang;
    fake.push(Script::sse({role_event("bad")}, options));
    fake.push(Script::sse(good_chat()));
    auto proxy = start_proxy(routes(fake, "{}", "    stream_idle_timeout_ms: 300\n"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_stream_success(*proxy, r, joined(good_chat()), 2);
    CHECK(fake.request_count() == 2);
}

// ---------------------------------------------------------------------------
// Client side

TEST_CASE("a client that disconnects mid-stream closes the upstream connection", "[stream]") {
    FakeProvider fake;
    SseOptions options;
    options.end = SseEnd::hang;
    fake.push(Script::sse({role_event(), text_event()}, options));
    auto proxy = start_proxy(routes(fake));

    auto client = proxy->client();
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                      chat_request));
    const RawRead got = client.read_raw_until("Hello", bound);
    REQUIRE_FALSE(got.error);
    client.close();

    CHECK(fake.wait_for_peer_close(0, bound));
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CAPTURE(turn->line());
    CHECK(turn->str("outcome") == "cancelled");
    // The record says what the client got: the published 200 stream.
    CHECK(turn->integer("status") == 200);
    CHECK(turn->boolean("published") == true);
}

TEST_CASE("answer text is published without waiting for the next upstream event", "[stream]") {
    // role + text, then 1 s of silence, then the end.
    Script script;
    script.write(format_response_head(200, {{"Content-Type", "text/event-stream"}, {"Transfer-Encoding", "chunked"}}))
        .chunk(role_event() + text_event())
        .sleep(1000ms)
        .chunk(finish_event("c1") + done_event)
        .last_chunk();
    FakeProvider slow;
    slow.push(script);
    auto proxy = start_proxy(routes(slow));

    auto client = proxy->client();
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                      chat_request));
    // The text event ends its HTTP chunk: nothing of the next event is on the wire yet.
    const RawRead text = client.read_raw_until(text_event() + "\r\n", bound);
    const auto text_at = std::chrono::steady_clock::now();
    REQUIRE_FALSE(text.error);
    const RawRead early = client.read_some_raw(200ms);
    CHECK(early.timed_out());
    CHECK(early.bytes.empty());
    REQUIRE(slow.wait_for_requests(1, bound));
    // The next event leaves the fake 1 s after the request; the text came well before it.
    CHECK(text_at - slow.requests()[0].received_at < 800ms);

    const RawRead rest = client.read_raw_until("0\r\n\r\n", bound);
    REQUIRE_FALSE(rest.error);
    CHECK(rest.bytes.find("[DONE]") != std::string::npos);
}

// ---------------------------------------------------------------------------
// Responses and Messages APIs

TEST_CASE("a Responses API stream is relayed byte-identical and ends with response.completed", "[stream]") {
    FakeProvider fake;
    const std::vector<std::string> upstream{
        "event: response.created\ndata: "
        R"({"type":"response.created","response":{"id":"resp_1","object":"response","model":"gpt-4o-mini","status":"in_progress","output":[]}})"
        "\n\n",
        "event: response.output_text.delta\ndata: "
        R"({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"})"
        "\n\n",
        "event: response.completed\ndata: "
        R"({"type":"response.completed","response":{"id":"resp_1","object":"response","model":"gpt-4o-mini","status":"completed","output":[]}})"
        "\n\n"};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/responses", responses_request);
    check_stream_success(*proxy, r, joined(upstream), 1);
}

TEST_CASE("a Messages API stream is relayed byte-identical and ends with message_stop", "[stream]") {
    FakeProvider fake;
    const std::vector<std::string> upstream{message_start, block_start, block_delta, block_stop, message_delta,
                                            message_stop};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/messages", messages_request);
    check_stream_success(*proxy, r, joined(upstream), 1);
}

TEST_CASE("a Messages API stream without message_stop ends with an Anthropic-shaped closing error event",
          "[stream]") {
    FakeProvider fake;
    const std::vector<std::string> upstream{message_start, block_start, block_delta};
    fake.push(Script::sse(upstream));
    auto proxy = start_proxy(routes(fake));

    const Response r = proxy->client().post_json("/v1/messages", messages_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(r.body.rfind(joined(upstream), 0) == 0);
    const std::string tail = r.body.substr(joined(upstream).size());
    CAPTURE(tail);
    CHECK(tail.rfind("event: error\ndata: ", 0) == 0);
    const auto event = last_data(tail);
    CHECK(event.at("type") == "error");
    REQUIRE(event.contains("error"));
    CHECK(event.at("error").at("type") == "api_error");
    CHECK(event.at("error").at("message").is_string());
    CHECK(r.body.find("message_stop") == std::string::npos);
}

// ---------------------------------------------------------------------------
// Streams the boundary refuses

TEST_CASE("an empty 200 stream is refused: 502 empty_stream", "[stream]") {
    FakeProvider fake;
    fake.push(Script::sse({}));
    fake.set_default(Script::sse(good_chat()));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_refused(*proxy, fake, r, "empty_stream");
}

TEST_CASE("a JSON 200 answer to a stream request is refused: 502 not_a_stream", "[stream]") {
    FakeProvider fake;
    fake.push(Script::json(
        200,
        R"({"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})"));
    fake.set_default(Script::sse(good_chat()));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_refused(*proxy, fake, r, "not_a_stream");
}

TEST_CASE("a data line that is not JSON is refused: 502 unparseable_event", "[stream]") {
    FakeProvider fake;
    fake.push(Script::sse({role_event(), "data: this is not json\n\n", text_event(), done_event}));
    fake.set_default(Script::sse(good_chat()));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_refused(*proxy, fake, r, "unparseable_event");
}

// docs/behaviour.md section 7: after answer text, a data line that is not JSON
// ends the client stream with the closing error event of its refusal, whose
// message names that fault (not a break of the upstream stream).
TEST_CASE("a data line that is not JSON after answer text ends the stream with its own closing event",
          "[stream]") {
    FakeProvider fake;
    fake.push(Script::sse({role_event(), text_event(), "data: this is not json\n\n", text_event(" more"), done_event}));
    auto proxy = start_proxy(routes(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body ==
          role_event() + text_event() +
              R"(data: {"error":{"type":"unparseable_event","code":502,"message":"the upstream stream carried a data line that is not JSON","class":"identity","decision":"terminal","bound":null,"attempts":1}})"
              "\n\n");
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "refused");
    CHECK(turn->str("code") == "unparseable_event");
    CHECK(fake.request_count() == 1);
}
