// Model identity defaults (docs/behaviour.md section 3): a model listed by name accepts
// its upstream model and that model's dated snapshots, by the "*" route's
// rule, since providers answer an alias with a dated id; an explicit
// `accept` list replaces that default. A model_identity_mismatch names the
// model the upstream answered with and the accepted names, in its message
// and its attempt record (docs/behaviour.md section 9), bounded whatever the upstream
// sends.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;

// One openai route to `fake` serving `models` (a YAML flow list).
std::string one_route(const FakeProvider& fake, std::string_view models) {
    return "retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\nroutes:\n  - name: r\n    upstream: " +
           fake.base_url("/v1") + "\n    models: " + std::string(models) + "\n";
}

std::string chat_request(std::string_view model, bool stream = false) {
    return "{\"model\":\"" + std::string(model) + "\"," + (stream ? "\"stream\":true," : "") +
           R"("messages":[{"role":"user","content":"hi"}]})";
}

std::string chat_answer(std::string_view model) {
    return R"({"id":"c1","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}]})";
}

std::string chunk(std::string_view model, std::string_view delta) {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"delta":)" + std::string(delta) + "}]}\n\n";
}
std::string role(std::string_view model) { return chunk(model, R"({"role":"assistant"})"); }
std::string text(std::string_view model) { return chunk(model, R"({"content":"Hi"})"); }
std::string finish(std::string_view model) {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})" "\n\n";
}
const std::string done = "data: [DONE]\n\n";

// The one attempt record of the turn.
JsonRecord the_attempt(const ProxyProcess& proxy) {
    REQUIRE(proxy.wait_for_records("turn", 1, bound));
    auto attempts = attempt_records(proxy);
    REQUIRE(attempts.size() == 1);
    return attempts.front();
}

std::vector<std::string> strings(const boost::json::value& list) {
    std::vector<std::string> out;
    for (const auto& v : list.as_array()) out.emplace_back(v.as_string());
    return out;
}

}  // namespace

TEST_CASE("a model listed by name accepts its dated snapshot, whole and streamed", "[identity]") {
    FakeProvider fake;
    const std::string dated = "gpt-4o-mini-2024-07-18";
    const std::string body = chat_answer(dated);
    const std::vector<std::string> events{role(dated), text(dated), finish(dated), done};
    fake.push(Script::json(200, body));
    fake.push(Script::sse(events));
    auto proxy = start_proxy(one_route(fake, "[gpt-4o-mini]"));

    const Response whole = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o-mini"));
    CAPTURE(whole.wire);
    REQUIRE(whole.ok());
    CHECK(whole.status == 200);
    CHECK(whole.body == body);

    const Response streamed = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o-mini", true));
    CAPTURE(streamed.wire);
    REQUIRE(streamed.ok());
    CHECK(streamed.status == 200);
    CHECK(streamed.body == events[0] + events[1] + events[2] + events[3]);
    CHECK(fake.request_count() == 2);
}

TEST_CASE("the default never accepts a longer name: the refusal names both models", "[identity]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-4o-mini-2024-07-18")));
    auto proxy = start_proxy(one_route(fake, "[gpt-4o]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o"));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("code") == "model_identity_mismatch");
    const std::string message(error.at("message").as_string());
    CHECK(message ==
          "the upstream answered with model \"gpt-4o-mini-2024-07-18\", which this route does not accept "
          "(accepted: gpt-4o, gpt-4o-YYYY-MM-DD, gpt-4o-YYYYMMDD, gpt-4o-MMDD)");
    const JsonRecord attempt = the_attempt(*proxy);
    CAPTURE(attempt.line());
    CHECK(attempt.str("code") == "model_identity_mismatch");
    CHECK(attempt.str("answered_model") == "gpt-4o-mini-2024-07-18");
    CHECK(strings(attempt.object().at("accepted_models")) ==
          std::vector<std::string>{"gpt-4o", "gpt-4o-YYYY-MM-DD", "gpt-4o-YYYYMMDD", "gpt-4o-MMDD"});
}

TEST_CASE("an explicit accept list replaces the default", "[identity]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-4o-mini-2024-07-18")));
    auto proxy = start_proxy(one_route(fake, "[{name: gpt-4o-mini, accept: [gpt-4o-mini, other]}]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o-mini"));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(envelope_error(r).at("message") ==
          "the upstream answered with model \"gpt-4o-mini-2024-07-18\", which this route does not accept "
          "(accepted: gpt-4o-mini, other)");
    const JsonRecord attempt = the_attempt(*proxy);
    CHECK(strings(attempt.object().at("accepted_models")) == std::vector<std::string>{"gpt-4o-mini", "other"});
}

TEST_CASE("a foreign model after answer text: the closing error event names it", "[identity]") {
    FakeProvider fake;
    fake.push(Script::sse({role("m-2025-01-01"), text("m-2025-01-01"), text("x-1"), finish("x-1"), done}));
    auto proxy = start_proxy(one_route(fake, "[m]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m", true));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body.find("\"model\":\"x-1\"") == std::string::npos);
    const auto error = last_data(r.body).at("error").as_object();
    CHECK(error.at("type") == "model_identity_mismatch");
    CHECK(error.at("message") ==
          "the upstream answered with model \"x-1\", which this route does not accept "
          "(accepted: m, m-YYYY-MM-DD, m-YYYYMMDD, m-MMDD)");
    CHECK(the_attempt(*proxy).str("answered_model") == "x-1");
}

TEST_CASE("a hostile model name is bounded in the message and the record", "[identity]") {
    FakeProvider fake;
    const std::string hostile = std::string(20000, 'z') + "\\n\\u0000\\\"";  // JSON escapes: a newline, NUL, quote
    fake.push(Script::json(200, chat_answer(hostile)));
    auto proxy = start_proxy(one_route(fake, "[m]"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("m"));
    CAPTURE(r.wire.substr(0, 2000));
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(r.body.size() < 1024);
    const std::string message(envelope_error(r).at("message").as_string());
    CHECK(message.find(std::string(128, 'z') + "...") != std::string::npos);
    const JsonRecord attempt = the_attempt(*proxy);
    CHECK(attempt.line().size() < 1024);
    CHECK(attempt.str("answered_model") == std::string(128, 'z') + "...");
}
