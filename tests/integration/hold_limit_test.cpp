// docs/behaviour.md section 7's head hold limit: a stream turn that has published nothing
// after stream_head_hold_ms publishes its head and `: keep-alive` comments,
// while events stay held so a replay is still invisible.
#include "support/fake_provider.hpp"
#include "support/http_client.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;

std::string config(const FakeProvider& fake, std::string_view retry) {
    return "routes:\n  - name: openai\n    upstream: " + fake.base_url("/v1") +
           "\n    stream_head_hold_ms: 200\n    retry: " + std::string(retry) + "\n    models: [gpt-4o-mini]\n";
}

const std::string request = R"({"model":"gpt-4o-mini","stream":true,"messages":[]})";
const std::string role = R"(data: {"id":"c1","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant"}}]})" "\n\n";
const std::string text = R"(data: {"id":"c1","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hi"}}]})" "\n\n";
const std::string done = "data: [DONE]\n\n";

// The whole answer to `request` through a proxy run with `config_yaml`,
// once its head went out at the hold limit: a 200 whose body holds the
// `: keep-alive` comment, whatever the turn's end.
Response held_stream(const std::string& config_yaml) {
    ProxyProcess proxy({.config_yaml = config_yaml});
    proxy.start();
    HttpClient client = proxy.client({.timeout = 10s});
    Response r = client.post_json("/v1/chat/completions", request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);  // the head went out at the hold limit
    CHECK(r.body.find(": keep-alive") != std::string::npos);
    return r;
}

}  // namespace

TEST_CASE("the head and a keep-alive comment go out at the hold limit, and a later replay stays invisible",
          "[stream][hold]") {
    FakeProvider fake;
    // Attempt 1: nothing for 600 ms (past the 200 ms hold limit), then a 503.
    fake.push(Script{}.sleep(600ms).then(Script::json(503, R"({"error":{"type":"server_error"}})")));
    // Attempt 2: a good stream.
    fake.push(Script::sse({role, text, done}));
    ProxyProcess proxy({.config_yaml = config(fake, "{base_delay_ms: 10, max_delay_ms: 20, min_attempt_ms: 10}")});
    proxy.start();
    HttpClient client = proxy.client({.timeout = 10s});
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"content-type", "application/json"}}, request));

    // The head and the first comment arrive while attempt 1 is still waiting
    // (raw reads only: a parsed head read could swallow the comment's bytes).
    const RawRead first = client.read_raw_until(": keep-alive", bound);
    CAPTURE(first.bytes);
    CHECK(first.bytes.rfind("HTTP/1.1 200 ", 0) == 0);
    CHECK(first.bytes.find("content-type: text/event-stream\r\n") != std::string::npos);
    CHECK(first.bytes.find("x-modelproxy-attempts: 1\r\n") != std::string::npos);
    CHECK(first.bytes.find(": keep-alive") != std::string::npos);
    CHECK(fake.request_count() <= 1);  // published before the replay was even sent
    const RawRead comment = first;

    // The rest: only the successful attempt's events, then a clean end.
    const RawRead rest = client.read_raw_until("0\r\n\r\n", bound);
    const std::string all = comment.bytes + rest.bytes;
    CAPTURE(all);
    CHECK(all.find(role) != std::string::npos);
    CHECK(all.find(text) != std::string::npos);
    CHECK(all.find(done) != std::string::npos);
    CHECK(all.find("server_error") == std::string::npos);  // the failed attempt never shows
    CHECK(fake.request_count() == 2);
}

TEST_CASE("a turn that fails after the hold limit ends its stream with the closing error event", "[stream][hold]") {
    FakeProvider fake;
    fake.set_default(Script{}.sleep(300ms).then(Script::json(503, R"({"error":{"type":"server_error"}})")));
    const Response r =
        held_stream(config(fake, "{max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20, min_attempt_ms: 10}"));
    CAPTURE(r.wire);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    // One closing error event naming the last failure's class and status.
    CHECK(r.body.find(R"("type":"server","code":503)") != std::string::npos);
    CHECK(r.body.find(R"("decision":"exhausted")") != std::string::npos);
    CHECK(fake.request_count() == 2);
}

// A whole-body 200 after the hold limit sent a stream head cannot follow that
// head (docs/behaviour.md section 8: a 200 that is not a stream, when the client asked for
// one, is refused). On a generic route, where the body is not refused before
// the hold limit matters, the refusal comes after publication: the stream
// ends with the closing error event, and the body is never forwarded.
TEST_CASE("a JSON 200 that comes after the hold limit ends the stream with a not_a_stream closing event",
          "[stream][hold]") {
    FakeProvider fake;
    const std::string answer =
        R"({"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"whole body"},"finish_reason":"stop"}]})";
    fake.push(Script{}.sleep(600ms).then(Script::json(200, answer)));
    const Response r = held_stream("routes:\n  - name: generic\n    upstream: " + fake.base_url("/v1") +
                                   "\n    dialect: generic\n    stream_head_hold_ms: 200\n    models: [gpt-4o-mini]\n");
    CAPTURE(r.wire);
    CHECK(r.body.find(R"("type":"not_a_stream","code":502)") != std::string::npos);
    CHECK(r.body.find("whole body") == std::string::npos);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    CHECK(fake.request_count() == 1);
}

// docs/behaviour.md section 10: the turn record's status is what the client
// got. A client that leaves after the hold limit sent it a 200 head (and a
// keep-alive comment) got a 200: its cancelled turn says so, published.
TEST_CASE("a client that leaves after the hold limit's head is recorded cancelled with status 200",
          "[stream][hold]") {
    FakeProvider fake;
    // A 200 stream head and a role-only event, then nothing: no answer text,
    // so the events stay held and the hold limit publishes the head.
    SseOptions options;
    options.end = SseEnd::hang;
    fake.push(Script::sse({role}, options));
    ProxyProcess proxy({.config_yaml = config(fake, "{}")});
    proxy.start();
    {
        HttpClient client = proxy.client({.timeout = 10s});
        REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions",
                                          {{"content-type", "application/json"}, {"x-request-id", "left-held"}},
                                          request));
        const RawRead first = client.read_raw_until(": keep-alive", bound);
        CAPTURE(first.bytes);
        REQUIRE(first.bytes.rfind("HTTP/1.1 200 ", 0) == 0);
        REQUIRE(first.bytes.find(": keep-alive") != std::string::npos);
        client.close();
    }
    const auto turn = proxy.wait_for_record(
        [](const JsonRecord& r) { return r.event() == "turn" && r.str("request_id") == "left-held"; }, bound);
    REQUIRE(turn);
    CAPTURE(turn->line());
    CHECK(turn->str("outcome") == "cancelled");
    CHECK(turn->str("class") == "cancelled");
    CHECK(turn->integer("status") == 200);
    CHECK(turn->boolean("published") == true);
    const auto attempt = proxy.wait_for_record(
        [](const JsonRecord& r) { return r.event() == "attempt" && r.str("request_id") == "left-held"; }, bound);
    REQUIRE(attempt);
    CAPTURE(attempt->line());
    CHECK(attempt->str("decision") == "cancelled");
    CHECK(attempt->str("class") == "cancelled");
    CHECK(attempt->integer("status") == 200);  // the upstream's head, which the attempt got
}
