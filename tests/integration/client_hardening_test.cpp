// The client side against an attacker's moves (docs/behaviour.md sections 4, 9, 10 and
// 12), through the real binary with a raw-socket client and the fake
// provider: what the head alone decides before any body byte is read, the
// connections over max_connections, client tokens that must never reach an
// upstream, chunked request trailers, strict framing (methods, Host,
// HTTP/1.0, Connection) on both request readers, and records and envelopes
// that stay valid JSON whatever bytes a client sends.
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr auto bound = 5s;        // generous bound for things that take milliseconds
constexpr auto at_once = 2s;      // an answer the proxy gives without waiting for a body
const std::string tokens_env = "MP_TEST_CLIENT_TOKENS";
const std::string token = "tok-alpha-5e1c";
const std::string route_key = "mpkey-route-2b7d41c9e0";
const std::string key_env = "MP_TEST_ROUTE_KEY";

const std::string chat_request = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
const std::string chat_answer =
    R"({"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";

// One route `fake` serving model m, after `preamble` (top-level keys);
// `route_extra` holds more keys of that route, each line indented by four
// spaces; `wildcard` adds a "*" route to the same upstream.
std::string config(const FakeProvider& fake, std::string_view preamble = {}, std::string_view route_extra = {},
                   bool wildcard = false) {
    std::string yaml = std::string(preamble) + "routes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") +
                       "\n    models: [m]\n" + std::string(route_extra);
    if (wildcard) yaml += "  - name: rest\n    upstream: " + fake.base_url("/v1") + "\n    models: [\"*\"]\n";
    return yaml;
}

const std::string with_tokens = "clients:\n  tokens_env: MP_TEST_CLIENT_TOKENS\n";

std::unique_ptr<ProxyProcess> proxy_with_tokens(const FakeProvider& fake, std::string_view preamble = {},
                                                std::string_view route_extra = {}) {
    return start_proxy(config(fake, with_tokens + std::string(preamble), route_extra),
                       {{tokens_env, token}, {key_env, route_key}});
}

// A request head in raw bytes: `start` is the request line without its CRLF.
std::string head(std::string_view start, const Headers& headers) {
    std::string text(start);
    text += "\r\n";
    for (const auto& h : headers) text += h.name + ": " + h.value + "\r\n";
    text += "\r\n";
    return text;
}

// A section 9 refusal: status, envelope code, type, x-should-retry: false.
void check_refusal(const Response& r, unsigned status, std::string_view code,
                   std::string_view type = "invalid_request_error") {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == status);
    CHECK(r.header("x-should-retry") == "false");
    const auto error = envelope_error(r);
    CHECK(error.at("code").as_string() == code);
    CHECK(error.at("type").as_string() == type);
}

// The proxy's peak resident set (VmHWM) in KiB, -1 when unreadable.
std::int64_t peak_rss_kib(const ProxyProcess& proxy) {
    std::ifstream status("/proc/" + std::to_string(proxy.pid()) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6));
    return -1;
}

// Forces the request through Beast's parser: an obs-text byte in a field
// value is outside the one-pass reader's strict form (transport/strict_head.hpp).
const Header beast_only{"X-Obs-Text", "caf\xe9"};

}  // namespace

// ---------------------------------------------------------------------------
// Section 12: the token is checked on the head, before any body byte

TEST_CASE("a stranger's upload gets 401 on its head at once: no 100 Continue, no body read, connection closed",
          "[client-hardening]") {
    FakeProvider fake;
    auto proxy = proxy_with_tokens(fake, "limits: {header_timeout_ms: 30000, idle_timeout_ms: 30000}\n");
    Headers headers{{"Host", "127.0.0.1"},
                    {"Content-Type", "multipart/form-data; boundary=B"},
                    {"x-request-id", "stranger-1"}};
    SECTION("with Expect: 100-continue") {
        headers.push_back({"Content-Length", "31457280"});
        headers.push_back({"Expect", "100-continue"});
    }
    SECTION("without Expect") { headers.push_back({"Content-Length", "31457280"}); }
    SECTION("chunked") { headers.push_back({"Transfer-Encoding", "chunked"}); }
    SECTION("a wrong token") {
        headers.push_back({"Content-Length", "31457280"});
        headers.push_back({"Authorization", "Bearer tok-beta"});
    }
    HttpClient client = proxy->client();
    // The head alone: the 30 MB body is never sent, so only an answer on the
    // head can come.
    REQUIRE_FALSE(client.send_raw(head("POST /v1/audio/transcriptions HTTP/1.1", headers)));
    const Response r = client.read_response(at_once);
    check_refusal(r, 401, "unauthorized");
    CHECK_THAT(r.wire, !Contains("100 Continue"));
    CHECK(r.header("connection") == "close");
    CHECK(r.header("x-modelproxy-request-id") == "stranger-1");
    CHECK(client.is_closed_by_peer(at_once));
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("request_id") == "stranger-1");
    CHECK(turn->integer("status") == 401);
    CHECK(fake.request_count() == 0);
}

TEST_CASE("a stranger's whole 24 MiB upload is answered 401 and not buffered", "[client-hardening]") {
    FakeProvider fake;
    auto proxy = proxy_with_tokens(fake);
    const std::int64_t peak_before = peak_rss_kib(*proxy);
    REQUIRE(peak_before > 0);
    const std::string body(24u << 20, 'a');
    HttpClient client = proxy->client(HttpClient::Options{.timeout = 20s});
    // The proxy ends its side after the answer and drops what still comes
    // until the client is done, so the whole upload is taken, and its answer
    // is read after it, not lost to a reset.
    REQUIRE_FALSE(client.send_raw(head("POST /v1/files HTTP/1.1", {{"Host", "127.0.0.1"},
                                                                     {"Content-Type", "application/octet-stream"},
                                                                     {"Content-Length", std::to_string(body.size())}}) +
                                  body));
    const Response r = client.read_response(bound);
    check_refusal(r, 401, "unauthorized");
    CHECK(client.is_closed_by_peer(bound));
    // No copy of the body was ever held: the peak grew by far less than it.
    const std::int64_t peak_after = peak_rss_kib(*proxy);
    CAPTURE(peak_before, peak_after);
    CHECK(peak_after - peak_before < 8 * 1024);
    CHECK(fake.request_count() == 0);
}

TEST_CASE("bodies announced large and never sent hold no memory for what did not arrive", "[client-hardening]") {
    FakeProvider fake;
    auto proxy = start_proxy(config(
        fake, "limits: {max_request_body_bytes: 134217728, header_timeout_ms: 300, idle_timeout_ms: 300}\n"));
    const std::int64_t peak_before = peak_rss_kib(*proxy);
    REQUIRE(peak_before > 0);
    // Four admitted requests each announce 100 MiB and send 10 bytes of it.
    std::vector<HttpClient> clients;
    for (int i = 0; i < 4; ++i) {
        clients.push_back(proxy->client());
        REQUIRE_FALSE(clients.back().send_raw(head("POST /v1/chat/completions HTTP/1.1",
                                                   {{"Host", "127.0.0.1"},
                                                    {"Content-Type", "application/json"},
                                                    {"Content-Length", std::to_string(100u << 20)}}) +
                                              R"({"model":)"));
    }
    // Each waits out idle_timeout_ms for the rest, then gets its 408.
    for (HttpClient& client : clients) check_refusal(client.read_response(bound), 408, "request_timeout");
    const std::int64_t peak_after = peak_rss_kib(*proxy);
    CAPTURE(peak_before, peak_after);
    // Far below the 400 MiB announced (touched up front, the peak grew by
    // about 300 MiB). The bound leaves room for a sanitizer's shadow of the
    // reserved strings, an eighth of their size.
    CHECK(peak_after - peak_before < 100 * 1024);
    CHECK(fake.request_count() == 0);
}

TEST_CASE("a request refused on its head is never sent 100 Continue and its body is not awaited",
          "[client-hardening]") {
    FakeProvider fake;
    auto proxy = start_proxy(config(fake, "limits: {header_timeout_ms: 30000, idle_timeout_ms: 30000}\n"));
    std::string start;
    unsigned status = 0;
    std::string code;
    Headers headers{{"Host", "127.0.0.1"}};
    SECTION("404 outside /v1") {
        start = "POST /upload HTTP/1.1";
        status = 404;
        code = "not_found";
    }
    SECTION("405 on a health path") {
        start = "POST /healthz HTTP/1.1";
        status = 405;
        code = "method_not_allowed";
    }
    SECTION("400 invalid_path") {
        start = "POST /v1/%2e%2e/files HTTP/1.1";
        status = 400;
        code = "invalid_path";
    }
    SECTION("400 for a lower-case method") {
        start = "post /v1/chat/completions HTTP/1.1";
        status = 400;
        code = "bad_request";
    }
    SECTION("400 without Host") {
        start = "POST /v1/chat/completions HTTP/1.1";
        headers.clear();
        status = 400;
        code = "bad_request";
    }
    headers.push_back({"Content-Type", "application/json"});
    headers.push_back({"Content-Length", "1000000"});
    headers.push_back({"Expect", "100-continue"});
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(head(start, headers)));
    const Response r = client.read_response(at_once);
    CAPTURE(start);
    check_refusal(r, status, code);
    CHECK_THAT(r.wire, !Contains("100 Continue"));
    CHECK(client.is_closed_by_peer(at_once));
    CHECK(fake.request_count() == 0);
}

// ---------------------------------------------------------------------------
// Section 12: max_connections

TEST_CASE("liveness probes are answered beyond max_connections, and anything else gets 503 there", "[client-hardening]") {
    FakeProvider fake;
    auto proxy = start_proxy(config(fake, "limits: {max_connections: 3}\n"));
    // Idle strangers hold every slot, each having fetched /healthz once.
    std::vector<HttpClient> idle;
    for (int i = 0; i < 3; ++i) {
        idle.push_back(proxy->client());
        REQUIRE(idle.back().get("/healthz").status == 200);
    }
    for (const std::string path : {"/healthz", "/readyz", "/metrics"}) {
        CAPTURE(path);
        HttpClient probe = proxy->client();
        const Response r = probe.get(path);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.header("connection") == "close");
        if (path == "/healthz") CHECK(r.body == R"({"status":"ok"})");
        if (path == "/metrics") CHECK_THAT(r.body, Contains("modelproxy_"));
        CHECK(probe.is_closed_by_peer(bound));
    }
    HttpClient other = proxy->client();
    check_refusal(other.post_json("/v1/chat/completions", chat_request), 503, "too_many_connections",
                  "modelproxy_error");
    CHECK(other.is_closed_by_peer(bound));
    CHECK(fake.request_count() == 0);
    CHECK(idle[0].get("/healthz").status == 200);  // the admitted ones are still served
}

TEST_CASE("a connection beyond max_connections is read for one bounded head and no body", "[client-hardening]") {
    FakeProvider fake;
    auto proxy = start_proxy(
        config(fake, "limits: {max_connections: 1, header_timeout_ms: 300, max_header_bytes: 1024}\n"));
    HttpClient held = proxy->client();
    REQUIRE(held.get("/healthz").status == 200);

    SECTION("a silent one gets 408 at header_timeout_ms") {
        HttpClient silent = proxy->client();
        check_refusal(silent.read_response(bound), 408, "request_timeout");
        CHECK(silent.is_closed_by_peer(bound));
    }
    SECTION("a head over max_header_bytes gets 431") {
        HttpClient big = proxy->client();
        REQUIRE_FALSE(big.send_raw(head("GET /healthz HTTP/1.1", {{"Host", "x"}, {"X-Pad", std::string(2000, 'p')}})));
        check_refusal(big.read_response(bound), 431, "header_too_large");
        CHECK(big.is_closed_by_peer(bound));
    }
    SECTION("an upload gets 503 on its head, its body never awaited") {
        HttpClient upload = proxy->client();
        REQUIRE_FALSE(upload.send_raw(head("POST /v1/files HTTP/1.1", {{"Host", "x"}, {"Content-Length", "31457280"}})));
        check_refusal(upload.read_response(at_once), 503, "too_many_connections", "modelproxy_error");
        CHECK(upload.is_closed_by_peer(at_once));
    }
    SECTION("a probe with a body is not a probe") {
        HttpClient probe = proxy->client();
        REQUIRE_FALSE(probe.send_raw(head("GET /healthz HTTP/1.1", {{"Host", "x"}, {"Content-Length", "5"}}) + "hello"));
        check_refusal(probe.read_response(bound), 503, "too_many_connections", "modelproxy_error");
    }
    CHECK(held.get("/healthz").status == 200);
}

// ---------------------------------------------------------------------------
// Sections 4 and 12: the client's token never reaches an upstream

TEST_CASE("the client's token reaches no upstream, whichever header carried it", "[client-hardening]") {
    FakeProvider fake;
    Headers headers;
    std::string route_extra;
    SECTION("Authorization and x-api-key, on a route without a key") {
        headers = {{"Authorization", "Bearer " + token}, {"x-api-key", token}};
    }
    SECTION("x-api-key and Authorization") { headers = {{"x-api-key", token}, {"Authorization", "Bearer " + token}}; }
    SECTION("Authorization and api-key") { headers = {{"Authorization", "Bearer " + token}, {"api-key", token}}; }
    SECTION("repeated fields") {
        headers = {{"x-api-key", token}, {"Authorization", "Bearer " + token}, {"X-Api-Key", token},
                   {"authorization", "Bearer " + token}, {"API-KEY", " " + token}};
    }
    SECTION("in a header of another name") {
        headers = {{"Authorization", "Bearer " + token}, {"OpenAI-Organization", token}};
    }
    SECTION("on a route with a key") {
        route_extra = "    api_key_env: " + key_env + "\n    api_key_header: api-key\n";
        headers = {{"x-api-key", token}, {"Authorization", "Bearer " + token}, {"api-key", token}};
    }
    fake.push(Script::json(200, chat_answer));
    auto proxy = proxy_with_tokens(fake, {}, route_extra);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request, headers);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord up = fake.requests()[0];
    for (const auto& h : up.headers) {
        CAPTURE(h.name, h.value);
        CHECK_THAT(h.value, !Contains(token));
    }
    if (!route_extra.empty()) {
        // Only the route's key, in the route's header.
        CHECK(count_header(up.headers, "api-key") == 1);
        CHECK(up.header("api-key") == route_key);
        CHECK_FALSE(up.header("authorization"));
        CHECK_FALSE(up.header("x-api-key"));
    }
}

TEST_CASE("with client tokens, a provider key the client passes through still reaches a route without a key",
          "[client-hardening]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = proxy_with_tokens(fake);
    const Response r = proxy->client().post_json(
        "/v1/chat/completions", chat_request,
        {{"Authorization", "Bearer " + token}, {"x-api-key", "sk-ant-provider-key"}, {"anthropic-version", "1"}});
    CAPTURE(r.wire);
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord up = fake.requests()[0];
    CHECK(up.header("x-api-key") == "sk-ant-provider-key");
    CHECK(up.header("anthropic-version") == "1");
    CHECK_FALSE(up.header("authorization"));
}

// ---------------------------------------------------------------------------
// Section 4: a chunked request's trailer fields are dropped

namespace {

// A chunked chat request whose head carries `head_fields` and whose body
// ends with the trailer `trailer` (raw field lines, each ending in CRLF).
std::string chunked_with_trailer(const Headers& head_fields, std::string_view trailer) {
    Headers headers{{"Host", "127.0.0.1"}, {"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}};
    headers.insert(headers.end(), head_fields.begin(), head_fields.end());
    return head("POST /v1/chat/completions HTTP/1.1", headers) + format_chunk(chat_request) + "0\r\n" +
           std::string(trailer) + "\r\n";
}

}  // namespace

TEST_CASE("a token sent only in a trailer does not authenticate", "[client-hardening]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));  // what a trailer that authenticated would have reached
    auto proxy = proxy_with_tokens(fake);
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(chunked_with_trailer({}, "Authorization: Bearer " + token + "\r\n")));
    check_refusal(client.read_response(bound), 401, "unauthorized");
    CHECK(fake.request_count() == 0);
}

TEST_CASE("trailer fields set no deadline, no request id and reach no upstream", "[client-hardening]") {
    FakeProvider fake;
    // Slower than a 1 ms client deadline would allow.
    fake.push(Script().sleep(300ms).then(Script::json(200, chat_answer)));
    auto proxy = start_proxy(config(fake));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(chunked_with_trailer({{"OpenAI-Project", "from-head"}},
                                                       "x-modelproxy-timeout-ms: 1\r\n"
                                                       "x-stainless-timeout: 0.001\r\n"
                                                       "X-Request-Id: from-the-trailer\r\n"
                                                       "OpenAI-Organization: org-trailer\r\n"
                                                       "Connection: close\r\n")));
    const Response r = client.read_response(bound);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer);
    CHECK(r.header("x-modelproxy-request-id") != "from-the-trailer");
    CHECK_FALSE(r.header("connection"));  // a trailer does not end the connection either
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord up = fake.requests()[0];
    CHECK(up.body == chat_request);
    CHECK(up.header("openai-project") == "from-head");
    CHECK_FALSE(up.header("openai-organization"));
    CHECK_FALSE(up.header("x-request-id"));
}

// ---------------------------------------------------------------------------
// Section 4: strict framing, on both request readers

TEST_CASE("a method is case-sensitive: a lower-case POST is 400, not forwarded past body routing",
          "[client-hardening]") {
    FakeProvider fake;
    // With a "*" route, `post` used to pass as another method and reach it
    // with the body's model unrouted.
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(config(fake, {}, {}, true));
    Headers headers{{"Host", "127.0.0.1"},
                    {"Content-Type", "application/json"},
                    {"Content-Length", std::to_string(chat_request.size())}};
    SECTION("read in one pass") {}
    SECTION("read by Beast's parser") { headers.push_back(beast_only); }
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(head("post /v1/chat/completions HTTP/1.1", headers) + chat_request));
    check_refusal(client.read_response(bound), 400, "bad_request");
    CHECK(client.is_closed_by_peer(bound));
    CHECK(fake.request_count() == 0);
}

TEST_CASE("an HTTP/1.1 request needs exactly one Host", "[client-hardening]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(config(fake));
    Headers headers{{"Content-Type", "application/json"}, {"Content-Length", std::to_string(chat_request.size())}};
    SECTION("none") {}
    SECTION("none, read by Beast's parser") { headers.push_back(beast_only); }
    SECTION("two") {
        headers.push_back({"Host", "a.example"});
        headers.push_back({"Host", "b.example"});
    }
    SECTION("two, read by Beast's parser") {
        headers.push_back({"Host", "a.example"});
        headers.push_back({"host", "a.example"});
        headers.push_back(beast_only);
    }
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(head("POST /v1/chat/completions HTTP/1.1", headers) + chat_request));
    check_refusal(client.read_response(bound), 400, "bad_request");
    CHECK(fake.request_count() == 0);
}

TEST_CASE("close in any Connection field closes the connection", "[client-hardening]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(config(fake));
    Headers headers{{"Host", "127.0.0.1"},
                    {"Content-Type", "application/json"},
                    {"Content-Length", std::to_string(chat_request.size())},
                    {"Connection", "keep-alive"},
                    {"Connection", "x-trace, close"}};
    SECTION("read in one pass") {}
    SECTION("read by Beast's parser") { headers.push_back(beast_only); }
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(head("POST /v1/chat/completions HTTP/1.1", headers) + chat_request));
    const Response r = client.read_response(bound);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("connection") == "close");
    CHECK(client.is_closed_by_peer(bound));
}

namespace {

std::string stream_events() {
    const std::string chunk = R"(data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{)";
    return chunk + R"("role":"assistant","content":""},"finish_reason":null}]})" "\n\n" + chunk +
           R"("content":"Hello"},"finish_reason":null}]})" "\n\n" + chunk +
           R"(},"finish_reason":"stop"}]})" "\n\ndata: [DONE]\n\n";
}

const std::string stream_request = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";

}  // namespace

TEST_CASE("an HTTP/1.0 client gets a stream unchunked, ended by the close", "[client-hardening]") {
    FakeProvider fake;
    const std::string events = stream_events();
    fake.push(Script::sse({events.substr(0, 150), events.substr(150)}));
    auto proxy = start_proxy(config(fake));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(head("POST /v1/chat/completions HTTP/1.0",
                                       {{"Content-Type", "application/json"},
                                        {"Connection", "keep-alive"},
                                        {"Content-Length", std::to_string(stream_request.size())}}) +
                                  stream_request));
    const Response r = client.read_response(bound);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK_FALSE(r.chunked);
    CHECK_FALSE(r.header("transfer-encoding"));
    CHECK_FALSE(r.header("content-length"));
    CHECK(r.header("connection") == "close");
    CHECK(r.body == events);  // the stream's bytes as sent, delimited by the close
    CHECK(client.is_closed_by_peer(bound));
}

TEST_CASE("an HTTP/1.0 client is never sent 100 Continue and gets one answer per connection",
          "[client-hardening]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(config(fake));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(head("POST /v1/chat/completions HTTP/1.0",
                                       {{"Host", "127.0.0.1"},
                                        {"Content-Type", "application/json"},
                                        {"Expect", "100-continue"},
                                        {"Connection", "keep-alive"},
                                        {"Content-Length", std::to_string(chat_request.size())}}) +
                                  chat_request));
    const Response r = client.read_response(bound);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK_THAT(r.wire, StartsWith("HTTP/1.1 200"));  // never an interim 100 first
    CHECK(r.body == chat_answer);
    CHECK(r.header("connection") == "close");
    CHECK(client.is_closed_by_peer(bound));
}

// ---------------------------------------------------------------------------
// Section 10: records and envelopes are valid JSON whatever bytes a client sends

TEST_CASE("an x-request-id that is not UTF-8 leaves every record valid JSON", "[client-hardening]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = proxy_with_tokens(fake);
    const std::string id = "id-\xff\xfe-\xc3(-\ttab";
    HttpClient client = proxy->client();
    const Response ok =
        client.post_json("/v1/chat/completions", chat_request, {{"Authorization", "Bearer " + token}, {"x-request-id", id}});
    CHECK(ok.status == 200);
    const Response refused = client.post_json("/v1/chat/completions", chat_request, {{"x-request-id", id}});
    CHECK(refused.status == 401);
    REQUIRE(proxy->wait_for_records("turn", 2, bound));
    std::vector<std::string> bad;
    const auto records = proxy->records(&bad);
    CHECK(bad == std::vector<std::string>{});
    REQUIRE(records.size() >= 3);  // the attempt and two turns
    for (const auto& record : records) {
        CAPTURE(record.line());
        CHECK(record.str("request_id") == "id-\xef\xbf\xbd\xef\xbf\xbd-\xef\xbf\xbd(-\ttab");
    }
}

TEST_CASE("a path or a model name that is not UTF-8 gets a 404 envelope that is valid JSON", "[client-hardening]") {
    FakeProvider fake;
    auto proxy = start_proxy(config(fake));
    HttpClient client = proxy->client();
    Response r;
    SECTION("a model id in the path") { r = client.get("/v1/models/m%ff%c3%28%01"); }
    SECTION("a multipart model") {
        const std::string body = "--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\xff\xc3(\r\n--B--\r\n";
        r = client.request("POST", "/v1/audio/transcriptions",
                           {{"Content-Type", "multipart/form-data; boundary=B"}}, body);
    }
    check_refusal(r, 404, "model_not_found");  // envelope_error parses it, refusing invalid UTF-8
    CHECK_THAT(std::string(envelope_error(r).at("message").as_string()), Contains("m\xef\xbf\xbd\xef\xbf\xbd("));
    std::vector<std::string> bad;
    proxy->records(&bad);
    CHECK(bad == std::vector<std::string>{});
}
