// Hostile upstreams against the real binary: a head that never ends,
// huge and invalid chunk sizes, a body longer than its Content-Length, a TLS
// handshake that never finishes. Each is a classified failure (docs/behaviour.md sections
// 5 and 9) in the client's answer and in the attempt records, never a crash
// or a hang, and the proxy serves a new connection afterwards.
//
// What the transport reports for broken framing: bytes that are not HTTP, or
// a head above its 64 KiB limit, are a dropped connection (class network,
// replayed on these endpoints, envelope code connection_dropped); a turn
// deadline is 504 timeout; a body above max_response_body_bytes is a
// terminal 502 response_too_large.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/ports.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <thread>
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

// One route to `upstream` serving model m, two attempts with tiny waits.
std::unique_ptr<ProxyProcess> start_proxy_to(const std::string& upstream, std::string_view route_extra = {},
                                          std::string_view preamble = {}) {
    ProxyProcess::Options options;
    options.config_yaml = std::string(preamble) + "routes:\n  - name: r\n    upstream: " + upstream +
                          "\n    models: [m]\n    retry: {max_attempts: 2, base_delay_ms: 5, min_attempt_ms: 10}\n" +
                          std::string(route_extra);
    auto proxy = std::make_unique<ProxyProcess>(std::move(options));
    proxy->start();
    return proxy;
}

// One worker, so one upstream pool: a test that needs a connection reused,
// or not, cannot see two pools.
constexpr std::string_view one_worker = "workers: 1\n";

Response post(const ProxyProcess& proxy, std::string_view request_id) {
    HttpClient client = proxy.client({.timeout = 10s});
    return client.post_json("/v1/chat/completions", chat_request, {{"x-request-id", std::string(request_id)}});
}

std::vector<JsonRecord> attempts_of(const ProxyProcess& proxy, std::string_view request_id) {
    REQUIRE(proxy.wait_for_record(
        [&](const JsonRecord& r) { return r.event() == "turn" && r.str("request_id") == request_id; }, bound));
    std::vector<JsonRecord> out;
    for (auto& r : proxy.records())
        if (r.event() == "attempt" && r.str("request_id") == request_id) out.push_back(std::move(r));
    return out;
}

// The answer is the section 9 envelope of a failure without an upstream
// answer, and every attempt record names the same class, code and rule.
void check_failure(const ProxyProcess& proxy, const Response& r, std::string_view request_id, unsigned status,
                   std::string_view cls, std::string_view code, std::string_view rule, int attempts) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == status);
    CHECK(r.header("x-modelproxy-error-class") == cls);
    CHECK(r.header("x-modelproxy-attempts") == std::to_string(attempts));
    CHECK(r.header("x-should-retry") == "false");
    const auto error = envelope_error(r);
    CHECK(error.at("type").as_string() == "modelproxy_error");
    CHECK(error.at("code").as_string() == code);
    CHECK(error.at("class").as_string() == cls);
    CHECK(error.at("attempts").as_int64() == attempts);
    const auto records = attempts_of(proxy, request_id);
    REQUIRE(records.size() == static_cast<std::size_t>(attempts));
    for (const auto& a : records) {
        CAPTURE(a.line());
        CHECK(a.str("class") == cls);
        CHECK(a.str("code") == code);
        CHECK(a.str("rule") == rule);
    }
}

// The second request gets the upstream's real second answer ("second"), on
// a connection of its own: the first one, which had bytes nobody asked for,
// was not reused.
void check_next_answer_on_new_connection(FakeProvider& fake, const ProxyProcess& proxy,
                                         std::string_view request_id) {
    const Response two = post(proxy, request_id);
    CAPTURE(two.wire);
    REQUIRE(two.ok());
    CHECK(two.status == 200);
    CHECK(two.body == chat_answer("second"));
    REQUIRE(fake.request_count() == 2);
    const auto requests = fake.requests();
    CHECK(requests[0].connection_id != requests[1].connection_id);
}

void check_healthy(FakeProvider& fake, const ProxyProcess& proxy) {
    HttpClient probe = proxy.client();
    const Response health = probe.get("/healthz");
    REQUIRE(health.ok());
    CHECK(health.status == 200);
    fake.push(Script::json(200, chat_answer("after")));
    const Response turn = probe.post_json("/v1/chat/completions", chat_request);
    CAPTURE(turn.wire);
    REQUIRE(turn.ok());
    CHECK(turn.status == 200);
    CHECK(turn.body == chat_answer("after"));
}

std::string chunked_head() {
    return format_response_head(200, {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}});
}

}  // namespace

TEST_CASE("an upstream head longer than the transport's limit is a dropped connection, replayed", "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"));
    std::string endless = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 1000; ++i) endless += "X-Filler-" + std::to_string(i) + ": " + std::string(100, 'a') + "\r\n";
    fake.push(Script{}.write(endless).hang(), 2);
    const Response r = post(*proxy, "endless-head");
    check_failure(*proxy, r, "endless-head", 502, "network", "connection_dropped", "dropped-before-head", 2);
    // Neither connection is kept: the proxy closed both.
    CHECK(fake.wait_for_peer_close(0, bound));
    CHECK(fake.wait_for_peer_close(1, bound));
    check_healthy(fake, *proxy);
}

TEST_CASE("an upstream head that trickles forever ends at the turn deadline: 504 timeout", "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"), "    timeout_ms: 400\n");
    Script slow;
    slow.write("HTTP/1.1 200 OK\r\n");
    for (int i = 0; i < 40; ++i) slow.sleep(50ms).write("X-Slow: " + std::to_string(i) + "\r\n");
    fake.push(slow.hang());
    const Response r = post(*proxy, "slow-head");
    check_failure(*proxy, r, "slow-head", 504, "timeout", "deadline", "turn-deadline", 1);
    CHECK(r.header("x-modelproxy-decision") == "deadline");
    CHECK(fake.wait_for_peer_close(0, bound));
    check_healthy(fake, *proxy);
}

TEST_CASE("a chunk size of 2^64 - 1", "[hostile]") {
    FakeProvider fake;
    SECTION("then a close mid-chunk: a dropped connection, replayed") {
        auto proxy = start_proxy_to(fake.base_url("/v1"));
        fake.push(Script{}.write(chunked_head() + "ffffffffffffffff\r\n{\"id\":\"huge\"").close(), 2);
        const Response r = post(*proxy, "huge-chunk");
        check_failure(*proxy, r, "huge-chunk", 502, "network", "connection_dropped", "dropped-in-body", 2);
        check_healthy(fake, *proxy);
    }
    SECTION("then more bytes than max_response_body_bytes: a terminal 502 response_too_large") {
        auto proxy = start_proxy_to(fake.base_url("/v1"), {}, "limits: {max_response_body_bytes: 4096}\n");
        fake.push(Script{}.write(chunked_head() + "ffffffffffffffff\r\n" + std::string(8192, ' ')).hang());
        const Response r = post(*proxy, "huge-chunk-limit");
        check_failure(*proxy, r, "huge-chunk-limit", 502, "network", "response_too_large", "response-too-large", 1);
        CHECK(fake.wait_for_peer_close(0, bound));
        check_healthy(fake, *proxy);
    }
}

TEST_CASE("invalid chunked framing is a dropped connection, replayed, never passed on", "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"));
    std::string framing;
    SECTION("a chunk size that is not hex") { framing = "zz\r\n{}\r\n0\r\n\r\n"; }
    SECTION("a chunk size above 2^64") { framing = "10000000000000000\r\n{}\r\n0\r\n\r\n"; }
    SECTION("a chunk longer than its size") { framing = "2\r\n{}}}\r\n0\r\n\r\n"; }
    fake.push(Script{}.write(chunked_head() + framing).hang(), 2);
    const Response r = post(*proxy, "bad-chunks");
    check_failure(*proxy, r, "bad-chunks", 502, "network", "connection_dropped", "dropped-in-body", 2);
    CHECK(fake.wait_for_peer_close(0, bound));
    check_healthy(fake, *proxy);
}

TEST_CASE("a body longer than its Content-Length: the extra bytes never answer the next request", "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"), {}, one_worker);
    // After the declared body, in the same write, a whole second answer
    // nobody asked for.
    const std::string first = chat_answer("first");
    const std::string forged = chat_answer("forged");
    const Headers json{{"Content-Type", "application/json"}};
    Headers first_headers = json, forged_headers = json;
    first_headers.push_back({"Content-Length", std::to_string(first.size())});
    forged_headers.push_back({"Content-Length", std::to_string(forged.size())});
    fake.push(Script{}.write(format_response_head(200, first_headers) + first +
                             format_response_head(200, forged_headers) + forged));
    fake.push(Script::json(200, chat_answer("second")));

    const Response one = post(*proxy, "long-body-1");
    CAPTURE(one.wire);
    REQUIRE(one.ok());
    CHECK(one.status == 200);
    CHECK(one.body == first);

    check_next_answer_on_new_connection(fake, *proxy, "long-body-2");
    CHECK(fake.wait_for_peer_close(0, bound));
    check_healthy(fake, *proxy);
}

// The same forged answer written a moment later, while the connection waits
// in the pool: the proxy has read the whole first answer and seen nothing
// after it, so only what it learns of the idle connection before reusing it
// (a peek, or the reactor reporting it readable) keeps the forged bytes from
// answering the next request.
TEST_CASE("an answer nobody asked for, sent to an idle pooled connection, never answers the next request",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"), {}, one_worker);
    const std::string first = chat_answer("first");
    const std::string forged = chat_answer("forged");
    Headers first_headers{{"Content-Type", "application/json"}, {"Content-Length", std::to_string(first.size())}};
    Headers forged_headers{{"Content-Type", "application/json"}, {"Content-Length", std::to_string(forged.size())}};
    fake.push(Script{}
                  .write(format_response_head(200, first_headers) + first)
                  .sleep(std::chrono::milliseconds(100))
                  .write(format_response_head(200, forged_headers) + forged));
    fake.push(Script::json(200, chat_answer("second")));

    const Response one = post(*proxy, "late-forged-1");
    CAPTURE(one.wire);
    REQUIRE(one.ok());
    CHECK(one.body == first);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the forged answer is sent meanwhile

    check_next_answer_on_new_connection(fake, *proxy, "late-forged-2");
    check_healthy(fake, *proxy);
}

// A whole answer followed at once by a close or a reset, in one write, on a
// connection that did not say `Connection: close`: the proxy pools it. The
// FIN is reported by the answer's read (TCP_INQ) and the pool peeks; the
// reset is not, so the pool trusts the connection without a peek, and the
// next request's send fails on it (docs/behaviour.md section 4). Either way the next
// request goes out on a new connection, as its one attempt.
TEST_CASE("a pooled connection closed or reset right after a whole answer: the next request takes a new one",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"), {}, one_worker);
    const std::string first = chat_answer("first");
    Headers headers{{"Content-Type", "application/json"}, {"Content-Length", std::to_string(first.size())}};
    SECTION("closed") { fake.push(Script{}.write(format_response_head(200, headers) + first).close()); }
    SECTION("reset") { fake.push(Script{}.write(format_response_head(200, headers) + first).reset()); }
    fake.push(Script::json(200, chat_answer("second")));

    const Response one = post(*proxy, "end-after-answer-1");
    CAPTURE(one.wire);
    REQUIRE(one.ok());
    CHECK(one.body == first);
    const Response two = post(*proxy, "end-after-answer-2");
    CAPTURE(two.wire);
    REQUIRE(two.ok());
    CHECK(two.status == 200);
    CHECK(two.body == chat_answer("second"));
    CHECK(two.header("x-modelproxy-attempts") == "1");
    REQUIRE(fake.request_count() == 2);
    const auto requests = fake.requests();
    CHECK(requests[0].connection_id != requests[1].connection_id);
    check_healthy(fake, *proxy);
}

// A pooled connection's answer that ends in a close right after its first
// body bytes, in one write: the close arrives with those bytes, and only the
// read after them can see it. The attempt must fail at once as a drop in the
// body and be replayed, not wait for more bytes until the turn's deadline.
TEST_CASE("a reused connection closed right after part of the body: the drop is seen at once and replayed",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"), {}, one_worker);
    fake.push(Script::json(200, chat_answer("first")));
    const std::string full = chat_answer("second");
    Headers headers{{"Content-Type", "application/json"}, {"Content-Length", std::to_string(full.size())}};
    SECTION("closed") {
        fake.push(Script{}.write(format_response_head(200, headers) + full.substr(0, 20)).close());
    }
    SECTION("reset") {
        fake.push(Script{}.write(format_response_head(200, headers) + full.substr(0, 20)).reset());
    }
    fake.push(Script::json(200, full));

    const Response one = post(*proxy, "mid-body-close-1");
    REQUIRE(one.ok());
    CHECK(one.body == chat_answer("first"));
    // The client's own timeout (10 s) fails the test if the attempt waits
    // for more bytes (the turn's deadline is longer).
    const Response two = post(*proxy, "mid-body-close-2");
    CAPTURE(two.wire);
    REQUIRE(two.ok());
    CHECK(two.status == 200);
    CHECK(two.body == full);
    CHECK(two.header("x-modelproxy-attempts") == "2");
    const auto requests = fake.requests();
    REQUIRE(requests.size() == 3);
    CHECK(requests[0].connection_id == requests[1].connection_id);  // attempt 1 reused the pooled connection
    check_healthy(fake, *proxy);
}

TEST_CASE("an upstream whose TLS handshake never finishes: 502 network, connect-failed in every attempt record",
          "[hostile]") {
    SilentListener silent;  // accepts TCP, never answers the ClientHello
    auto proxy = start_proxy_to("https://127.0.0.1:" + std::to_string(silent.port()) + "/v1",
                             "    connect_timeout_ms: 200\n");
    const Response r = post(*proxy, "tls-silent");
    check_failure(*proxy, r, "tls-silent", 502, "network", "connect_failed", "connect-failed", 2);
    HttpClient probe = proxy->client();
    const Response health = probe.get("/healthz");
    REQUIRE(health.ok());
    CHECK(health.status == 200);
}

// A broken stream's unterminated last event is part of the break, not a data
// line: an upstream that drops in the middle of an event is replayed as a
// dropped connection (docs/behaviour.md sections 5 and 7), not refused unparseable_event.
TEST_CASE("an upstream that resets in the middle of an event before answer text is replayed", "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy_to(fake.base_url("/v1"));
    const std::string role =
        R"(data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})"
        "\n\n";
    const std::string text =
        R"(data: {"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":"stop"}]})"
        "\n\ndata: [DONE]\n\n";
    SseOptions broken;
    broken.end = SseEnd::reset;
    fake.push(Script::sse({role, R"(data: {"id":"c1","obj)"}, broken));
    fake.push(Script::sse({role, text}));
    HttpClient client = proxy->client();
    const Response r = client.post_json("/v1/chat/completions", R"({"model":"m","stream":true,"messages":[]})",
                                        {{"x-request-id", "mid-event"}});
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(r.body == role + text);
    const auto records = attempts_of(*proxy, "mid-event");
    REQUIRE(records.size() == 2);
    CHECK(records[0].str("class") == "network");
    CHECK(records[0].str("rule") == "dropped-in-body");
}
