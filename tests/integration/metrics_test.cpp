// GET /metrics through the real binary (docs/behaviour.md section 10): after a known set of
// turns the counters moved by exactly what the records say, histograms agree
// with the records' durations, the text passes `promtool check metrics`, and
// no request id or client-invented model name ever becomes a label value.
#include "support/fake_provider.hpp"

#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <sstream>
#include <string>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

// Two routes to one fake provider: "fake" serves gpt-4o-mini, "any" is the
// "*" route. One worker, so the pool gauges are deterministic.
std::string config_for(const FakeProvider& fake, std::string_view preamble = "") {
    return std::string(preamble) +
           "workers: 1\n"
           "retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\n"
           "routes:\n"
           "  - name: fake\n    upstream: " +
           fake.base_url("/v1") +
           "\n    models: [gpt-4o-mini]\n"
           "  - name: any\n    upstream: " +
           fake.base_url("/v1") + "\n    models: [\"*\"]\n";
}

std::string chat_request(std::string_view model, bool stream = false) {
    return "{\"model\":\"" + std::string(model) + "\"," + (stream ? "\"stream\":true," : "") +
           R"("messages":[{"role":"user","content":"hi"}]})";
}

std::string chat_answer(std::string_view model, int prompt_tokens, int completion_tokens) {
    return R"({"id":"c1","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],)"
           R"("usage":{"prompt_tokens":)" +
           std::to_string(prompt_tokens) + R"(,"completion_tokens":)" + std::to_string(completion_tokens) +
           R"(,"total_tokens":)" + std::to_string(prompt_tokens + completion_tokens) + "}}";
}

std::string chunk(std::string_view model, std::string_view delta) {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"delta":)" + std::string(delta) + R"(,"finish_reason":null}]})" + "\n\n";
}

// A chat stream whose last chunk carries the usage (stream_options.include_usage).
std::vector<std::string> chat_stream(std::string_view model, int prompt_tokens, int completion_tokens) {
    return {chunk(model, R"({"role":"assistant","content":""})"), chunk(model, R"({"content":"Hel"})"),
            chunk(model, R"({"content":"lo"})"),
            R"(data: {"id":"c1","object":"chat.completion.chunk","model":")" + std::string(model) +
                R"(","choices":[],"usage":{"prompt_tokens":)" + std::to_string(prompt_tokens) +
                R"(,"completion_tokens":)" + std::to_string(completion_tokens) + "}}\n\n",
            "data: [DONE]\n\n"};
}

// A Messages API stream: message_start names the input tokens, message_delta
// the cumulative output tokens.
std::vector<std::string> messages_stream(std::string_view model, int input_tokens, int output_tokens) {
    auto event = [](std::string_view name, const std::string& data) {
        return "event: " + std::string(name) + "\ndata: " + data + "\n\n";
    };
    return {event("message_start", R"({"type":"message_start","message":{"id":"m1","type":"message","role":)"
                                   R"("assistant","model":")" + std::string(model) +
                                       R"(","content":[],"usage":{"input_tokens":)" + std::to_string(input_tokens) +
                                       R"(,"output_tokens":1}}})"),
            event("content_block_start",
                  R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"),
            event("content_block_delta",
                  R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})"),
            event("content_block_stop", R"({"type":"content_block_stop","index":0})"),
            event("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":)"
                                   R"({"output_tokens":)" + std::to_string(output_tokens) + "}}"),
            event("message_stop", R"({"type":"message_stop"})")};
}


std::string scrape(const ProxyProcess& proxy) {
    const Response r = proxy.client().get("/metrics");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    REQUIRE(r.status == 200);
    CHECK(r.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
    return r.body;
}

// `promtool check metrics` (Debian package prometheus; deploy/setup installs
// it). Missing promtool fails the test: CI must run this check.
void check_with_promtool(const std::string& text) {
    CommandResult result;
    try {
        result = run_command({"promtool", "check", "metrics"}, {}, text, 10s);
    } catch (const std::exception& e) {
        FAIL("promtool did not run (" << e.what() << "): install the Debian package prometheus, as deploy/setup does");
    }
    INFO("promtool check metrics (install the Debian package prometheus, as deploy/setup does): exit "
         << result.exit_code << "\nstdout: " << result.out << "\nstderr: " << result.err);
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("problem") == std::string::npos);
    CHECK(result.err.find("problem") == std::string::npos);
}

struct RouteRecords {
    std::vector<JsonRecord> turns;
    std::vector<JsonRecord> attempts;
};

std::map<std::string, RouteRecords> records_by_route(const ProxyProcess& proxy) {
    std::map<std::string, RouteRecords> by_route;
    for (auto& record : proxy.records()) {
        const std::string route = record.str("route").value_or("");
        if (record.event() == "turn") by_route[route].turns.push_back(record);
        if (record.event() == "attempt") by_route[route].attempts.push_back(record);
    }
    return by_route;
}

// A histogram of `route` holds exactly `ms` (from the records): its count,
// its sum, and a few cumulative buckets.
void check_histogram(const std::string& text, const std::string& name, const std::string& route,
                     const std::vector<std::int64_t>& ms) {
    CAPTURE(name, route);
    const std::string labels = "{route=\"" + route + "\"}";
    std::int64_t sum = 0;
    for (auto v : ms) sum += v;
    CHECK(metric_value(text, name + "_count" + labels) == static_cast<double>(ms.size()));
    const auto scraped_sum = metric_value(text, name + "_sum" + labels);
    REQUIRE(scraped_sum);
    CHECK(*scraped_sum == Approx(static_cast<double>(sum) / 1000.0).margin(1e-9));
    const std::pair<std::string_view, std::int64_t> buckets[] = {{"0.005", 5}, {"0.1", 100}, {"1", 1000}, {"300", 300000}};
    for (const auto& [le, bound_ms] : buckets) {
        std::size_t within = 0;
        for (auto v : ms) within += v <= bound_ms ? 1 : 0;
        CHECK(metric_value(text, name + "_bucket{route=\"" + route + "\",le=\"" + std::string(le) + "\"}") ==
              static_cast<double>(within));
    }
    CHECK(metric_value(text, name + "_bucket{route=\"" + route + "\",le=\"+Inf\"}") == static_cast<double>(ms.size()));
}

}  // namespace

TEST_CASE("after known turns /metrics moved by exactly what the records say", "[metrics]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();

    // 1. ok on "fake".
    fake.push(Script::json(200, chat_answer("gpt-4o-mini", 11, 7)));
    Response r = client.post_json("/v1/chat/completions", chat_request("gpt-4o-mini"));
    REQUIRE(r.status == 200);
    // 2. a 503, replayed, then ok.
    fake.push(Script::json(503, R"({"error":{"type":"server_error","message":"busy"}})"));
    fake.push(Script::json(200, chat_answer("gpt-4o-mini", 5, 3)));
    r = client.post_json("/v1/chat/completions", chat_request("gpt-4o-mini"));
    REQUIRE(r.status == 200);
    REQUIRE(r.header("x-modelproxy-attempts") == "2");
    // 3. refused: another model answered (its usage still counts: it was spent).
    fake.push(Script::json(200, chat_answer("gpt-4o", 100, 200)));
    r = client.post_json("/v1/chat/completions", chat_request("gpt-4o-mini"));
    REQUIRE(r.status == 502);
    // 4. rejected before routing: not JSON.
    r = client.post_json("/v1/chat/completions", "{not json");
    REQUIRE(r.status == 400);
    // 5. a chat stream on the "*" route, for a model only the client knows,
    //    with a request id of its own.
    const std::string invented_model = "my-invented-model-7f3a";
    const std::string request_id = "req-metrics-label-check-91c2";
    fake.push(Script::sse(chat_stream(invented_model, 2, 4)));
    r = client.post_json("/v1/chat/completions", chat_request(invented_model, true), {{"x-request-id", request_id}});
    REQUIRE(r.status == 200);
    REQUIRE(r.body.find("[DONE]") != std::string::npos);
    // 6. a Messages stream on the "*" route.
    const std::string invented_claude = "claude-invented-2e5b";
    fake.push(Script::sse(messages_stream(invented_claude, 25, 15)));
    r = client.post_json("/v1/messages", chat_request(invented_claude, true));
    REQUIRE(r.status == 200);
    REQUIRE(r.body.find("message_stop") != std::string::npos);

    REQUIRE(proxy->wait_for_records("turn", 6, bound));
    const std::string text = scrape(*proxy);
    CAPTURE(text);

    CHECK(metric_value(text, R"(modelproxy_turns_total{route="fake",outcome="ok"})") == 2);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="fake",outcome="refused"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="fake",outcome="terminal"})") == 0);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="any",outcome="ok"})") == 2);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="",outcome="rejected"})") == 1);

    CHECK(metric_value(text, R"(modelproxy_attempts_total{route="fake",class="ok"})") == 2);
    CHECK(metric_value(text, R"(modelproxy_attempts_total{route="fake",class="server"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_attempts_total{route="fake",class="identity"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_attempts_total{route="fake",class="network"})") == 0);
    CHECK(metric_value(text, R"(modelproxy_attempts_total{route="any",class="ok"})") == 2);

    CHECK(metric_value(text, R"(modelproxy_refusals_total{route="fake",code="model_identity_mismatch"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_refusals_total{route="fake",code="credential_in_response"})") == 0);

    CHECK(metric_value(text, R"(modelproxy_usage_tokens_total{route="fake",kind="input"})") == 11 + 5 + 100);
    CHECK(metric_value(text, R"(modelproxy_usage_tokens_total{route="fake",kind="output"})") == 7 + 3 + 200);
    CHECK(metric_value(text, R"(modelproxy_usage_tokens_total{route="any",kind="input"})") == 2 + 25);
    CHECK(metric_value(text, R"(modelproxy_usage_tokens_total{route="any",kind="output"})") == 4 + 15);

    CHECK(metric_value(text, "modelproxy_inflight_turns") == 0);
    CHECK(metric_value(text, "modelproxy_connections") >= 1);  // at least the scrape's own
    CHECK(metric_value(text, R"(modelproxy_upstream_connections{route="fake",state="busy"})") == 0);
    CHECK(metric_value(text, R"(modelproxy_upstream_connections{route="any",state="busy"})") == 0);
    // Both routes share one pool (same upstream); its idle connection is
    // reported once, under the first route. The refused answer's connection
    // was closed, the last stream's went back to the pool.
    CHECK(metric_value(text, R"(modelproxy_upstream_connections{route="fake",state="idle"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_upstream_connections{route="any",state="idle"})") == 0);
    // Plain HTTP: every new connection counted under tls="none".
    CHECK(metric_value(text, R"(modelproxy_upstream_connects_total{route="fake",tls="none"})") >= 1);
    CHECK(metric_value(text, R"(modelproxy_upstream_connects_total{route="fake",tls="full"})") == 0);
    CHECK(metric_value(text, R"(modelproxy_upstream_connects_total{route="fake",tls="resumed"})") == 0);
    CHECK(metric_value(text, "process_resident_memory_bytes") > 0);
    CHECK(metric_value(text, "process_open_fds") > 0);

    // Retry waits and histograms: exactly the records' values.
    auto records = records_by_route(*proxy);
    for (const std::string route : {"fake", "any"}) {
        const RouteRecords& rr = records[route];
        std::int64_t delay = 0;
        std::vector<std::int64_t> durations, ttfts;
        for (const auto& a : rr.attempts) delay += a.integer("delay_ms").value_or(-1);
        for (const auto& t : rr.turns) {
            durations.push_back(t.integer("duration_ms").value_or(-1));
            if (auto ttft = t.integer("ttft_ms")) ttfts.push_back(*ttft);
        }
        CHECK(metric_value(text, "modelproxy_retry_wait_seconds_total{route=\"" + route + "\"}") ==
              Approx(static_cast<double>(delay) / 1000.0).margin(1e-9));
        check_histogram(text, "modelproxy_turn_duration_seconds", route, durations);
        check_histogram(text, "modelproxy_time_to_first_token_seconds", route, ttfts);
        CHECK(metric_value(text, "modelproxy_attempt_duration_seconds_count{route=\"" + route + "\"}") ==
              static_cast<double>(rr.attempts.size()));
    }
    CHECK(records["fake"].attempts.size() == 4);
    CHECK(records["fake"].turns.size() == 3);
    CHECK(records["fake"].attempts[1].integer("delay_ms") == 5);  // the wait after the 503

    // Label values are config names and fixed spellings only.
    CHECK(text.find(invented_model) == std::string::npos);
    CHECK(text.find(invented_claude) == std::string::npos);
    CHECK(text.find(request_id) == std::string::npos);
    // The only model label values are configured names (the breaker
    // families of docs/behaviour.md section 13).
    const std::string configured = "model=\"gpt-4o-mini\"";
    const std::string catch_all = "model=\"*\"";
    for (auto at = text.find("model=\""); at != std::string::npos; at = text.find("model=\"", at + 1))
        CHECK((text.compare(at, configured.size(), configured) == 0 || text.compare(at, catch_all.size(), catch_all) == 0));
    CHECK(text.find("modelproxy_breaker_state{route=\"any\",model=\"*\"} 0") != std::string::npos);
    CHECK(text.find("modelproxy_breaker_state{route=\"fake\",model=\"gpt-4o-mini\"} 0") != std::string::npos);

    check_with_promtool(text);
}

TEST_CASE("a refusal after publication is recorded refused and counted as one", "[metrics]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    // Answer text from the accepted model, then an event naming another.
    fake.push(Script::sse({chunk("gpt-4o-mini", R"({"role":"assistant","content":"Hi"})"),
                           chunk("gpt-4o", R"({"content":" there"})"), "data: [DONE]\n\n"}));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o-mini", true));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body.find("model_identity_mismatch") != std::string::npos);  // the closing error event
    const auto turn = proxy->wait_for_record([](const JsonRecord& j) { return j.event() == "turn"; }, bound);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "refused");
    CHECK(turn->str("code") == "model_identity_mismatch");
    CHECK(turn->boolean("published") == true);

    const std::string text = scrape(*proxy);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="fake",outcome="refused"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="fake",outcome="terminal"})") == 0);
    CHECK(metric_value(text, R"(modelproxy_refusals_total{route="fake",code="model_identity_mismatch"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_time_to_first_token_seconds_count{route="fake"})") == 1);
}

TEST_CASE("/metrics needs no client token, answers HEAD, and refuses other methods", "[metrics]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "clients:\n  tokens_env: MP_TEST_CLIENT_TOKENS\n"),
                             {{"MP_TEST_CLIENT_TOKENS", "tok-alpha"}});
    // A turn without a token is refused (and counted as rejected)...
    Response r = proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o-mini"));
    REQUIRE(r.status == 401);
    REQUIRE(proxy->wait_for_records("turn", 1, bound));
    // ... while /metrics needs none.
    const std::string text = scrape(*proxy);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="",outcome="rejected"})") == 1);
    CHECK(text.find("tok-alpha") == std::string::npos);

    HttpClient client = proxy->client();
    r = client.request("HEAD", "/metrics");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body.empty());
    CHECK(r.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");

    r = client.request("POST", "/metrics", {}, "{}");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 405);
    CHECK(r.header("allow") == "GET, HEAD");
}

TEST_CASE("counters survive a reload, a removed route keeps its values, a new one starts at 0", "[metrics]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    fake.push(Script::json(200, chat_answer("gpt-4o-mini", 1, 1)));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o-mini")).status == 200);

    // The new generation renames "any" to "rest"; "fake" stays.
    proxy->write_config("workers: 1\nroutes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") +
                        "\n    models: [gpt-4o-mini]\n  - name: rest\n    upstream: " + fake.base_url("/v1") +
                        "\n    models: [\"*\"]\n");
    REQUIRE(proxy->signal(SIGHUP));
    REQUIRE(proxy->wait_for_stderr_line(
        [](const std::string& line) { return line.find("config reloaded") != std::string::npos; }, bound));
    fake.push(Script::json(200, chat_answer("gpt-4o-mini", 1, 1)));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat_request("gpt-4o-mini")).status == 200);

    const std::string text = scrape(*proxy);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="fake",outcome="ok"})") == 2);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="any",outcome="ok"})") == 0);
    CHECK(metric_value(text, R"(modelproxy_turns_total{route="rest",outcome="ok"})") == 0);
    check_with_promtool(text);
}
