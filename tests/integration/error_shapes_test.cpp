// The proxy's own errors in shapes the SDKs read (docs/behaviour.md sections 7 and 9):
// the Responses API's error event closing a /responses stream, and on
// /v1/messages Anthropic's envelope for every answer the proxy makes itself
// (its failures and bad client input) and Anthropic's closing error event.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

// An OpenAI route for gpt-4o-mini and an Anthropic one for claude-3-5-haiku,
// one attempt per turn; `extra` holds more keys for both (indented by four).
std::string routes(const FakeProvider& fake, std::string_view extra = "", std::string_view top = "") {
    std::string yaml = std::string(top) + "retry: {max_attempts: 1, base_delay_ms: 5, min_attempt_ms: 10}\nroutes:\n";
    for (const auto& [name, dialect, model] : {std::tuple{"openai", "openai", "gpt-4o-mini"},
                                               std::tuple{"anthropic", "anthropic", "claude-3-5-haiku"}}) {
        yaml += std::string("  - name: ") + name + "\n    upstream: " + fake.base_url("/v1") + "\n    dialect: " +
                dialect + "\n    models: [" + model + "]\n" + std::string(extra);
    }
    return yaml;
}

const std::string messages_request =
    R"({"model":"claude-3-5-haiku","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";
const std::string messages_stream_request =
    R"({"model":"claude-3-5-haiku","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";

// Responses API events, each with its sequence_number.
std::string responses_event(std::string_view type, std::string_view rest, int sequence) {
    return "event: " + std::string(type) + "\ndata: {\"type\":\"" + std::string(type) +
           "\",\"sequence_number\":" + std::to_string(sequence) + "," + std::string(rest) + "}\n\n";
}

// The JSON of Anthropic's envelope {"type":"error","error":{...}}: its error
// object, after checking the shape.
boost::json::object anthropic_error(const Response& r) {
    CAPTURE(r.body);
    const auto doc = boost::json::parse(r.body).as_object();
    CHECK(doc.at("type") == "error");
    CHECK(doc.size() == 2);
    return doc.at("error").as_object();
}

// The last event of a stream: its `event:` line (or "") and its data's JSON.
std::pair<std::string, boost::json::object> last_event(const std::string& body) {
    CAPTURE(body);
    REQUIRE(body.ends_with("\n\n"));
    const std::size_t start = body.rfind("\n\n", body.size() - 3);
    const std::string event = body.substr(start == std::string::npos ? 0 : start + 2);
    const std::size_t data = event.find("data: ");
    REQUIRE(data != std::string::npos);
    return {event.substr(0, data), last_data(event)};
}

}  // namespace

TEST_CASE("a /responses stream cut after answer text ends with the Responses API's error event", "[error_shapes]") {
    FakeProvider fake;
    const std::vector<std::string> upstream{
        responses_event("response.created", R"("response":{"id":"r1","model":"gpt-4o-mini","status":"in_progress"})", 0),
        responses_event("response.output_text.delta", R"("output_index":0,"content_index":0,"delta":"Hel")", 1),
        responses_event("response.output_text.delta", R"("output_index":0,"content_index":0,"delta":"lo")", 2)};
    // A clean end without response.completed.
    fake.push(Script::sse(upstream, {.framing = SseFraming::close_delimited}));
    auto proxy = start_proxy(routes(fake));

    const Response r =
        proxy->client().post_json("/v1/responses", R"({"model":"gpt-4o-mini","stream":true,"input":"hi"})");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(r.body.rfind(upstream[0] + upstream[1] + upstream[2], 0) == 0);
    const auto [head, event] = last_event(r.body);
    CHECK(head == "event: error\n");
    CHECK(event.at("type") == "error");
    CHECK(event.at("code") == "stream_incomplete");
    CHECK(event.at("message").is_string());
    CHECK(event.at("param").is_null());
    CHECK(event.at("sequence_number") == 3);  // follows the last forwarded event's
    CHECK(event.at("class") == "stream-incomplete");
    CHECK(event.at("decision") == "terminal");
    CHECK(event.at("bound").is_null());
    CHECK(event.at("attempts") == 1);
    CHECK_FALSE(event.contains("error"));
}

TEST_CASE("a /messages stream cut after answer text ends with Anthropic's error event", "[error_shapes]") {
    FakeProvider fake;
    const std::string start =
        "event: message_start\ndata: "
        R"({"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"claude-3-5-haiku-20241022","content":[]}})"
        "\n\n";
    const std::string delta =
        "event: content_block_delta\ndata: "
        R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})"
        "\n\n";
    fake.push(Script::sse({start, delta}, {.end = SseEnd::close}));
    auto proxy = start_proxy(routes(fake));

    const Response r = proxy->client().post_json("/v1/messages", messages_stream_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    REQUIRE(r.body.rfind(start + delta, 0) == 0);
    const auto [head, event] = last_event(r.body);
    CHECK(head == "event: error\n");
    CHECK(event.at("type") == "error");
    const auto& error = event.at("error").as_object();
    CHECK(error.at("type") == "api_error");
    CHECK(error.at("message").is_string());
    CHECK(error.at("code") == "stream_incomplete");
    CHECK(error.at("attempts") == 1);
}

TEST_CASE("/v1/messages gets Anthropic's envelope when the upstream cannot answer", "[error_shapes]") {
    FakeProvider fake;
    SECTION("a dropped connection: 502 api_error") {
        fake.push(Script::refuse_head_then_close());
        auto proxy = start_proxy(routes(fake));
        const Response r = proxy->client().post_json("/v1/messages", messages_request);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 502);
        const auto error = anthropic_error(r);
        CHECK(error.at("type") == "api_error");
        CHECK(error.at("message").is_string());
        CHECK(error.at("code") == "connection_dropped");
        CHECK(error.at("class") == "network");
        CHECK(error.at("attempts") == 1);
        CHECK(error.at("decision").is_string());
    }
    SECTION("the deadline: 504 timeout_error") {
        fake.push(Script{}.hang());
        auto proxy = start_proxy(routes(fake, "    timeout_ms: 300\n"));
        const Response r = proxy->client().post_json("/v1/messages", messages_request);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 504);
        const auto error = anthropic_error(r);
        CHECK(error.at("type") == "timeout_error");
        CHECK(error.at("code") == "deadline");
        CHECK(error.at("bound") == "deadline");
    }
    SECTION("a refusal at the boundary: 502 api_error naming the model") {
        fake.push(Script::json(200, R"({"type":"message","model":"claude-3-opus","content":[]})"));
        auto proxy = start_proxy(routes(fake));
        const Response r = proxy->client().post_json("/v1/messages", messages_request);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 502);
        const auto error = anthropic_error(r);
        CHECK(error.at("type") == "api_error");
        CHECK(error.at("code") == "model_identity_mismatch");
        CHECK(std::string(error.at("message").as_string()).find("\"claude-3-opus\"") != std::string::npos);
    }
}

TEST_CASE("bad client input on /v1/messages gets Anthropic's envelope, elsewhere OpenAI's", "[error_shapes]") {
    FakeProvider fake;
    auto proxy = start_proxy(routes(fake, "", "clients: {tokens_env: TOKENS}\n"), {{"TOKENS", "t1"}});
    const Headers auth{{"Authorization", "Bearer t1"}};
    struct Row {
        std::string target, body;
        Headers headers;
        unsigned status;
        std::string type, code;
    };
    for (const Row& row : {
             Row{"/v1/messages", "{not json", auth, 400, "invalid_request_error", "invalid_json"},
             Row{"/v1/messages?beta=true", R"({"model":"nobody","max_tokens":1})", auth, 404, "not_found_error",
                 "model_not_found"},
             Row{"/v1/messages", messages_request, {}, 401, "authentication_error", "unauthorized"},
             Row{"/v1/messages/count_tokens", R"({"messages":[]})", auth, 400, "invalid_request_error",
                 "missing_model"},
         }) {
        CAPTURE(row.target, row.body);
        const Response r = proxy->client().post_json(row.target, row.body, row.headers);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == row.status);
        const auto error = anthropic_error(r);
        CHECK(error.at("type") == boost::json::value(row.type));
        CHECK(error.at("code") == boost::json::value(row.code));
        CHECK(error.at("message").is_string());
    }
    // The same mistake on an OpenAI path keeps OpenAI's envelope.
    const Response openai = proxy->client().post_json("/v1/chat/completions", "{not json", auth);
    CHECK(openai.status == 400);
    const auto error = envelope_error(openai);
    CHECK(error.at("type") == "invalid_request_error");
    CHECK(error.at("code") == "invalid_json");
    CHECK_FALSE(boost::json::parse(openai.body).as_object().contains("type"));
    CHECK(fake.request_count() == 0);
}
