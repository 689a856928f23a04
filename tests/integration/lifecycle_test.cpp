// Process lifecycle (docs/behaviour.md section 11) and the JSON-lines records (section
// 10) of the real binary: SIGTERM/SIGINT drain in-flight turns, refuse new
// connections, turn /readyz to 503 on open connections and exit 0; every
// forwarded turn leaves a turn record and one attempt record per attempt;
// no record or stderr line carries a key or a client credential.
#include "support/proxy_process.hpp"

#include "support/fake_provider.hpp"
#include "support/expect.hpp"
#include "support/http_client.hpp"

#include <boost/asio/error.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <regex>
#include <thread>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds
using Clock = std::chrono::steady_clock;

std::string chat_request(std::string_view model) {
    return R"({"model":")" + std::string(model) + R"(","messages":[{"role":"user","content":"hi"}]})";
}

std::string chat_answer(std::string_view model) {
    return R"({"id":"chatcmpl-1","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

// One route "fake" serving gpt-test; retries wait 10-20 ms, not seconds.
std::string config_for(const FakeProvider& fake, std::string_view preamble = {},
                       std::string_view route_extra = {}) {
    return std::string(preamble) + "routes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") +
           "\n    models: [gpt-test]\n    retry:\n      base_delay_ms: 10\n      max_delay_ms: 20\n" +
           std::string(route_extra);
}

// Sends a chat request without reading the answer, and waits until the
// fake provider holds it: the turn is then in flight.
void start_turn(HttpClient& client, const FakeProvider& fake) {
    const std::size_t before = fake.request_count();
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                      chat_request("gpt-test")));
    REQUIRE(fake.wait_for_requests(before + 1, bound));
}

// After a drain signal the listener closes; true once a connect is refused.
bool connections_refused_within(std::uint16_t port, std::chrono::milliseconds timeout) {
    for (auto until = Clock::now() + timeout; Clock::now() < until;) {
        if (try_connect(port, 500ms) == boost::asio::error::connection_refused) return true;
        std::this_thread::sleep_for(5ms);
    }
    return false;
}

std::optional<JsonRecord> find_record(const std::vector<JsonRecord>& records, std::string_view event,
                                      std::string_view request_id, std::int64_t attempt = 0) {
    for (const auto& r : records)
        if (r.event() == event && r.str("request_id") == request_id &&
            (attempt == 0 || r.integer("attempt") == attempt))
            return r;
    return std::nullopt;
}

std::size_t count_records(const std::vector<JsonRecord>& records, std::string_view event,
                          std::string_view request_id) {
    return static_cast<std::size_t>(std::count_if(records.begin(), records.end(), [&](const JsonRecord& r) {
        return r.event() == event && r.str("request_id") == request_id;
    }));
}

// Every key of a section 10 record is present (null when it does not
// apply), so a consumer can rely on one shape.
void check_keys(const JsonRecord& record, const std::vector<std::string_view>& keys) {
    CAPTURE(record.line());
    for (const auto& key : keys) {
        CAPTURE(key);
        CHECK(record.has(key));
    }
}

const std::vector<std::string_view> attempt_keys = {
    "event", "request_id", "route", "model", "attempt", "status", "class", "code",
    "timeout_source", "rule", "decision", "delay_ms", "remaining_ms", "digest"};
const std::vector<std::string_view> turn_keys = {
    "event", "request_id", "route", "model", "attempts", "provider_retries", "outcome", "class", "code",
    "bound", "status", "stream", "published", "fallback_from", "duration_ms", "ttft_ms"};

bool is_sha256_digest(const std::string& digest) {
    static const std::regex shape("sha256:[0-9a-f]{64}");
    return std::regex_match(digest, shape);
}

}  // namespace

// ---------------------------------------------------------------------------
// Drain

TEST_CASE("SIGTERM drains: the in-flight turn completes, new connections are refused, /readyz says draining, "
          "exit 0",
          "[lifecycle]") {
    FakeProvider fake;
    fake.push(Script{}.sleep(500ms).then(Script::json(200, chat_answer("gpt-test"))));
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();

    HttpClient probe = proxy.client();  // a keep-alive connection opened before the signal
    REQUIRE(probe.get("/readyz").status == 200);
    HttpClient slow = proxy.client();
    start_turn(slow, fake);

    REQUIRE(proxy.signal(SIGTERM));
    CHECK(connections_refused_within(proxy.port(), bound));

    const Response ready = probe.get("/readyz");
    CAPTURE(ready.wire);
    CHECK(ready.status == 503);
    CHECK(ready.body == R"({"status":"draining"})");
    CHECK_FALSE(ready.keep_alive);  // Connection: close
    CHECK(probe.is_closed_by_peer(bound));

    const Response answer = slow.read_response(bound);
    CAPTURE(answer.wire);
    REQUIRE(answer.ok());
    CHECK(answer.status == 200);
    CHECK(answer.body == chat_answer("gpt-test"));
    CHECK_FALSE(answer.keep_alive);  // answered during the drain: Connection: close

    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    CHECK(fake.request_count() == 1);
}

TEST_CASE("SIGTERM with a stream in flight: the stream completes with [DONE], /readyz is 503 meanwhile, exit 0",
          "[lifecycle]") {
    FakeProvider fake;
    auto event = [](std::string_view delta, std::string_view finish = "null") {
        return "data: {\"id\":\"s1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-test\",\"choices\":"
               "[{\"index\":0,\"delta\":" +
               std::string(delta) + ",\"finish_reason\":" + std::string(finish) + "}]}\n\n";
    };
    // Answer text first (so the stream is published), then a pause the
    // signal arrives in, then the rest of the stream.
    fake.push(Script{}
                  .write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                  .chunk(event(R"({"role":"assistant","content":""})"))
                  .chunk(event(R"({"content":"before "})"))
                  .sleep(800ms)
                  .chunk(event(R"({"content":"after"})"))
                  .chunk(event("{}", R"("stop")") + "data: [DONE]\n\n")
                  .last_chunk());
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();

    HttpClient probe = proxy.client();  // a keep-alive connection opened before the signal
    REQUIRE(probe.get("/readyz").status == 200);
    HttpClient streaming = proxy.client();
    REQUIRE_FALSE(streaming.send_request(
        "POST", "/v1/chat/completions", {{"Content-Type", "application/json"}, {"x-request-id", "draining-stream"}},
        R"({"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]})"));
    const Response head = streaming.read_head(bound);
    CAPTURE(head.wire);
    REQUIRE(head.status == 200);
    read_body_until(streaming, head.body, "before ", bound);

    REQUIRE(proxy.signal(SIGTERM));
    CHECK(connections_refused_within(proxy.port(), bound));  // the drain has begun
    const Response ready = probe.get("/readyz");
    CAPTURE(ready.wire);
    CHECK(ready.status == 503);
    CHECK(ready.body == R"({"status":"draining"})");
    CHECK(proxy.running());  // the stream keeps the process alive

    const Response rest = streaming.read_rest(bound);
    CAPTURE(rest.wire);
    REQUIRE(rest.ok());
    CHECK_THAT(rest.body, Contains(R"({"content":"after"})") && Contains("data: [DONE]"));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    const auto turn = find_record(proxy.records(), "turn", "draining-stream");
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "ok");
}

TEST_CASE("during the drain an already-open keep-alive connection is still served, with Connection: close",
          "[lifecycle]") {
    FakeProvider fake;
    fake.push(Script{}.sleep(500ms).then(Script::json(200, chat_answer("gpt-test"))));
    fake.push(Script::json(200, chat_answer("gpt-test")));
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    HttpClient open = proxy.client();
    REQUIRE(open.get("/healthz").status == 200);
    HttpClient slow = proxy.client();
    start_turn(slow, fake);  // holds the drain open

    REQUIRE(proxy.signal(SIGTERM));
    REQUIRE(connections_refused_within(proxy.port(), bound));
    const Response late = open.post_json("/v1/chat/completions", chat_request("gpt-test"));
    CAPTURE(late.wire);
    REQUIRE(late.ok());
    CHECK(late.status == 200);
    CHECK(late.body == chat_answer("gpt-test"));
    CHECK_FALSE(late.keep_alive);
    CHECK(open.is_closed_by_peer(bound));

    CHECK(slow.read_response(bound).status == 200);
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    CHECK(fake.request_count() == 2);
}

TEST_CASE("SIGTERM with nothing in flight exits 0 promptly", "[lifecycle]") {
    FakeProvider fake;
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    HttpClient idle = proxy.client();  // an idle keep-alive connection does not hold the drain
    REQUIRE(idle.get("/healthz").status == 200);
    REQUIRE(proxy.signal(SIGTERM));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
}

TEST_CASE("SIGINT drains like SIGTERM: the in-flight turn completes, exit 0", "[lifecycle]") {
    FakeProvider fake;
    fake.push(Script{}.sleep(500ms).then(Script::json(200, chat_answer("gpt-test"))));
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    HttpClient slow = proxy.client();
    start_turn(slow, fake);

    REQUIRE(proxy.signal(SIGINT));
    CHECK(connections_refused_within(proxy.port(), bound));
    const Response answer = slow.read_response(bound);
    CAPTURE(answer.wire);
    REQUIRE(answer.ok());
    CHECK(answer.status == 200);
    CHECK(answer.body == chat_answer("gpt-test"));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
}

TEST_CASE("SIGINT with nothing in flight exits 0 promptly", "[lifecycle]") {
    FakeProvider fake;
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    REQUIRE(proxy.signal(SIGINT));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
}

// Regression: the `listening on` line was printed before SIGTERM/SIGINT were
// handled, so a signal sent as soon as the proxy said it was ready killed it
// with the default action (exit 143/130) instead of a drain and exit 0.
// Several quick starts make the race show almost every run.
TEST_CASE("a signal right after the listening line still drains and exits 0", "[lifecycle]") {
    FakeProvider fake;
    const int sig = GENERATE(SIGTERM, SIGINT);
    CAPTURE(sig);
    for (int round = 0; round < 5; ++round) {
        CAPTURE(round);
        ProxyProcess proxy({.config_yaml = config_for(fake)});
        proxy.start();
        REQUIRE(proxy.signal(sig));
        CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    }
}

TEST_CASE("drain_ms bounds the drain: a hanging turn does not keep the process alive", "[lifecycle]") {
    FakeProvider fake;
    fake.push(Script{}.hang());
    ProxyProcess proxy({.config_yaml = config_for(fake, "limits:\n  drain_ms: 300\n")});
    proxy.start();
    HttpClient stuck = proxy.client();
    start_turn(stuck, fake);

    REQUIRE(proxy.signal(SIGTERM));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    // The client is not left waiting, and never sees a success: the turn
    // that published nothing is ended with the 503 envelope (docs/behaviour.md section
    // 11), not just dropped when the process exits.
    const Response r = stuck.read_response(bound);
    CAPTURE(r.wire);
    CHECK(r.error != boost::asio::error::timed_out);
    CHECK(r.status == 503);
    CHECK(r.body.find(R"("code":"drain_limit")") != std::string::npos);
    CHECK(r.header("x-should-retry") == "false");
    const auto turn = turn_record(proxy);
    CAPTURE(proxy.stdout_lines());
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "cancelled");
    CHECK(turn->str("code") == "drain_limit");
}

TEST_CASE("drain_ms bounds the drain: a stream already answering ends with the closing error event",
          "[lifecycle]") {
    FakeProvider fake;
    const std::string event =
        R"(data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-test",)"
        R"("choices":[{"index":0,"delta":{"content":"hel"},"finish_reason":null}]})"
        "\n\n";
    fake.push(Script{}
                  .write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                  .chunk(event)
                  .hang());
    ProxyProcess proxy({.config_yaml = config_for(fake, "limits:\n  drain_ms: 300\n")});
    proxy.start();
    HttpClient client = proxy.client();
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                      R"({"model":"gpt-test","stream":true,"messages":[]})"));
    // Published at its first answer text: the head and that event.
    const RawRead first = client.read_raw_until(event, bound);
    CAPTURE(first.bytes);
    REQUIRE(first.bytes.find(event) != std::string::npos);

    REQUIRE(proxy.signal(SIGTERM));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    // The stream is not cut silently: one closing error event, then the end
    // of the chunked body, and never a [DONE] (docs/behaviour.md sections 7 and 11).
    const RawRead rest = client.read_raw_until("0\r\n\r\n", bound);
    CAPTURE(rest.bytes);
    CHECK(rest.bytes.find("drain limit passed") != std::string::npos);
    CHECK(rest.bytes.find(R"("class":"cancelled")") != std::string::npos);
    CHECK(rest.bytes.find("[DONE]") == std::string::npos);
    CHECK(rest.bytes.ends_with("0\r\n\r\n"));
    const auto turn = turn_record(proxy);
    CAPTURE(proxy.stdout_lines());
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "cancelled");
    CHECK(turn->str("code") == "drain_limit");
    CHECK(turn->boolean("published") == true);
}

// ---------------------------------------------------------------------------
// Records

TEST_CASE("a forwarded turn leaves one turn and one attempt record under the response's request id",
          "[lifecycle]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-test")));
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    HttpClient client = proxy.client();
    const Response r = client.post_json("/v1/chat/completions", chat_request("gpt-test"));
    CAPTURE(r.wire);
    REQUIRE(r.status == 200);
    CHECK(r.header("x-modelproxy-attempts") == "1");
    const std::string id = r.header("x-modelproxy-request-id").value_or("");
    REQUIRE_FALSE(id.empty());

    REQUIRE(proxy.wait_for_record([&](const JsonRecord& j) { return j.event() == "turn" && j.str("request_id") == id; },
                                  bound));
    const auto records = proxy.records();
    CAPTURE(proxy.stdout_lines());
    CHECK(count_records(records, "turn", id) == 1);
    CHECK(count_records(records, "attempt", id) == 1);

    const auto turn = find_record(records, "turn", id);
    REQUIRE(turn);
    CHECK(turn->str("route") == "fake");
    CHECK(turn->str("model") == "gpt-test");
    CHECK(turn->integer("attempts") == 1);
    CHECK(turn->integer("provider_retries") == 0);
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->integer("status") == 200);
    CHECK(turn->boolean("stream") == false);
    CHECK(turn->boolean("published") == true);
    check_keys(*turn, turn_keys);

    const auto attempt = find_record(records, "attempt", id, 1);
    REQUIRE(attempt);
    CHECK(attempt->str("route") == "fake");
    CHECK(attempt->str("model") == "gpt-test");
    CHECK(attempt->integer("status") == 200);
    CHECK(attempt->str("decision") == "ok");
    CHECK(attempt->integer("delay_ms") == 0);
    CHECK(is_sha256_digest(attempt->str("digest").value_or("")));
    check_keys(*attempt, attempt_keys);
}

TEST_CASE("the client's own x-request-id names the turn in the response and the records", "[lifecycle]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-test")));
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    HttpClient client = proxy.client();
    const Response r =
        client.post_json("/v1/chat/completions", chat_request("gpt-test"), {{"x-request-id", "client-rid-7"}});
    CAPTURE(r.wire);
    REQUIRE(r.status == 200);
    CHECK(r.header("x-modelproxy-request-id") == "client-rid-7");
    REQUIRE(proxy.wait_for_records("turn", 1, bound));
    const auto records = proxy.records();
    CAPTURE(proxy.stdout_lines());
    CHECK(count_records(records, "turn", "client-rid-7") == 1);
    CHECK(count_records(records, "attempt", "client-rid-7") == 1);
}

TEST_CASE("a replayed turn records every attempt with one digest and counts provider_retries", "[lifecycle]") {
    FakeProvider fake;
    fake.push(Script::json(503, R"({"error":{"message":"busy","type":"server_error"}})"));
    fake.push(Script::json(200, chat_answer("gpt-test")));
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    HttpClient client = proxy.client();
    const Response r =
        client.post_json("/v1/chat/completions", chat_request("gpt-test"), {{"x-request-id", "replayed-1"}});
    CAPTURE(r.wire);
    REQUIRE(r.status == 200);
    CHECK(r.header("x-modelproxy-attempts") == "2");
    REQUIRE(fake.request_count() == 2);
    CHECK(fake.requests()[0].body == fake.requests()[1].body);

    REQUIRE(proxy.wait_for_records("turn", 1, bound));
    const auto records = proxy.records();
    CAPTURE(proxy.stdout_lines());
    const auto turn = find_record(records, "turn", "replayed-1");
    REQUIRE(turn);
    CHECK(turn->integer("attempts") == 2);
    CHECK(turn->integer("provider_retries") == 1);
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->integer("status") == 200);

    CHECK(count_records(records, "attempt", "replayed-1") == 2);
    const auto first = find_record(records, "attempt", "replayed-1", 1);
    const auto second = find_record(records, "attempt", "replayed-1", 2);
    REQUIRE(first);
    REQUIRE(second);
    CHECK(first->integer("status") == 503);
    CHECK(first->str("class") == "server");
    CHECK(first->str("decision") == "retry");
    CHECK(first->integer("delay_ms") == 10);  // base_delay_ms, jitter none
    CHECK(second->integer("status") == 200);
    CHECK(second->str("decision") == "ok");
    CHECK(is_sha256_digest(first->str("digest").value_or("")));
    CHECK(first->str("digest") == second->str("digest"));
}

TEST_CASE("no record or stderr line holds the route's key or the client's Authorization value", "[lifecycle]") {
    constexpr std::string_view route_key = "sk-test-SECRET-123";
    constexpr std::string_view client_auth = "Bearer client-SECRET-456";
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-test")));
    fake.push(Script::json(401, R"({"error":{"message":"bad key","type":"authentication_error"}})"));
    ProxyProcess proxy({.config_yaml = config_for(fake, {}, "    api_key_env: MP_TEST_ROUTE_KEY\n"),
                        .env = {{"MP_TEST_ROUTE_KEY", std::string(route_key)}}});
    proxy.start();

    HttpClient client = proxy.client();
    const Headers auth{{"Authorization", std::string(client_auth)}};
    CHECK(client.post_json("/v1/chat/completions", chat_request("gpt-test"), auth).status == 200);
    CHECK(client.post_json("/v1/chat/completions", chat_request("gpt-test"), auth).status == 401);
    CHECK(client.post_json("/v1/chat/completions", chat_request("gpt-unknown"), auth).status == 404);
    CHECK(client.post_json("/v1/chat/completions", "{broken", auth).status == 400);

    // The key was really in play: it reached the upstream, the client's did not.
    REQUIRE(fake.request_count() == 2);
    for (const auto& req : fake.requests()) CHECK(req.header("authorization") == "Bearer " + std::string(route_key));

    REQUIRE(proxy.wait_for_records("turn", 2, bound));
    REQUIRE(proxy.signal(SIGTERM));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    std::vector<std::string> all = proxy.stdout_lines();
    const auto err = proxy.stderr_lines();
    all.insert(all.end(), err.begin(), err.end());
    REQUIRE(all.size() >= 4);  // at least two turns with their attempts
    for (const auto& line : all) {
        CAPTURE(line);
        CHECK_THAT(line, !Contains("SECRET") && !Contains("client-SECRET") && !Contains("sk-test"));
    }
}
