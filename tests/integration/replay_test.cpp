// In-turn replay through the real binary (docs/behaviour.md sections 5, 6, 9 and 10):
// which upstream failures are replayed, how many attempts each bound allows,
// the waits between attempts, the turn deadline, a client that leaves during
// a wait, and what the client and the records see when a turn ends. Every
// route uses tiny configured delays, never the defaults.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/ports.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

// Tiny waits (5, 10, 20, 20, ... ms) so that a turn of 24 attempts takes well under a second.
constexpr std::string_view fast_retry = "{base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}";

// One route named "fake" to `upstream` with `retry` as its override; `extra`
// holds more route keys, each line indented by four spaces.
std::string one_route(const std::string& upstream, std::string_view retry = fast_retry,
                      std::string_view extra = "", std::string_view models = "[gpt-4o-mini]") {
    std::string yaml = "routes:\n  - name: fake\n    upstream: " + upstream + "\n    models: ";
    yaml += models;
    yaml += "\n    retry: ";
    yaml += retry;
    yaml += "\n";
    yaml += extra;
    return yaml;
}

std::string one_route(const FakeProvider& fake, std::string_view retry = fast_retry, std::string_view extra = "",
                      std::string_view models = "[gpt-4o-mini]") {
    return one_route(fake.base_url("/v1"), retry, extra, models);
}

std::string refused_upstream() { return "http://127.0.0.1:" + std::to_string(unused_port()) + "/v1"; }

// Odd spacing, an escape and raw UTF-8: a replay that re-serialized the body would differ.
const std::string chat_request = "{\"model\":\"gpt-4o-mini\",  \"messages\":[{\"role\":\"user\",\"content\":"
                                 "\"caf\\u00e9 \xE2\x98\x95\"}],\"temperature\" : 0.5}\n";

std::string chat_answer() {
    return R"({"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

const std::string server_error = R"({"error":{"message":"upstream overloaded","type":"server_error","code":null}})";
const std::string rate_limited = R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})";

// A non-2xx upstream answer that ended the turn: passed on with its status and
// body, and the proxy's failure headers (section 9).
void check_passed_on(const Response& r, unsigned status, const std::string& body, std::string_view error_class,
                     std::string_view decision, std::size_t attempts) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == status);
    CHECK(r.body == body);
    CHECK(r.header("x-modelproxy-attempts") == std::to_string(attempts));
    CHECK(r.header("x-modelproxy-error-class") == std::string(error_class));
    CHECK(r.header("x-modelproxy-decision") == std::string(decision));
    CHECK(r.header_count("x-should-retry") == 1);
    CHECK(r.header("x-should-retry") == "false");
}

// A terminal status: one upstream request, passed on, decision terminal, no bound.
void check_terminal(unsigned status, const std::string& body, std::string_view error_class) {
    FakeProvider fake;
    fake.push(Script::json(status, body));
    fake.set_default(Script::json(200, chat_answer()));  // a replay would turn the answer into a 200
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_passed_on(r, status, body, error_class, "terminal", 1);
    CHECK(r.header_count("x-modelproxy-bound") == 0);
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "terminal");
    CHECK(turn->integer("attempts") == 1);
    CHECK(fake.request_count() == 1);
}

}  // namespace

// ---------------------------------------------------------------------------
// Retryable statuses and their bounds

TEST_CASE("three 429s then a 200: the client gets the 200 after 4 attempts with byte-identical payloads",
          "[replay]") {
    FakeProvider fake;
    fake.push(Script::json(429, rate_limited), 3);
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer());
    CHECK(r.header("x-modelproxy-attempts") == "4");
    REQUIRE(fake.wait_for_requests(4, bound));
    const auto requests = fake.requests();
    CHECK(requests.size() == 4);
    for (const auto& request : requests) {
        CHECK(request.method == "POST");
        CHECK(request.target == "/v1/chat/completions");
        CHECK(request.body == chat_request);
    }
}

TEST_CASE("always 503: 8 attempts, then the last 503 with exhausted and bound max_attempts", "[replay]") {
    FakeProvider fake;
    fake.set_default(Script::json(503, server_error, {{"x-should-retry", "true"}}));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_passed_on(r, 503, server_error, "server", "exhausted", 8);
    CHECK(r.header("x-modelproxy-bound") == "max_attempts");
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "exhausted");
    CHECK(turn->str("bound") == "max_attempts");
    CHECK(turn->integer("attempts") == 8);
    CHECK(fake.request_count() == 8);
}

TEST_CASE("always 429: 24 attempts under the throttled bound", "[replay]") {
    FakeProvider fake;
    fake.set_default(Script::json(429, rate_limited));
    auto proxy = start_proxy(one_route(fake, "{base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10, "
                                             "max_total_delay_ms: 100000, throttled_max_total_delay_ms: 100000}"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_passed_on(r, 429, rate_limited, "rate-limit", "exhausted", 24);
    CHECK(r.header("x-modelproxy-bound") == "throttled_max_attempts");
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("bound") == "throttled_max_attempts");
    CHECK(fake.request_count() == 24);
}

TEST_CASE("ten 429s then 503s: the 503 of attempt 11 ends the turn with bound max_attempts", "[replay]") {
    FakeProvider fake;
    fake.push(Script::json(429, rate_limited), 10);
    fake.set_default(Script::json(503, server_error));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_passed_on(r, 503, server_error, "server", "exhausted", 11);
    CHECK(r.header("x-modelproxy-bound") == "max_attempts");
    REQUIRE(turn_record(*proxy));
    CHECK(fake.request_count() == 11);
}

// ---------------------------------------------------------------------------
// Terminal statuses: one request, passed on

TEST_CASE("a 400 is terminal: one request, passed on as invalid-request", "[replay]") {
    check_terminal(400, R"({"error":{"message":"Request timed out in validation","type":"invalid_request_error","code":null}})",
                   "invalid-request");
}

TEST_CASE("a 401 is terminal: one request, passed on as authentication", "[replay]") {
    check_terminal(401, R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}})",
                   "authentication");
}

TEST_CASE("a 403 is terminal: one request, passed on as authentication", "[replay]") {
    check_terminal(403, R"({"error":{"message":"forbidden","type":"invalid_request_error","code":"unsupported_country_region_territory"}})",
                   "authentication");
}

TEST_CASE("a 404 is terminal: one request, passed on as not-found", "[replay]") {
    check_terminal(404, R"({"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found"}})",
                   "not-found");
}

TEST_CASE("a 422 is terminal: one request, passed on as invalid-request", "[replay]") {
    check_terminal(422, R"({"error":{"message":"unprocessable","type":"invalid_request_error","code":null}})",
                   "invalid-request");
}

TEST_CASE("a 400 with code content_filter is terminal: one request, passed on as content-filter", "[replay]") {
    check_terminal(400, R"({"error":{"code":"content_filter"}})", "content-filter");
}

// ---------------------------------------------------------------------------
// Waits

TEST_CASE("retry-after-ms on a 429 lengthens the wait to 150 ms", "[replay]") {
    FakeProvider fake;
    fake.push(Script::json(429, rate_limited, {{"retry-after-ms", "150"}}));
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake, "{base_delay_ms: 5, max_delay_ms: 1000, min_attempt_ms: 10}"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-attempts") == "2");
    REQUIRE(fake.wait_for_requests(2, bound));
    const auto requests = fake.requests();
    CHECK(requests[1].received_at - requests[0].received_at >= 140ms);

    REQUIRE(turn_record(*proxy));
    const auto attempts = attempt_records(*proxy);
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].integer("attempt") == 1);
    CHECK(attempts[0].str("decision") == "retry");
    CHECK(attempts[0].integer("delay_ms") == 150);
}

// ---------------------------------------------------------------------------
// Transport faults

TEST_CASE("connection refused on every attempt: 502 network envelope after 3 attempts", "[replay]") {
    auto proxy = start_proxy(
        one_route(refused_upstream(), "{max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("type") == "modelproxy_error");
    CHECK(error.at("class") == "network");
    CHECK(error.at("attempts") == 3);
    CHECK(error.at("decision") == "exhausted");
    CHECK(error.at("bound") == "max_attempts");
    CHECK(r.header("x-should-retry") == "false");
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->integer("attempts") == 3);
    CHECK(attempt_records(*proxy).size() == 3);
}

TEST_CASE("a connection closed before the response head is replayed: 200 after 2 attempts", "[replay]") {
    FakeProvider fake;
    fake.push(Script::refuse_head_then_close());
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer());
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(fake.request_count() == 2);
}

TEST_CASE("a connection reset before the response head is replayed: 200 after 2 attempts", "[replay]") {
    FakeProvider fake;
    fake.push(Script{}.reset());
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer());
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(fake.request_count() == 2);
}

TEST_CASE("a body reset mid-transfer is replayed: the client gets only the whole 200", "[replay]") {
    FakeProvider fake;
    const std::string answer = chat_answer();
    fake.push(Script::reset_mid_body(
        format_response_head(200, {{"Content-Type", "application/json"}, {"Content-Length", std::to_string(answer.size())}}) +
        answer.substr(0, answer.size() / 2)));
    fake.push(Script::json(200, answer));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == answer);
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(fake.request_count() == 2);
}

// ---------------------------------------------------------------------------
// Deadlines

TEST_CASE("a hanging upstream is cut at the route's timeout_ms: 504 deadline", "[replay]") {
    FakeProvider fake;
    fake.set_default(Script{}.hang());
    auto proxy = start_proxy(one_route(fake, fast_retry, "    timeout_ms: 400\n"));

    const auto start = std::chrono::steady_clock::now();
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 504);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "timeout");
    CHECK(error.at("decision") == "deadline");
    CHECK(error.at("bound") == "deadline");
    CHECK(r.header("x-should-retry") == "false");
    CHECK(elapsed >= 300ms);
    CHECK(elapsed < 4s);
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "deadline");
}

TEST_CASE("the client's x-modelproxy-timeout-ms shortens a 60 s route deadline", "[replay]") {
    FakeProvider fake;
    fake.set_default(Script{}.hang());
    auto proxy = start_proxy(one_route(fake, fast_retry, "    timeout_ms: 60000\n"));

    const auto start = std::chrono::steady_clock::now();
    HttpClient::Options options;
    options.timeout = 20000ms;  // the proxy, not the client, must end this turn
    auto client = proxy->client(options);
    const Response r = client.post_json("/v1/chat/completions", chat_request, {{"x-modelproxy-timeout-ms", "900"}});
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 504);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "timeout");
    CHECK(error.at("decision") == "deadline");
    CHECK(elapsed >= 300ms);  // 900 ms less the 500 ms answer margin
    CHECK(elapsed < 5s);
    // The deadline header is the proxy's own: it is not forwarded.
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].header("x-modelproxy-timeout-ms") == std::nullopt);
}

// ---------------------------------------------------------------------------
// A client that leaves

TEST_CASE("a client that disconnects during a wait cancels the turn: no further attempt", "[replay]") {
    FakeProvider fake;
    fake.push(Script::json(429, rate_limited, {{"retry-after-ms", "1000"}}));
    fake.set_default(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake, "{base_delay_ms: 5, max_delay_ms: 2000, min_attempt_ms: 10}"));

    auto client = proxy->client();
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                      chat_request));
    REQUIRE(fake.wait_for_requests(1, bound));
    client.close();

    const auto turn = turn_record(*proxy, 3s);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "cancelled");
    // The 1 s wait would have ended by now; no attempt 2 may follow it.
    CHECK_FALSE(fake.wait_for_requests(2, 1500ms));
    CHECK(fake.request_count() == 1);
}

// ---------------------------------------------------------------------------
// Records

TEST_CASE("a 503 then 200 turn writes two attempt records with one digest and one turn record", "[replay]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error));
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    REQUIRE(r.ok());
    CHECK(r.status == 200);

    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->integer("attempts") == 2);
    CHECK(turn->integer("provider_retries") == 1);
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->str("route") == "fake");

    std::vector<std::string> bad;
    const auto records = proxy->records(&bad);
    CHECK(bad.empty());
    std::size_t turns = 0;
    for (const auto& record : records) turns += record.event() == "turn";
    CHECK(turns == 1);

    const auto attempts = attempt_records(*proxy);
    REQUIRE(attempts.size() == 2);
    CAPTURE(attempts[0].line(), attempts[1].line());
    CHECK(attempts[0].integer("attempt") == 1);
    CHECK(attempts[0].str("decision") == "retry");
    CHECK(attempts[0].str("class") == "server");
    CHECK(attempts[0].integer("status") == 503);
    CHECK_FALSE(attempts[0].str("rule").value_or("").empty());
    CHECK(attempts[0].integer("delay_ms").value_or(0) > 0);
    CHECK(attempts[1].integer("attempt") == 2);
    CHECK(attempts[1].str("decision") == "ok");
    CHECK(attempts[1].integer("delay_ms") == 0);
    const auto digest = attempts[0].str("digest").value_or("");
    CHECK(digest.rfind("sha256:", 0) == 0);
    CHECK(digest.size() > 7);
    CHECK(attempts[1].str("digest") == digest);
    CHECK(attempts[0].str("request_id") == turn->str("request_id"));
    CHECK(attempts[1].str("request_id") == turn->str("request_id"));
}

// ---------------------------------------------------------------------------
// Endpoints that are not replayed: only connect failures and 429

namespace {

const std::string files_request = R"({"purpose":"batch","filename":"input.jsonl"})";
const std::string file_answer = R"({"id":"file-1","object":"file","purpose":"batch"})";

}  // namespace

TEST_CASE("POST /v1/files: a 503 is not replayed", "[replay]") {
    FakeProvider fake;
    fake.push(Script::json(503, server_error));
    fake.set_default(Script::json(200, file_answer));
    auto proxy = start_proxy(one_route(fake, fast_retry, "", "[\"*\"]"));

    const Response r = proxy->client().post_json("/v1/files", files_request);
    check_passed_on(r, 503, server_error, "server", "terminal", 1);
    REQUIRE(turn_record(*proxy));
    CHECK(fake.request_count() == 1);
}

TEST_CASE("POST /v1/files: a 429 is replayed", "[replay]") {
    FakeProvider fake;
    fake.push(Script::json(429, rate_limited));
    fake.push(Script::json(200, file_answer));
    auto proxy = start_proxy(one_route(fake, fast_retry, "", "[\"*\"]"));

    const Response r = proxy->client().post_json("/v1/files", files_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == file_answer);
    CHECK(r.header("x-modelproxy-attempts") == "2");
    REQUIRE(fake.wait_for_requests(2, bound));
    CHECK(fake.requests()[1].body == files_request);
    CHECK(fake.requests()[1].target == "/v1/files");
}

TEST_CASE("POST /v1/files: a refused connection is replayed", "[replay]") {
    auto proxy = start_proxy(one_route(refused_upstream(),
                                       "{max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}", "",
                                       "[\"*\"]"));

    const Response r = proxy->client().post_json("/v1/files", files_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "network");
    CHECK(error.at("attempts") == 3);
    CHECK(error.at("decision") == "exhausted");
}

TEST_CASE("POST /v1/files: a connection closed after the request is sent is not replayed", "[replay]") {
    // Section 5: elsewhere only connect failures and 429 are replayed; a
    // request that reached the upstream may have created a file.
    FakeProvider fake;
    fake.push(Script::refuse_head_then_close());
    fake.set_default(Script::json(200, file_answer));
    auto proxy = start_proxy(one_route(fake, fast_retry, "", "[\"*\"]"));

    const Response r = proxy->client().post_json("/v1/files", files_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "network");
    CHECK(error.at("attempts") == 1);
    REQUIRE(turn_record(*proxy));
    CHECK(fake.request_count() == 1);
}
