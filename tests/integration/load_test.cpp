// The turn under load through the real binary (docs/behaviour.md section
// 14): the retry budget across turns, adaptive admission with its queue, and
// the pacing on a provider's rate-limit headers. Waits are tens or hundreds
// of milliseconds; timing is only ever asserted as a lower bound.
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

// One route "solo" serving gpt-4o, with these retry and admission settings.
std::string solo(const FakeProvider& fake, std::string_view retry, std::string_view admission = "{enabled: false}") {
    std::string yaml = "routes:\n  - name: solo\n    upstream: " + fake.base_url("/v1") + "\n    models: [gpt-4o]\n";
    yaml += "    retry: ";
    yaml += retry;
    yaml += "\n    admission: ";
    yaml += admission;
    yaml += "\n";
    return yaml;
}

const std::string chat = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";
const std::string messages_request =
    R"({"model":"gpt-4o","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";
const std::string answer = R"({"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o",)"
                           R"("choices":[{"index":0,"message":{"role":"assistant","content":"hello"},)"
                           R"("finish_reason":"stop"}]})";
const std::string server_error = R"({"error":{"message":"overloaded","type":"server_error","code":null}})";
const std::string rate_limited =
    R"({"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}})";

std::vector<JsonRecord> records_of(const ProxyProcess& proxy, std::string_view event) {
    std::vector<JsonRecord> out;
    for (auto& r : proxy.records())
        if (r.event() == event) out.push_back(std::move(r));
    return out;
}

std::optional<double> metric(ProxyProcess& proxy, const std::string& series) {
    return metric_value(proxy.client().get("/metrics").body, series);
}

// Polls /metrics until `series` equals `value`, within `limit`.
bool wait_metric(ProxyProcess& proxy, const std::string& series, double value, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    do {
        if (metric(proxy, series) == value) return true;
        std::this_thread::sleep_for(20ms);
    } while (std::chrono::steady_clock::now() < until);
    return false;
}

}  // namespace

TEST_CASE("the retry budget refuses a replay beyond it: the turn ends on its answer, bound retry_budget",
          "[load][budget]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error), 2);
    fake.set_default(Script::json(200, answer));
    // One replay in flight at most on the route; a replay waits 400 ms, so
    // the second turn's replay is asked for while the first one's holds it.
    auto proxy = start_proxy(solo(fake, "{budget_ratio: 0, budget_min_concurrency: 1, base_delay_ms: 400, "
                                        "max_delay_ms: 400, min_attempt_ms: 10}"));
    auto send = [&proxy] { return proxy->client().post_json("/v1/chat/completions", chat); };
    auto first = std::async(std::launch::async, send);
    REQUIRE(fake.wait_for_requests(1, bound));
    auto second = std::async(std::launch::async, send);
    const Response a = first.get();
    const Response b = second.get();
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    // Whichever replayed first got the 200; the other was refused its replay.
    const Response& replayed = a.status == 200 ? a : b;
    const Response& refused = a.status == 200 ? b : a;
    CHECK(replayed.status == 200);
    CHECK(replayed.header("x-modelproxy-attempts") == "2");
    CHECK(refused.status == 503);
    CHECK(refused.header("x-modelproxy-decision") == "exhausted");
    CHECK(refused.header("x-modelproxy-bound") == "retry_budget");
    CHECK(refused.header("x-modelproxy-attempts") == "1");
    CHECK(refused.body == server_error);  // the upstream's answer, passed on
    CHECK(fake.request_count() == 3);
    REQUIRE(proxy->wait_for_records("turn", 2, bound));
    int budget_bound = 0;
    for (const auto& t : records_of(*proxy, "turn")) budget_bound += t.str("bound") == "retry_budget";
    CHECK(budget_bound == 1);
    CHECK(metric(*proxy, R"(modelproxy_retry_budget_refusals_total{route="solo"})") == 1);
}

TEST_CASE("budget_ratio 0 with budget_min_concurrency 0 turns replays off", "[load][budget]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error));
    fake.set_default(Script::json(200, answer));
    auto proxy = start_proxy(solo(fake, "{budget_ratio: 0, budget_min_concurrency: 0, base_delay_ms: 5}"));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat);
    REQUIRE(r.ok());
    CHECK(r.status == 503);
    CHECK(r.header("x-modelproxy-bound") == "retry_budget");
    CHECK(fake.request_count() == 1);
}

TEST_CASE("the section 14 defaults leave a lone client its replays", "[load][budget]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error), 2);
    fake.set_default(Script::json(200, answer));
    auto proxy = start_proxy(solo(fake, "{base_delay_ms: 5, max_delay_ms: 10, min_attempt_ms: 10}"));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-attempts") == "3");
}

TEST_CASE("admission: the limit falls on a 429 and grows back by one per quiet second", "[load][admission]") {
    FakeProvider fake;
    fake.push(Script::json(429, rate_limited));
    fake.set_default(Script::json(200, answer));
    auto proxy = start_proxy(solo(fake, "{max_attempts: 1, throttled_max_attempts: 1}",
                                  "{enabled: true, initial_limit: 10, min_limit: 1, max_limit: 10, decrease: 0.5}"));
    const std::string series = R"(modelproxy_admission_limit{route="solo"})";
    CHECK(metric(*proxy, series) == 10);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat);
    REQUIRE(r.ok());
    CHECK(r.status == 429);
    CHECK(metric(*proxy, series) == 5);  // 10 x 0.5^1
    // Quiet seconds add one each: back to 10 within about five seconds.
    CHECK(wait_metric(*proxy, series, 10, 8s));
}

TEST_CASE("admission: a turn with no slot in queue_timeout_ms gets 429 admission_timeout, nothing sent",
          "[load][admission]") {
    FakeProvider fake;
    fake.set_default(Script().sleep(1500ms).then(Script::json(200, answer)));
    auto proxy = start_proxy(solo(fake, "{}",
                                  "{enabled: true, initial_limit: 1, min_limit: 1, max_limit: 1, "
                                  "queue_timeout_ms: 200}"));
    auto held = std::async(std::launch::async, [&proxy] { return proxy->client().post_json("/v1/chat/completions", chat); });
    REQUIRE(fake.wait_for_requests(1, bound));

    SECTION("chat completions: the OpenAI envelope") {
        const Response r = proxy->client().post_json("/v1/chat/completions", chat);
        REQUIRE(r.ok());
        CHECK(r.status == 429);
        CHECK(r.header("retry-after") == "1");
        CHECK(r.header("x-modelproxy-decision") == "rejected");
        CHECK(r.header("x-modelproxy-error-class") == "rate-limit");
        CHECK(r.header("x-modelproxy-attempts") == "0");
        CHECK(r.body.find(R"("code":"admission_timeout")") != std::string::npos);
    }
    SECTION("messages: Anthropic's rate_limit_error") {
        const Response r = proxy->client().post_json("/v1/messages", messages_request);
        REQUIRE(r.ok());
        CHECK(r.status == 429);
        CHECK(r.body.find(R"("type":"rate_limit_error")") != std::string::npos);
    }
    CHECK(fake.request_count() == 1);
    CHECK(held.get().status == 200);
    REQUIRE(proxy->wait_for_records("turn", 2, bound));
    const auto turns = records_of(*proxy, "turn");
    int rejected = 0;
    for (const auto& t : turns) rejected += t.str("outcome") == "rejected";
    CHECK(rejected == 1);
    // Nothing was sent for the rejected turn: one attempt record in all.
    CHECK(records_of(*proxy, "attempt").size() == 1);
    CHECK(metric(*proxy, R"(modelproxy_admission_rejections_total{route="solo"})") == 1);
}

TEST_CASE("admission: waiters go in arrival order, and a client that leaves the queue frees its place at once",
          "[load][admission]") {
    FakeProvider fake;
    fake.push(Script().sleep(800ms).then(Script::json(200, answer)));
    fake.set_default(Script::json(200, answer));
    auto proxy = start_proxy(solo(fake, "{}",
                                  "{enabled: true, initial_limit: 1, min_limit: 1, max_limit: 1, "
                                  "queue_timeout_ms: 5000}"));
    const std::string queued = R"(modelproxy_admission_queued{route="solo"})";
    auto holder = std::async(std::launch::async, [&proxy] { return proxy->client().post_json("/v1/chat/completions", chat); });
    REQUIRE(fake.wait_for_requests(1, bound));

    // A client queues, then leaves.
    {
        auto leaving = proxy->client();
        REQUIRE_FALSE(leaving.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}}, chat));
        REQUIRE(wait_metric(*proxy, queued, 1, bound));
        leaving.close();
    }
    CHECK(wait_metric(*proxy, queued, 0, bound));  // its place is gone before the slot frees
    REQUIRE(proxy->wait_for_records("turn", 1, bound));
    CHECK(records_of(*proxy, "turn")[0].str("outcome") == "cancelled");

    // The next waiter gets the slot when the holder's attempt ends.
    auto next = std::async(std::launch::async, [&proxy] { return proxy->client().post_json("/v1/chat/completions", chat); });
    REQUIRE(wait_metric(*proxy, queued, 1, bound));
    CHECK(fake.request_count() == 1);
    CHECK(holder.get().status == 200);
    const Response r = next.get();
    CHECK(r.status == 200);
    CHECK(fake.request_count() == 2);  // the client that left sent nothing
}

TEST_CASE("pacing: x-ratelimit-remaining-requests 0 holds the next attempt until x-ratelimit-reset-requests",
          "[load][pacing]") {
    FakeProvider fake;
    fake.push(Script::json(200, answer, {{"x-ratelimit-remaining-requests", "0"},
                                         {"x-ratelimit-reset-requests", "600ms"}}));
    fake.set_default(Script::json(200, answer));
    auto proxy = start_proxy(solo(fake, "{}", "{enabled: true}"));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat).status == 200);
    CHECK(proxy->client().post_json("/v1/chat/completions", chat).status == 200);
    const auto requests = fake.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[1].received_at - requests[0].received_at >= 550ms);
    CHECK(metric(*proxy, R"(modelproxy_ratelimit_holds_total{route="solo"})") == 1);
}

TEST_CASE("pacing: Anthropic's requests-remaining 0 holds until its reset, read against the answer's Date",
          "[load][pacing]") {
    FakeProvider fake;
    // The reset is one second after the answer's own Date, whatever the clocks say.
    fake.push(Script::json(200, answer, {{"date", "Wed, 02 Dec 2026 10:00:00 GMT"},
                                         {"anthropic-ratelimit-requests-remaining", "0"},
                                         {"anthropic-ratelimit-requests-reset", "2026-12-02T10:00:01Z"}}));
    fake.set_default(Script::json(200, answer));
    auto proxy = start_proxy(solo(fake, "{}", "{enabled: true}"));
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat).status == 200);
    CHECK(proxy->client().post_json("/v1/chat/completions", chat).status == 200);
    const auto requests = fake.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[1].received_at - requests[0].received_at >= 950ms);
}

TEST_CASE("pacing: a hold longer than queue_timeout_ms answers at once with its Retry-After, none without pacing",
          "[load][pacing]") {
    FakeProvider fake;
    const Headers held{{"x-ratelimit-remaining-requests", "0"}, {"x-ratelimit-reset-requests", "2.5s"}};
    fake.push(Script::json(200, answer, held));
    fake.set_default(Script::json(200, answer));

    SECTION("honoured") {
        auto proxy = start_proxy(solo(fake, "{}", "{enabled: true, queue_timeout_ms: 300}"));
        REQUIRE(proxy->client().post_json("/v1/chat/completions", chat).status == 200);
        const Response r = proxy->client().post_json("/v1/chat/completions", chat);
        CHECK(r.status == 429);
        CHECK(r.header("retry-after") == "3");
        CHECK(r.body.find(R"("code":"admission_timeout")") != std::string::npos);
        CHECK(fake.request_count() == 1);
    }
    SECTION("honour_ratelimit_headers: false") {
        auto proxy = start_proxy(solo(fake, "{}", "{enabled: true, queue_timeout_ms: 300, honour_ratelimit_headers: false}"));
        REQUIRE(proxy->client().post_json("/v1/chat/completions", chat).status == 200);
        CHECK(proxy->client().post_json("/v1/chat/completions", chat).status == 200);
        CHECK(fake.request_count() == 2);
    }
}

TEST_CASE("a replay the budget refuses falls over at once to a later usable candidate", "[load][budget]") {
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    std::string mini = answer;
    mini.replace(mini.find("gpt-4o"), 6, "gpt-4o-mini");
    backup.set_default(Script::json(200, mini));
    auto proxy = start_proxy("routes:\n  - name: east\n    upstream: " + primary.base_url("/v1") +
                             "\n    models: [gpt-4o]\n    retry: {budget_ratio: 0, budget_min_concurrency: 0}\n"
                             "  - name: west\n    upstream: " + backup.base_url("/v1") +
                             "\n    models: [gpt-4o-mini]\nmodels:\n  - name: gpt-4o\n    fallbacks: [gpt-4o-mini]\n");
    const Response r = proxy->client().post_json("/v1/chat/completions", chat);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-route") == "west");
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(primary.request_count() == 1);  // attempts_per_candidate 2, but no replay in the budget
    REQUIRE(proxy->wait_for_records("turn", 1, bound));
    const auto attempts = records_of(*proxy, "attempt");
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].str("decision") == "fallback");
}

TEST_CASE("admission: a replay that gets no slot in time passes the upstream's answer on, bound queue_timeout_ms",
          "[load][admission]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error));                              // the first turn's attempt
    fake.push(Script().sleep(2000ms).then(Script::json(200, answer)));        // a second turn holds the slot
    fake.set_default(Script::json(200, answer));
    auto proxy = start_proxy(solo(fake, "{base_delay_ms: 600, max_delay_ms: 600, min_attempt_ms: 10}",
                                  "{enabled: true, initial_limit: 1, min_limit: 1, max_limit: 1, "
                                  "queue_timeout_ms: 300}"));
    auto send = [&proxy] { return proxy->client().post_json("/v1/chat/completions", chat); };
    auto first = std::async(std::launch::async, send);
    REQUIRE(fake.wait_for_requests(1, bound));
    // The first turn waits 600 ms before its replay, holding no slot: this one takes it.
    auto second = std::async(std::launch::async, send);
    REQUIRE(fake.wait_for_requests(2, bound));
    const Response r = first.get();
    REQUIRE(r.ok());
    CHECK(r.status == 503);
    CHECK(r.body == server_error);
    CHECK(r.header("x-modelproxy-decision") == "exhausted");
    CHECK(r.header("x-modelproxy-bound") == "queue_timeout_ms");
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(second.get().status == 200);
    CHECK(fake.request_count() == 2);
}
