// docs/behaviour.md section 7 after publication: an upstream structured error event is
// forwarded as it is and ends the client stream (a [DONE] after it is not
// forwarded), and nothing after [DONE] is forwarded.
#include "support/fake_provider.hpp"
#include "support/http_client.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

std::string config(const FakeProvider& fake) {
    return "retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\nroutes:\n  - name: openai\n    upstream: " +
           fake.base_url("/v1") + "\n    models: [gpt-4o-mini]\n";
}

const std::string request = R"({"model":"gpt-4o-mini","stream":true,"messages":[]})";
const std::string role = R"(data: {"id":"c1","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant"}}]})" "\n\n";
const std::string text = R"(data: {"id":"c1","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hi"}}]})" "\n\n";
const std::string finish = R"(data: {"id":"c1","model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})" "\n\n";
const std::string error_event = R"(data: {"error":{"type":"server_error","code":500,"message":"boom"}})" "\n\n";
const std::string done = "data: [DONE]\n\n";

}  // namespace

TEST_CASE("an error event after answer text is forwarded as it is and ends the stream, the [DONE] after it is not",
          "[stream]") {
    FakeProvider fake;
    fake.push(Script::sse({role, text, error_event, done}));
    ProxyProcess proxy({.config_yaml = config(fake)});
    proxy.start();
    HttpClient client = proxy.client();
    const Response r = client.post_json("/v1/chat/completions", request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == role + text + error_event);  // exactly: no closing event of the proxy's, no [DONE]
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(fake.request_count() == 1);  // published: never replayed
}

TEST_CASE("nothing after [DONE] is forwarded", "[stream]") {
    FakeProvider fake;
    fake.push(Script::sse({role, text, finish, done, text, ": trailing comment\n\n"}));
    ProxyProcess proxy({.config_yaml = config(fake)});
    proxy.start();
    HttpClient client = proxy.client();
    const Response r = client.post_json("/v1/chat/completions", request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == role + text + finish + done);
}
