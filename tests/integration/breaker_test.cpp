// Circuit breakers through the real binary (docs/behaviour.md section 13):
// what opens one, what never counts, the half-open probes, and where turns
// go meanwhile. Open times are tens of milliseconds; waits poll a condition
// under a bound.
#include "support/fake_provider.hpp"

#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;

// `max_attempts` (and the throttled bound) 1 unless given: a fall-over is an
// attempt too (one counter per turn).
std::string route(std::string_view name, const FakeProvider& fake, std::string_view models,
                  std::string_view breaker, int max_attempts = 1) {
    std::string yaml = "  - name: ";
    yaml += name;
    yaml += "\n    upstream: " + fake.base_url("/v1") + "\n    models: ";
    yaml += models;
    yaml += "\n    retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10, max_attempts: " +
            std::to_string(max_attempts) + ", throttled_max_attempts: " + std::to_string(max_attempts) +
            "}\n    breaker: ";
    yaml += breaker;
    yaml += "\n";
    return yaml;
}

std::string chat(std::string_view model) {
    return std::string(R"({"model":")") + std::string(model) + R"(","messages":[{"role":"user","content":"hi"}]})";
}

std::string chat_answer(std::string_view model) {
    return std::string(R"({"id":"chatcmpl-1","object":"chat.completion","model":")") + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

const std::string server_error = R"({"error":{"message":"overloaded","type":"server_error","code":null}})";

std::vector<JsonRecord> breaker_records(const ProxyProcess& proxy) {
    std::vector<JsonRecord> out;
    for (auto& r : proxy.records())
        if (r.event() == "breaker") out.push_back(std::move(r));
    return out;
}

// Two routes: "east" (the primary, gpt-4o) with `breaker`, "west" (its fallback, gpt-4o-mini).
std::string primary_and_fallback(const FakeProvider& primary, const FakeProvider& backup, std::string_view breaker) {
    return "routes:\n" + route("east", primary, "[gpt-4o]", breaker, 2) +
           route("west", backup, "[gpt-4o-mini]", "{enabled: false}") +
           "models:\n  - name: gpt-4o\n    attempts_per_candidate: 1\n    fallbacks: [gpt-4o-mini]\n";
}

}  // namespace

TEST_CASE("consecutive failures open the breaker, then turns skip the primary, then after open_ms one probe closes it",
          "[breaker]") {
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    backup.set_default(Script::json(200, chat_answer("gpt-4o-mini")));
    auto proxy = start_proxy(primary_and_fallback(
        primary, backup, "{consecutive_failures: 2, open_ms: 200, max_open_ms: 1000, probes: 1}"));

    for (int i = 0; i < 2; ++i) {
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
        REQUIRE(r.ok());
        CHECK(r.header("x-modelproxy-route") == "west");
    }
    REQUIRE(primary.request_count() == 2);
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    auto transitions = breaker_records(*proxy);
    REQUIRE(transitions.size() == 1);
    CHECK(transitions[0].str("route") == "east");
    CHECK(transitions[0].str("model") == "gpt-4o");
    CHECK(transitions[0].str("from") == "closed");
    CHECK(transitions[0].str("to") == "open");
    CHECK(transitions[0].str("reason") == "consecutive");
    CHECK(transitions[0].integer("open_ms") == 200);

    // Open: new turns start on the fallback; the primary sees nothing.
    const Response skipped = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    REQUIRE(skipped.ok());
    CHECK(skipped.header("x-modelproxy-route") == "west");
    CHECK(skipped.header("x-modelproxy-attempts") == "1");
    CHECK(primary.request_count() == 2);

    // The primary recovers; once the open time has passed, a turn probes it.
    primary.set_default(Script::json(200, chat_answer("gpt-4o")));
    bool back = false;
    const auto until = std::chrono::steady_clock::now() + bound;
    while (!back && std::chrono::steady_clock::now() < until) {
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
        REQUIRE(r.ok());
        back = r.header("x-modelproxy-route") == "east";
        if (!back) std::this_thread::sleep_for(20ms);
    }
    REQUIRE(back);
    REQUIRE(proxy->wait_for_records("breaker", 3, bound));
    transitions = breaker_records(*proxy);
    REQUIRE(transitions.size() == 3);
    CHECK(transitions[1].str("from") == "open");
    CHECK(transitions[1].str("to") == "half-open");
    CHECK(transitions[1].str("reason") == "timer");
    CHECK(transitions[2].str("from") == "half-open");
    CHECK(transitions[2].str("to") == "closed");
    CHECK(transitions[2].str("reason") == "probe-ok");
}

TEST_CASE("a caller's own errors and rate limits never open a breaker, a 5xx does", "[breaker]") {
    FakeProvider fake;
    fake.push(Script::json(400, R"({"error":{"message":"bad","type":"invalid_request_error","code":null}})"));
    fake.push(Script::json(401, R"({"error":{"message":"no","type":"invalid_request_error","code":"invalid_api_key"}})"));
    fake.push(Script::json(404, R"({"error":{"message":"none","type":"invalid_request_error","code":null}})"));
    fake.push(Script::json(429, R"({"error":{"message":"slow","type":"requests","code":"rate_limit_exceeded"}})"));
    fake.push(Script::json(503, server_error));
    auto proxy = start_proxy("routes:\n" + route("solo", fake, "[gpt-4o]", "{consecutive_failures: 1}"));
    for (int i = 0; i < 4; ++i) REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("turn", 4, bound));
    CHECK(breaker_records(*proxy).empty());
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    const auto transitions = breaker_records(*proxy);
    REQUIRE(transitions.size() == 1);
    CHECK(transitions[0].str("to") == "open");
}

TEST_CASE("a single candidate's open breaker never fails a turn: the turn is still sent", "[breaker]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error));
    fake.set_default(Script::json(200, chat_answer("gpt-4o")));
    auto proxy = start_proxy("routes:\n" + route("solo", fake, "[gpt-4o]", "{consecutive_failures: 1, open_ms: 60000, max_open_ms: 60000}"));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(fake.request_count() == 2);
    // /readyz is not the breaker's business.
    CHECK(proxy->client().get("/readyz").status == 200);
}

TEST_CASE("half-open admits exactly `probes` probes at once, the others go to the fallback", "[breaker]") {
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    backup.set_default(Script::json(200, chat_answer("gpt-4o-mini")));
    auto proxy = start_proxy(primary_and_fallback(
        primary, backup, "{consecutive_failures: 1, open_ms: 100, max_open_ms: 100, probes: 2}"));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    // Slow successes while half-open: probes stay in flight for 400 ms.
    primary.set_default(Script().sleep(400ms).then(Script::json(200, chat_answer("gpt-4o"))));
    std::this_thread::sleep_for(150ms);  // past the 100 ms open time (a lower bound, not a race)
    std::vector<std::future<std::string>> routes;
    for (int i = 0; i < 4; ++i) {
        routes.push_back(std::async(std::launch::async, [&proxy] {
            const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
            return r.header("x-modelproxy-route").value_or("");
        }));
        std::this_thread::sleep_for(20ms);  // in order, all while the probes run
    }
    int east = 0, west = 0;
    for (auto& f : routes) {
        const std::string r = f.get();
        east += r == "east";
        west += r == "west";
    }
    CHECK(east == 2);
    CHECK(west == 2);
    CHECK(primary.request_count() == 3);  // the failure that opened it, and two probes
}

TEST_CASE("fail_fast: with no wait that fits, 503 circuit_open with Retry-After, nothing sent", "[breaker]") {
    FakeProvider fake;
    fake.set_default(Script::json(503, server_error));
    auto proxy = start_proxy("routes:\n" +
                             route("solo", fake, "[gpt-4o]",
                                   "{consecutive_failures: 1, open_ms: 30000, max_open_ms: 30000, fail_fast: true}\n"
                                   "    timeout_ms: 2000"));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 503);
    CHECK(r.body.find("\"circuit_open\"") != std::string::npos);
    CHECK(r.header("x-modelproxy-error-class") == "server");
    CHECK(r.header("x-modelproxy-decision") == "unavailable");
    CHECK(r.header("x-modelproxy-attempts") == "0");
    CHECK(r.header("x-should-retry") == "false");
    // Whole seconds until the half-open, rounded up: 30 at most, and more than 28.
    const int retry_after = std::stoi(r.header("retry-after").value_or("-1"));
    CHECK(retry_after <= 30);
    CHECK(retry_after >= 29);
    CHECK(fake.request_count() == 1);
    REQUIRE(proxy->wait_for_records("turn", 2, bound));
    std::optional<JsonRecord> last;
    for (auto& rec : proxy->records())
        if (rec.event() == "turn") last = rec;
    REQUIRE(last);
    CHECK(last->str("outcome") == "unavailable");
    CHECK(last->str("code") == "circuit_open");
    CHECK(last->integer("attempts") == 0);
    CHECK(last->integer("status") == 503);
}

TEST_CASE("fail_fast: a half-open that fits in the deadline is waited for, and the turn is its probe", "[breaker]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error));
    fake.set_default(Script::json(200, chat_answer("gpt-4o")));
    auto proxy = start_proxy("routes:\n" +
                             route("solo", fake, "[gpt-4o]",
                                   "{consecutive_failures: 1, open_ms: 300, max_open_ms: 300, fail_fast: true}"));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    const auto sent = std::chrono::steady_clock::now();
    const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(fake.request_count() == 2);
    // It waited for the half-open (a lower bound: the open time had not passed when it came).
    CHECK(std::chrono::steady_clock::now() - sent >= 100ms);
    REQUIRE(proxy->wait_for_records("breaker", 3, bound));
    const auto transitions = breaker_records(*proxy);
    CHECK(transitions[1].str("to") == "half-open");
    CHECK(transitions[2].str("reason") == "probe-ok");
}

TEST_CASE("/metrics counts the breaker's transitions, the fall-overs and the cooldowns", "[breaker][metrics]") {
    FakeProvider primary, backup;
    primary.push(Script::json(429, R"({"error":{"message":"slow","type":"requests","code":"rate_limit_exceeded"}})",
                              {{"Retry-After", "0"}}));
    primary.set_default(Script::json(503, server_error));
    backup.set_default(Script::json(200, chat_answer("gpt-4o-mini")));
    auto proxy = start_proxy(primary_and_fallback(
        primary, backup, "{consecutive_failures: 1, open_ms: 60000, max_open_ms: 60000}"));
    // A 429 (falls over, cooldown of 0 s), then a 503 (falls over, opens the breaker).
    for (int i = 0; i < 2; ++i) REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    const std::string text = proxy->client().get("/metrics").body;
    CAPTURE(text);
    CHECK(metric_value(text, R"(modelproxy_fallbacks_total{model="gpt-4o",to="gpt-4o-mini"})") == 2);
    CHECK(metric_value(text, R"(modelproxy_cooldowns_total{route="east"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_cooldowns_total{route="west"})") == 0);
    CHECK(metric_value(text, R"(modelproxy_breaker_transitions_total{route="east",model="gpt-4o",to="open"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_breaker_state{route="east",model="gpt-4o"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_breaker_state{route="west",model="gpt-4o-mini"})") == 0);
}

TEST_CASE("the failure ratio opens the breaker once min_attempts counted attempts are in the window",
          "[breaker]") {
    FakeProvider fake;
    for (int i = 0; i < 2; ++i) {
        fake.push(Script::json(200, chat_answer("gpt-4o")));
        fake.push(Script::json(503, server_error));
    }
    auto proxy = start_proxy(
        "routes:\n" +
        route("solo", fake, "[gpt-4o]", "{consecutive_failures: 1000, failure_ratio: 0.5, min_attempts: 4, window_ms: 60000}"));
    for (int i = 0; i < 3; ++i) REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("turn", 3, bound));
    CHECK(breaker_records(*proxy).empty());  // 1 failure in 3: under min_attempts
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    const auto transitions = breaker_records(*proxy);
    REQUIRE(transitions.size() == 1);
    CHECK(transitions[0].str("to") == "open");
    CHECK(transitions[0].str("reason") == "ratio");
}

TEST_CASE("a first-token timeout falls over but never counts against the slow candidate's breaker",
          "[breaker][timers]") {
    FakeProvider primary, backup;
    SseOptions slow;
    slow.delay = 80ms;
    primary.set_default(Script::sse({": keep-alive\n\n", ": keep-alive\n\n", ": keep-alive\n\n", ": keep-alive\n\n",
                                     "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
                                     "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"late\"}}]}\n\n",
                                     "data: [DONE]\n\n"},
                                    slow));
    backup.set_default(Script::sse({"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\","
                                    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"quick\"}}]}\n\n",
                                    "data: [DONE]\n\n"}));
    auto proxy = start_proxy(primary_and_fallback(primary, backup,
                                                  "{consecutive_failures: 1}\n    first_token_timeout_ms: 100"));
    const std::string body = R"({"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]})";
    for (int i = 0; i < 2; ++i) {
        const Response r = proxy->client().post_json("/v1/chat/completions", body);
        REQUIRE(r.ok());
        CHECK(r.body.find("quick") != std::string::npos);
    }
    REQUIRE(proxy->wait_for_records("turn", 2, bound));
    CHECK(primary.request_count() == 2);  // still closed: the second turn tried it again
    CHECK(breaker_records(*proxy).empty());
}

TEST_CASE("a client that leaves and a turn the deadline cuts never count against the breaker, a 5xx does",
          "[breaker]") {
    FakeProvider fake;
    fake.push(Script().hang());  // the client leaves while this attempt runs
    fake.push(Script().hang());  // the turn deadline cuts this one
    fake.push(Script::json(503, server_error));
    auto proxy = start_proxy("routes:\n" + route("solo", fake, "[gpt-4o]", "{consecutive_failures: 1}\n    timeout_ms: 300"));

    {
        auto client = proxy->client();
        REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                          chat("gpt-4o")));
        REQUIRE(fake.wait_for_requests(1, bound));
        client.close();
    }
    REQUIRE(proxy->wait_for_records("turn", 1, bound));
    const Response cut = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    REQUIRE(cut.ok());
    CHECK(cut.status == 504);
    REQUIRE(proxy->wait_for_records("turn", 2, bound));
    std::vector<JsonRecord> turns;
    for (auto& r : proxy->records())
        if (r.event() == "turn") turns.push_back(std::move(r));
    REQUIRE(turns.size() == 2);
    CHECK(turns[0].str("outcome") == "cancelled");
    CHECK(turns[1].str("bound") == "deadline");
    CHECK(breaker_records(*proxy).empty());

    // The same breaker opens on one counted failure: the two above were not.
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("gpt-4o")).ok());
    REQUIRE(proxy->wait_for_records("breaker", 1, bound));
    const auto transitions = breaker_records(*proxy);
    REQUIRE(transitions.size() == 1);
    CHECK(transitions[0].str("to") == "open");
    CHECK(fake.request_count() == 3);
}
