// No injected upstream key reaches the client (docs/behaviour.md section 8, with 4 and 9),
// through the real binary against a hostile fake upstream: a 2xx body is
// scanned whatever its Content-Type says, JSON escapes are decoded before
// the scan, the keys are looked for in every response header and in non-2xx
// bodies, and an upstream answer's chunked trailers never reach the
// client's head.
#include "support/fake_provider.hpp"

#include "support/compress.hpp"
#include "support/expect.hpp"
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

std::string event(std::string_view delta, std::string_view fingerprint = "fp_1") {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":"m","system_fingerprint":")" +
           std::string(fingerprint) + R"(","choices":[{"index":0,"delta":)" + std::string(delta) +
           R"(,"finish_reason":null}]})"
           "\n\n";
}
std::string text_event(std::string_view text, std::string_view fingerprint = "fp_1") {
    return event(R"({"content":")" + std::string(text) + R"("})", fingerprint);
}
const std::string role_event = event(R"({"role":"assistant","content":""})");
const std::string finish_event =
    R"(data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
    "\n\n";
const std::string done_event = "data: [DONE]\n\n";

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

// Refused before publication: 502 credential_in_response, one attempt.
void check_refused(const FakeProvider& fake, const ProxyProcess& proxy, const Response& r) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(envelope_error(r).at("code") == boost::json::value("credential_in_response"));
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(fake.request_count() == 1);
    check_no_key(proxy, r);
}

// After publication: the events before the refused one, then the closing
// error event.
void check_closed(const ProxyProcess& proxy, const Response& r, const std::string& published) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body.rfind(published, 0) == 0);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    const auto error = last_data(r.body);
    REQUIRE(error.contains("error"));
    CHECK(error.at("error").at("type") == boost::json::value("credential_in_response"));
    check_no_key(proxy, r);
}

}  // namespace

TEST_CASE("a 2xx JSON body carrying the key is refused whatever its content type says, or without one",
          "[credentials]") {
    const std::string type = GENERATE(as<std::string>{}, "application/octet-stream", "image/png", "application/xml",
                                      "");
    CAPTURE(type);
    FakeProvider fake;
    Headers headers;
    if (!type.empty()) headers.push_back({"Content-Type", type});
    fake.push(Script::response(200, headers, chat_answer("your key is " + key)));
    fake.set_default(Script::json(200, chat_answer("fine")));
    auto proxy = start(fake);

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
    check_refused(fake, *proxy, r);
}

TEST_CASE("a gzip-encoded body labelled octet-stream is scanned as the client receives it, decoded",
          "[credentials]") {
    FakeProvider fake;
    fake.push(Script::response(200, {{"Content-Type", "application/octet-stream"}, {"Content-Encoding", "gzip"}},
                               gzip_compress(chat_answer("your key is " + key))));
    auto proxy = start(fake);

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
    check_refused(fake, *proxy, r);
}

TEST_CASE("a key written with \\u escapes in a JSON body is refused", "[credentials]") {
    const std::size_t step = GENERATE(1, 2, 5);
    CAPTURE(step);
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("fine", u_escaped(key, step))));
    auto proxy = start(fake);

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
    check_refused(fake, *proxy, r);
}

TEST_CASE("the key in a 2xx answer's header is refused: 502 credential_in_response", "[credentials]") {
    FakeProvider fake;
    auto proxy = start(fake);

    SECTION("a whole body") {
        fake.push(Script::json(200, chat_answer("fine"), {{"X-Echo-Auth", "Bearer " + key}}));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
        check_refused(fake, *proxy, r);
    }
    SECTION("a stream") {
        SseOptions options;
        options.headers = {{"X-Echo-Auth", "Bearer " + key}};
        fake.push(Script::sse({role_event, text_event("Hello"), finish_event, done_event}, options));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
        check_refused(fake, *proxy, r);
    }
}

TEST_CASE("a non-2xx answer echoing the key answers its status with the credential_in_response envelope and no "
          "upstream header but framing",
          "[credentials]") {
    FakeProvider fake;
    auto proxy = start(fake);
    const Headers marked = {{"X-Upstream-Marker", "seen"}, {"Retry-After", "7"}};
    const std::string echo_body =
        R"({"error":{"message":"Incorrect API key provided: )" + key + R"(","type":"invalid_request_error"}})";
    const std::string escaped_body = R"({"error":{"message":"Incorrect API key provided: )" + u_escaped(key) +
                                     R"(","type":"invalid_request_error"}})";

    SECTION("in the body") { fake.push(Script::json(401, echo_body, marked)); }
    SECTION("in the body, \\u-escaped") { fake.push(Script::json(401, escaped_body, marked)); }
    SECTION("in a header") {
        Headers headers = marked;
        headers.push_back({"X-Echo-Auth", "Bearer " + key});
        fake.push(Script::json(401, R"({"error":{"message":"no","type":"invalid_request_error"}})", headers));
    }
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 401);
    CHECK(envelope_error(r).at("code") == boost::json::value("credential_in_response"));
    CHECK(r.header("content-type") == "application/json");
    CHECK(r.header("x-modelproxy-error-class") == "authentication");
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(r.header("x-should-retry") == "false");
    CHECK_FALSE(r.header("x-upstream-marker"));
    CHECK_FALSE(r.header("retry-after"));
    CHECK_FALSE(r.header("x-echo-auth"));
    CHECK(fake.request_count() == 1);
    check_no_key(*proxy, r);
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->integer("status") == 401);
    CHECK(turn->str("code") == "credential_in_response");
}

TEST_CASE("a non-2xx body with a secret shape that is not a configured key is passed on", "[credentials]") {
    // Only the injected keys are looked for in non-2xx answers, not the patterns.
    const std::string body = R"({"error":{"message":"bad key sk-proj-)" + std::string(48, 'a') +
                             R"(","type":"invalid_request_error"}})";
    FakeProvider fake;
    fake.push(Script::json(401, body, {{"X-Upstream-Marker", "seen"}}));
    auto proxy = start(fake);

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request());
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 401);
    CHECK(r.body == body);
    CHECK(r.header("x-upstream-marker") == "seen");
}

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

TEST_CASE("a \\u-escaped key in a stream event is refused, in answer text or any other string", "[credentials]") {
    FakeProvider fake;
    auto proxy = start(fake);
    const std::string published = role_event + text_event("Hello");

    SECTION("another member of an event after publication") {
        fake.push(Script::sse({published, text_event(" there", u_escaped(key)), finish_event, done_event}));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
        check_closed(*proxy, r, published);
    }
    SECTION("another member of an event before publication") {
        fake.push(Script::sse({event(R"({"role":"assistant"})", u_escaped(key)), text_event("Hello"), finish_event,
                               done_event}));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
        check_refused(fake, *proxy, r);
    }
    SECTION("answer text") {
        fake.push(Script::sse({published, text_event(u_escaped(key, 3)), finish_event, done_event}));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
        check_closed(*proxy, r, published);
    }
}

TEST_CASE("a \\u-escaped key in the error event a held stream releases at its end is refused", "[credentials]") {
    FakeProvider fake;
    fake.push(Script::sse(
        {role_event, "data: {\"error\":{\"code\":400,\"message\":\"bad key " + u_escaped(key) + "\"}}\n\n"}));
    auto proxy = start(fake);

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
    check_refused(fake, *proxy, r);
}

TEST_CASE("a key split across two stream events' answer text is refused", "[credentials]") {
    FakeProvider fake;
    auto proxy = start(fake);
    const std::string published = role_event + text_event("Hello");
    const std::string first = key.substr(0, 15), second = key.substr(15);

    SECTION("as it is") {
        fake.push(Script::sse({published, text_event(first), text_event(second), finish_event, done_event}));
    }
    SECTION("each half \\u-escaped") {
        fake.push(Script::sse(
            {published, text_event(u_escaped(first)), text_event(u_escaped(second)), finish_event, done_event}));
    }
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
    check_closed(*proxy, r, published);
}

TEST_CASE("a key split across two TCP writes of one event is refused", "[credentials]") {
    // The two writes are 30 ms apart, so the proxy reads them separately.
    FakeProvider fake;
    auto proxy = start(fake);
    const std::string published = role_event + text_event("Hello");
    SseOptions options;
    options.delay = 30ms;

    SECTION("as it is, in another member") {
        const std::string leaking = text_event(" there", key);
        const std::size_t cut = leaking.find(key) + 10;
        fake.push(Script::sse({published, leaking.substr(0, cut), leaking.substr(cut), finish_event, done_event},
                              options));
    }
    SECTION("\\u-escaped, in another member") {
        const std::string leaking = text_event(" there", u_escaped(key));
        const std::size_t cut = leaking.find("fingerprint") + 40;
        fake.push(Script::sse({published, leaking.substr(0, cut), leaking.substr(cut), finish_event, done_event},
                              options));
    }
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request(true));
    check_closed(*proxy, r, published);
}
