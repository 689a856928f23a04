// The response boundary through the real binary (docs/behaviour.md section 8): model
// identity on 200 bodies and streams (route `accept` globs, the "*" route's
// date-suffix rule), the credential scan (configured upstream keys, default
// secret shapes), refusals before publication (502 envelope) and after it
// (closing error event), and error-only streams, which skip identity.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <string>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

// One openai route to `fake` with tiny waits; `models` is the YAML flow or
// block value of `models:` (e.g. "[m]"); `extra` holds more route keys, each
// line indented by four spaces.
std::string one_route(const FakeProvider& fake, std::string_view models, std::string_view extra = "") {
    return "retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\nroutes:\n"
           "  - name: r\n    upstream: " +
           fake.base_url("/v1") + "\n    dialect: openai\n    models: " + std::string(models) + "\n" +
           std::string(extra);
}

std::string chat_request(std::string_view model, bool stream = false) {
    return "{\"model\":\"" + std::string(model) + "\"," + (stream ? "\"stream\":true," : "") +
           R"("messages":[{"role":"user","content":"hi"}]})";
}

// A non-stream chat completion from `model` saying `content`.
std::string chat_answer(std::string_view model, std::string_view content = "Hello there") {
    return R"({"id":"c1","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":")" + std::string(content) +
           R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})";
}

// Chat completion chunks.
std::string role_event(std::string_view model) {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})"
           "\n\n";
}
std::string text_event(std::string_view model, std::string_view text) {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"delta":{"content":")" + std::string(text) +
           R"("},"finish_reason":null}]})"
           "\n\n";
}
std::string finish_event(std::string_view model) {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
           "\n\n";
}
const std::string done_event = "data: [DONE]\n\n";

std::string joined(const std::vector<std::string>& pieces) {
    std::string all;
    for (const auto& piece : pieces) all += piece;
    return all;
}

// Refused before publication: 502 envelope with `code`; `requests` upstream
// requests so far (refusals are not retried).
void check_refused(const FakeProvider& fake, const Response& r, std::string_view code, std::size_t requests = 1) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("code") == boost::json::value(code));
    CHECK(fake.request_count() == requests);
}

// A stream ended after publication by one closing error event of `type`, no [DONE].
void check_closing_error(const Response& r, std::string_view type) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    const auto event = last_data(r.body);
    REQUIRE(event.contains("error"));
    REQUIRE(event.at("error").is_object());
    const auto& error = event.at("error").as_object();
    CHECK(error.at("type") == boost::json::value(type));
    CHECK(error.at("code") == 502);
}

const std::string proj_key_48 = "sk-proj-" + std::string(24, 'a') + std::string(24, '7');

}  // namespace

// ---------------------------------------------------------------------------
// Model identity, non-stream

TEST_CASE("a 200 answer from another model is refused: 502 model_identity_mismatch, one attempt",
          "[boundary]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("other", "FOREIGN-ANSWER-TEXT")));
    fake.set_default(Script::json(200, chat_answer("m")));  // a retry would turn this into a 200
    auto proxy = start_proxy(one_route(fake, "[m]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m"));
    check_refused(fake, r, "model_identity_mismatch");
    CHECK(r.body.find("FOREIGN-ANSWER-TEXT") == std::string::npos);
    REQUIRE(turn_record(*proxy));
    CHECK(fake.request_count() == 1);
}

TEST_CASE("an answer matching an accept glob is passed through", "[boundary]") {
    FakeProvider fake;
    const std::string body = chat_answer("gpt-4o-mini-2024-07-18");
    fake.push(Script::json(200, body));
    auto proxy = start_proxy(one_route(
        fake, "\n      - name: fast\n        upstream_model: gpt-4o-mini\n        accept: [gpt-4o-mini, \"gpt-4o-mini-20*\"]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("fast"));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == body);
    CHECK(fake.request_count() == 1);
}

TEST_CASE("the \"*\" route accepts the requested name plus a date suffix, never a longer name", "[boundary]") {
    FakeProvider fake;
    const std::string dated = chat_answer("gpt-4o-2024-08-06");
    fake.push(Script::json(200, dated));
    fake.push(Script::json(200, chat_answer("gpt-4o-mini")));
    auto proxy = start_proxy(one_route(fake, "[\"*\"]"));

    const Response ok = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o"));
    CAPTURE(ok.wire);
    REQUIRE(ok.ok());
    CHECK(ok.status == 200);
    CHECK(ok.body == dated);

    const Response refused = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o"));
    check_refused(fake, refused, "model_identity_mismatch", 2);
}

// ---------------------------------------------------------------------------
// Model identity, streams

TEST_CASE("a foreign-model event after publication is not forwarded, a closing error event ends the stream",
          "[boundary]") {
    FakeProvider fake;
    const std::vector<std::string> good{role_event("m"), text_event("m", "Hello")};
    fake.push(Script::sse({good[0], good[1], text_event("x", "FOREIGN"), finish_event("x"), done_event}));
    auto proxy = start_proxy(one_route(fake, "[m]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m", true));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.body.rfind(joined(good), 0) == 0);
    CHECK(r.body.find("\"model\":\"x\"") == std::string::npos);
    CHECK(r.body.find("FOREIGN") == std::string::npos);
    check_closing_error(r, "model_identity_mismatch");
    CHECK(fake.request_count() == 1);
}

TEST_CASE("a foreign-model event followed by an error event is refused: 502 model_identity_mismatch",
          "[boundary]") {
    FakeProvider fake;
    fake.push(Script::sse({role_event("x"), "data: {\"error\":{\"code\":429,\"message\":\"quota\"}}\n\n"}));
    fake.set_default(Script::sse({role_event("m"), text_event("m", "Hello"), finish_event("m"), done_event}));
    auto proxy = start_proxy(one_route(fake, "[m]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m", true));
    check_refused(fake, r, "model_identity_mismatch");
    CHECK(r.body.find("\"model\":\"x\"") == std::string::npos);
}

TEST_CASE("an error-only stream skips identity: a 200 stream holding that event", "[boundary]") {
    FakeProvider fake;
    const std::string event = "data: {\"error\":{\"code\":429,\"message\":\"quota exceeded\"}}\n\n";
    fake.push(Script::sse({event}));
    fake.set_default(Script::sse({role_event("m"), text_event("m", "Hello"), finish_event("m"), done_event}));
    auto proxy = start_proxy(one_route(fake, "[m]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m", true));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == event);
    CHECK(fake.request_count() == 1);
}

// ---------------------------------------------------------------------------
// Credentials

TEST_CASE("an answer echoing the configured upstream key is refused and the key is never logged",
          "[boundary]") {
    const std::string key = "sk-test-0123456789abcdefghij";
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("m", "your key is " + key + " ok")));
    fake.set_default(Script::json(200, chat_answer("m")));
    auto proxy = start_proxy(one_route(fake, "[m]", "    api_key_env: MP_KEY\n"), Environment{{"MP_KEY", key}});

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m"));
    check_refused(fake, r, "credential_in_response");
    CHECK(r.wire.find(key) == std::string::npos);
    REQUIRE(turn_record(*proxy));
    // The key did go upstream (so the route really used it).
    REQUIRE(fake.request_count() >= 1);
    CHECK(fake.requests()[0].header("authorization") == "Bearer " + key);
    for (const auto& line : proxy->stdout_lines()) {
        CAPTURE(line);
        CHECK(line.find(key) == std::string::npos);
    }
    CHECK(proxy->stderr_text().find(key) == std::string::npos);
}

TEST_CASE("a default secret shape as a whole token is refused, inside a word or too short it passes",
          "[boundary]") {
    FakeProvider fake;
    auto proxy = start_proxy(one_route(fake, "[m]"));

    SECTION("sk-proj- plus 48 alphanumerics -> 502 credential_in_response") {
        fake.push(Script::json(200, chat_answer("m", "here: " + proj_key_48)));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m"));
        check_refused(fake, r, "credential_in_response");
        CHECK(r.body.find(proj_key_48) == std::string::npos);
    }
    SECTION("the shape inside a longer word -> 200") {
        const std::string body = chat_answer("m", "a risk-free-" + proj_key_48 + " plan");
        fake.push(Script::json(200, body));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m"));
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.body == body);
    }
    SECTION("a bare prefix in prose -> 200") {
        const std::string body = chat_answer("m", "your key starts with sk-");
        fake.push(Script::json(200, body));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m"));
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.body == body);
    }
}

TEST_CASE("a key in the raw bytes of one event refuses that event, and the clean ones of the same read go out",
          "[boundary]") {
    // One upstream write, so one read holds every event: the raw bytes are
    // scanned per read, and the key is charged to the event it ends in.
    const std::string key = "sk-test-0123456789abcdefghij";
    std::string leaking = text_event("m", "more");
    leaking.insert(leaking.find(R"("choices")"), R"("system_fingerprint":")" + key + R"(",)");
    const std::vector<std::string> published{role_event("m"), text_event("m", "Hello "), text_event("m", "world")};
    FakeProvider fake;
    fake.push(Script::sse({joined(published) + leaking + finish_event("m") + done_event}));
    auto proxy = start_proxy(one_route(fake, "[m]", "    api_key_env: MP_KEY\n"), Environment{{"MP_KEY", key}});

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m", true));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.body.rfind(joined(published), 0) == 0);
    CHECK(r.wire.find(key) == std::string::npos);
    CHECK(r.body.find("more") == std::string::npos);
    check_closing_error(r, "credential_in_response");
    CHECK(fake.request_count() == 1);
}

TEST_CASE("a secret split across two stream events after publication ends the stream with credential_in_response",
          "[boundary]") {
    FakeProvider fake;
    const std::string a_part = "sk-proj-" + std::string(20, 'A');
    const std::string b_part(25, 'B');
    const std::vector<std::string> published{role_event("m"), text_event("m", "Hello ")};
    fake.push(Script::sse({published[0], published[1], text_event("m", a_part), text_event("m", b_part),
                           finish_event("m"), done_event}));
    auto proxy = start_proxy(one_route(fake, "[m]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m", true));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.body.rfind(joined(published), 0) == 0);
    CHECK(r.body.find(b_part) == std::string::npos);
    check_closing_error(r, "credential_in_response");
    CHECK(fake.request_count() == 1);
}
