// No injected upstream key reaches the client (SPEC section 8, with 4 and 9),
// through the real binary against a hostile fake upstream: an upstream
// answer's chunked trailers never reach the client's head.
#include "support/fake_provider.hpp"

#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

// Not a default secret shape: what refuses it is the configured key's rule.
const std::string key = "mp-route-key-0123456789abcdefghijklmn";

std::string config(const FakeProvider& fake) {
    return "retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\nroutes:\n"
           "  - name: r\n    upstream: " +
           fake.base_url("/v1") + "\n    dialect: openai\n    api_key_env: MP_KEY\n    models: [m]\n";
}

std::unique_ptr<ProxyProcess> start(const FakeProvider& fake) {
    return start_proxy(config(fake), Environment{{"MP_KEY", key}});
}

std::string chat_request(bool stream = false) {
    return std::string(R"({"model":"m",)") + (stream ? R"("stream":true,)" : "") +
           R"("messages":[{"role":"user","content":"hi"}]})";
}

// A chat completion whose `system_fingerprint` and content are as given
// (already JSON-escaped).
std::string chat_answer(std::string_view content, std::string_view fingerprint = "fp_1") {
    return R"({"id":"c1","object":"chat.completion","model":"m","system_fingerprint":")" + std::string(fingerprint) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":")" + std::string(content) +
           R"("},"finish_reason":"stop"}]})";
}

// `text` with every `step`-th character (from the first) written as a \u
// escape, the rest as they are: a spelling no raw pattern holds.
std::string u_escaped(std::string_view text, std::size_t step = 2) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i % step == 0) {
            char escape[7];
            std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned char>(text[i]));
            out += escape;
        } else {
            out += text[i];
        }
    }
    return out;
}

// The key is nowhere in what the client got, nor in any record or log line.
void check_no_key(const ProxyProcess& proxy, const Response& r) {
    CAPTURE(r.wire);
    CHECK(r.wire.find(key) == std::string::npos);
    CHECK(r.wire.find(u_escaped(key)) == std::string::npos);
    for (const auto& line : proxy.stdout_lines()) {
        CAPTURE(line);
        CHECK(line.find(key) == std::string::npos);
    }
}

}  // namespace

TEST_CASE("an upstream answer's chunked trailers never reach the client's head", "[credentials][headers]") {
    FakeProvider fake;
    auto proxy = start(fake);
    const std::string trailers = "0\r\nSet-Cookie: session=from-trailer\r\nX-Echo-Auth: Bearer " + key + "\r\n\r\n";

    SECTION("a 200 whole body") {
        const std::string body = chat_answer("fine");
        fake.push(Script()
                      .write(format_response_head(200, {{"Content-Type", "application/json"},
                                                        {"Transfer-Encoding", "chunked"}}))
                      .chunk(body)
                      .write(trailers));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.body == body);
        CHECK_FALSE(r.header("set-cookie"));
        check_no_key(*proxy, r);
    }
    SECTION("a 400 passed on") {
        const std::string body = R"({"error":{"message":"bad","type":"invalid_request_error"}})";
        fake.push(Script()
                      .write(format_response_head(400, {{"Content-Type", "application/json"},
                                                        {"Transfer-Encoding", "chunked"}}))
                      .chunk(body)
                      .write(trailers));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 400);
        CHECK(r.body == body);
        CHECK_FALSE(r.header("set-cookie"));
        check_no_key(*proxy, r);
    }
    SECTION("a 200 stream holding an error event, released at its end") {
        const std::string error = "data: {\"error\":{\"code\":400,\"message\":\"bad request\"}}\n\n";
        fake.push(Script()
                      .write(format_response_head(200, {{"Content-Type", "text/event-stream"},
                                                        {"Transfer-Encoding", "chunked"}}))
                      .chunk(error)
                      .write(trailers));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.body == error);
        CHECK_FALSE(r.header("set-cookie"));
        check_no_key(*proxy, r);
    }
}
