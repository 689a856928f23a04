// Section 8's answer-text credential scan of a stream through the real
// binary, when one upstream read holds many events: the proxy scans the
// read's answer text at once, and the outcome must be what scanning each
// event as it came gives: the client gets every event before the one that
// completes a secret and nothing from it on, the refusal is the same, and
// usage carried by the refused event or later ones is not counted.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

std::string one_route(const FakeProvider& fake) {
    return "retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\nroutes:\n"
           "  - name: r\n    upstream: " +
           fake.base_url("/v1") + "\n    dialect: openai\n    models: [m]\n";
}

const std::string chat_request = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";

// One chat chunk data line (no "data: ", no line end) with `delta`, and
// `usage` when given.
std::string line(std::string_view delta, std::string_view usage = "") {
    return R"({"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":)" +
           std::string(delta) + R"(,"finish_reason":null}])" +
           (usage.empty() ? std::string() : R"(,"usage":)" + std::string(usage)) + "}";
}
std::string event(std::string_view delta, std::string_view usage = "") {
    return "data: " + line(delta, usage) + "\n\n";
}
std::string text(std::string_view content, std::string_view usage = "") {
    return event(R"({"content":")" + std::string(content) + R"("})", usage);
}
const std::string role = event(R"({"role":"assistant","content":""})");
const std::string finish =
    R"(data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
    "\n\n";
const std::string done = "data: [DONE]\n\n";

// "sk-proj-" and 40 more key characters, in three pieces none of which
// holds a whole key (nor do the raw bytes of their events together).
const std::string key_1 = "sk-proj-" + std::string(12, 'a');
const std::string key_2 = std::string(14, 'B');
const std::string key_3 = std::string(14, '7');

std::string joined(const std::vector<std::string>& pieces) {
    std::string all;
    for (const auto& piece : pieces) all += piece;
    return all;
}


std::string scrape(const ProxyProcess& proxy) {
    const Response r = proxy.client().get("/metrics");
    REQUIRE(r.status == 200);
    return r.body;
}

// The body is exactly `published` and then one closing error event of
// `type` (no [DONE] after it).
void check_published_then_closed(const Response& r, const std::string& published, std::string_view type) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(r.body.rfind(published, 0) == 0);
    const std::string rest = r.body.substr(published.size());
    CHECK(rest.rfind("data: ", 0) == 0);
    CHECK(rest.find("\n\n") == rest.size() - 2);  // one event
    const auto error = last_data(r.body);
    REQUIRE(error.contains("error"));
    CHECK(error.at("error").at("type") == boost::json::value(type));
    CHECK(error.at("error").at("code") == 502);
}

}  // namespace

TEST_CASE("a key completed over three events of one read: the events before the completing one go out, then the "
          "closing error event, and its usage is not counted",
          "[boundary][stream]") {
    // One upstream write: the whole stream in one read (or a few: the
    // outcome is the same however it is read).
    const std::vector<std::string> published{role, text("Hello "),
                                             text("world: ", R"({"prompt_tokens":3,"completion_tokens":4})"),
                                             text(key_1), text(key_2)};
    const std::string completing = text(key_3, R"({"prompt_tokens":1000,"completion_tokens":2000})");
    const std::string after = text(" and more", R"({"prompt_tokens":5000,"completion_tokens":6000})");
    FakeProvider fake;
    fake.push(Script::sse({joined(published) + completing + after + text(" text.") + finish + done}));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_published_then_closed(r, joined(published), "credential_in_response");
    CHECK(r.body.find(key_3) == std::string::npos);
    CHECK(r.body.find("and more") == std::string::npos);
    CHECK(fake.request_count() == 1);

    REQUIRE(proxy->wait_for_records("turn", 1, 5s));
    const std::string metrics = scrape(*proxy);
    CAPTURE(metrics);
    CHECK(metric_value(metrics, R"(modelproxy_refusals_total{route="r",code="credential_in_response"})") == 1);
    CHECK(metric_value(metrics, R"(modelproxy_turns_total{route="r",outcome="refused"})") == 1);
    // Only the clean events' usage: the refused event's and the later ones' never count.
    CHECK(metric_value(metrics, R"(modelproxy_usage_tokens_total{route="r",kind="input"})") == 3);
    CHECK(metric_value(metrics, R"(modelproxy_usage_tokens_total{route="r",kind="output"})") == 4);
}

TEST_CASE("a key completed in the first answer-text event is refused before anything is published",
          "[boundary][stream]") {
    // The first event with answer text holds the key in two data lines (so
    // not in its raw bytes): it would publish the head and the held events,
    // but its answer text is scanned first.
    const std::string first_answer =
        "data: " + line(R"({"content":"key: )" + key_1 + R"("})") + "\ndata: " + line(R"({"content":")" + key_2 + key_3 + R"("})") + "\n\n";
    FakeProvider fake;
    fake.push(Script::sse({role + ": keep-alive\n\n" + first_answer + text(" more") + finish + done}));
    fake.set_default(Script::sse({role, text("Hello"), finish, done}));  // a retry would make this a 200
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(envelope_error(r).at("code") == boost::json::value("credential_in_response"));
    CHECK(r.wire.find("assistant") == std::string::npos);  // not even the held role event
    CHECK(r.wire.find(key_1) == std::string::npos);
    CHECK(fake.request_count() == 1);
}

TEST_CASE("a key completed after [DONE], in the same read, is still refused", "[boundary][stream]") {
    // Nothing after [DONE] is forwarded, but it is scanned (section 7): the
    // key's first piece before [DONE], its rest in an event after it.
    FakeProvider fake;
    fake.push(Script::sse({role + text("Hello ") + text(key_1) + finish + done + text(key_2 + key_3)}));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body.rfind(role + text("Hello ") + text(key_1) + finish, 0) == 0);
    CHECK(r.body.find(key_2) == std::string::npos);
    const auto error = last_data(r.body);
    REQUIRE(error.contains("error"));
    CHECK(error.at("error").at("type") == boost::json::value("credential_in_response"));
    REQUIRE(proxy->wait_for_records("turn", 1, 5s));
    CHECK(metric_value(scrape(*proxy), R"(modelproxy_refusals_total{route="r",code="credential_in_response"})") == 1);
}

namespace {

// An OpenAI chunk with the random `obfuscation` member it carries on every
// line. The relay reads such a line as the line before it with new values
// (sse/repeated_shape.hpp), without parsing it.
std::string obfuscated(std::string_view model, std::string_view content, std::string_view noise) {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","created":1741569952,"model":")" +
           std::string(model) + R"(","choices":[{"index":0,"delta":{"content":")" + std::string(content) +
           R"("},"logprobs":null,"finish_reason":null}],"obfuscation":")" + std::string(noise) + "\"}\n\n";
}

// Streams `published` and then `rest` once through a proxy, and checks that
// the client got exactly `published` and one closing error event of `type`,
// nothing of `absent`, after one upstream request.
void check_closed_after(const std::vector<std::string>& published, const std::string& rest, std::string_view type,
                        std::string_view absent) {
    FakeProvider fake;
    fake.push(Script::sse({joined(published) + rest}));
    auto proxy = start_proxy(one_route(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_published_then_closed(r, joined(published), type);
    CHECK(r.body.find(absent) == std::string::npos);
    CHECK(fake.request_count() == 1);
}

}  // namespace

TEST_CASE("chunks with a random obfuscation member: a key split across them is refused, and so are a line that "
          "is not JSON and a model that changes",
          "[boundary][stream]") {
    const std::vector<std::string> greeting{role, obfuscated("m", "Hello ", "a1"), obfuscated("m", " world", "Zq9x")};
    SECTION("a key over three chunks") {
        const std::vector<std::string> published{role, obfuscated("m", "Hello ", "a1"),
                                                 obfuscated("m", "key: ", "Zq9x"), obfuscated("m", key_1, "b"),
                                                 obfuscated("m", key_2, "QQQQQQ")};
        check_closed_after(published, obfuscated("m", key_3, "k") + obfuscated("m", " more", "x") + finish + done,
                           "credential_in_response", key_3);
    }
    SECTION("a line of the same shape that is not JSON") {
        // A raw control byte in the answer text, then a quote that ends it
        // early: the two ways a repeated line could hide a parse failure.
        for (const std::string bad : {std::string("a\x01b"), std::string(R"(x" "y)")}) {
            CAPTURE(bad);
            check_closed_after(greeting, obfuscated("m", bad, "x") + obfuscated("m", " text", "y") + finish + done,
                               "unparseable_event", " text");
        }
    }
    SECTION("another model after answer text") {
        check_closed_after(greeting, obfuscated("m2", " more", "x") + obfuscated("m", " text", "y") + finish + done,
                           "model_identity_mismatch", " more");
    }
}
