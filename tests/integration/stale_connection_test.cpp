// A reused upstream connection that fails before any answer byte (docs/behaviour.md
// section 4): only one the provider had already closed is re-sent for free,
// without counting an attempt. That is a request that could not be fully
// written, or, on an endpoint marked replayed, a connection that ended with
// no answer byte within 100 ms of the request being written. Any other
// failure of a reused connection is an attempt: what the provider received
// and `x-modelproxy-attempts` then agree.
//
// Each test first makes one turn that leaves its upstream connection in the
// pool (one worker: one pool), then scripts what that connection does with
// the next request.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds

const std::string chat_request = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
std::string chat_answer(std::string_view id) {
    return R"({"id":")" + std::string(id) +
           R"(","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}
const std::string files_request = R"({"purpose":"batch","filename":"input.jsonl"})";
const std::string file_answer = R"({"id":"file-1","object":"file","purpose":"batch"})";

// One worker, one route to `fake` serving model m (and any model: the files
// endpoint has none), three attempts with tiny waits.
std::unique_ptr<ProxyProcess> start_proxy_to(const FakeProvider& fake) {
    ProxyProcess::Options options;
    options.config_yaml = "workers: 1\nroutes:\n  - name: r\n    upstream: " + fake.base_url("/v1") +
                          "\n    models: [\"*\"]\n    retry: {max_attempts: 3, base_delay_ms: 5, min_attempt_ms: 10}\n";
    auto proxy = std::make_unique<ProxyProcess>(std::move(options));
    proxy->start();
    return proxy;
}

Response post(HttpClient& client, std::string_view path, const std::string& body, std::string_view request_id) {
    return client.post_json(std::string(path), body, {{"x-request-id", std::string(request_id)}});
}

std::vector<JsonRecord> attempts_of(const ProxyProcess& proxy, std::string_view request_id) {
    REQUIRE(proxy.wait_for_record(
        [&](const JsonRecord& r) { return r.event() == "turn" && r.str("request_id") == request_id; }, bound));
    std::vector<JsonRecord> out;
    for (auto& r : proxy.records())
        if (r.event() == "attempt" && r.str("request_id") == request_id) out.push_back(std::move(r));
    return out;
}

// The first turn's answer, on a new connection that is then pooled.
void first_turn(FakeProvider& fake, HttpClient& client, std::string_view path, const std::string& body,
                const std::string& answer) {
    const Response one = post(client, path, body, "first");
    CAPTURE(one.wire);
    REQUIRE(one.ok());
    REQUIRE(one.status == 200);
    REQUIRE(one.body == answer);
    REQUIRE(fake.request_count() == 1);
}

}  // namespace

TEST_CASE("a reused connection silent for 300 ms then closed is an attempt: the provider got what the attempts say",
          "[stale]") {
    const bool reset = GENERATE(false, true);
    CAPTURE(reset);
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("first")));
    Script silent = Script{}.sleep(300ms);
    fake.push(reset ? silent.reset() : silent.close());
    fake.push(Script::json(200, chat_answer("second")));
    auto proxy = start_proxy_to(fake);
    HttpClient client = proxy->client({.timeout = 10s});
    first_turn(fake, client, "/v1/chat/completions", chat_request, chat_answer("first"));

    const Response two = post(client, "/v1/chat/completions", chat_request, "silent");
    CAPTURE(two.wire);
    REQUIRE(two.ok());
    CHECK(two.status == 200);
    CHECK(two.body == chat_answer("second"));
    const auto requests = fake.requests();
    REQUIRE(requests.size() >= 2);
    CHECK(requests[1].connection_id == requests[0].connection_id);  // the silent one was the pooled connection
    // Every request the provider received for this turn is an attempt.
    CHECK(two.header("x-modelproxy-attempts") == std::to_string(requests.size() - 1));
    CHECK(two.header("x-modelproxy-attempts") == "2");
    const auto records = attempts_of(*proxy, "silent");
    REQUIRE(records.size() == 2);
    CHECK(records[0].str("class") == "network");
    CHECK(records[0].str("rule") == "dropped-before-head");
}

TEST_CASE("a reused connection closed at once after the request is re-sent once for free", "[stale]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("first")));
    fake.push(Script::refuse_head_then_close());  // the request read, then a FIN: well within 100 ms
    fake.push(Script::json(200, chat_answer("second")));
    auto proxy = start_proxy_to(fake);
    HttpClient client = proxy->client({.timeout = 10s});
    first_turn(fake, client, "/v1/chat/completions", chat_request, chat_answer("first"));

    const Response two = post(client, "/v1/chat/completions", chat_request, "closed-at-once");
    CAPTURE(two.wire);
    REQUIRE(two.ok());
    CHECK(two.status == 200);
    CHECK(two.body == chat_answer("second"));
    CHECK(two.header("x-modelproxy-attempts") == "1");
    const auto requests = fake.requests();
    // This turn's sends: one more than its one attempt (the free resend,
    // and only that one), the resend on a new connection.
    REQUIRE(requests.size() - 1 == 1 + 1);
    CHECK(requests[1].connection_id == requests[0].connection_id);
    CHECK(requests[2].connection_id != requests[1].connection_id);
    CHECK(attempts_of(*proxy, "closed-at-once").size() == 1);
}

TEST_CASE("POST /v1/files: a reused connection closed at once after the request is an attempt, not replayed",
          "[stale]") {
    // Not an endpoint marked replayed: a written request may have created a
    // file, so a close after it is no proof the provider never saw it.
    FakeProvider fake;
    fake.push(Script::json(200, file_answer));
    fake.push(Script::refuse_head_then_close());
    fake.set_default(Script::json(200, file_answer));
    auto proxy = start_proxy_to(fake);
    HttpClient client = proxy->client({.timeout = 10s});
    first_turn(fake, client, "/v1/files", files_request, file_answer);

    const Response two = post(client, "/v1/files", files_request, "files-closed");
    CAPTURE(two.wire);
    REQUIRE(two.ok());
    CHECK(two.status == 502);
    CHECK(two.header("x-modelproxy-error-class") == "network");
    CHECK(two.header("x-modelproxy-attempts") == "1");
    CHECK(envelope_error(two).at("attempts") == 1);
    REQUIRE(attempts_of(*proxy, "files-closed").size() == 1);
    CHECK(fake.request_count() == 2);  // the first turn's and this turn's one attempt
}
