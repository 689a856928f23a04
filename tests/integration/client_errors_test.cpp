// What a client sees when its request is bad, and the locally answered
// endpoints (docs/behaviour.md sections 4, 9 and 12), against the real binary with a
// FakeProvider upstream. Every refusal is checked for its status, its JSON
// envelope and `x-should-retry: false`, and for forwarding nothing: a good
// request afterwards proves the route works, so an empty upstream log is
// evidence, not an accident of a dead route.
#include "support/fake_provider.hpp"

#include "support/compress.hpp"
#include "support/http_client.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds

constexpr std::string_view tokens_env = "MP_TEST_CLIENT_TOKENS";

std::string chat_request(std::string_view model) {
    return R"({"model":")" + std::string(model) + R"(","messages":[{"role":"user","content":"hi"}]})";
}

std::string chat_answer(std::string_view model, std::string_view id = "chatcmpl-1") {
    return R"({"id":")" + std::string(id) + R"(","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

// One route to the fake provider serving two named models (no "*" route),
// after `preamble` (top-level keys such as limits: or clients:).
std::string config_for(const FakeProvider& fake, std::string_view preamble = {}) {
    return std::string(preamble) + "routes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") +
           "\n    models: [gpt-test, other-model]\n";
}

// A whole POST in raw bytes, for targets and framings a client library
// would normalize or refuse to send.
std::string raw_post(std::string_view target, std::string_view body, Headers extra = {}) {
    Headers headers{{"Host", "127.0.0.1"}, {"Content-Type", "application/json"}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    headers.push_back({"Content-Length", std::to_string(body.size())});
    return format_request("POST", target, headers, body);
}

// The section 9 envelope: status, JSON error object with `type`, `code`
// and a message, and `x-should-retry: false`. An empty `code` or `type`
// only requires a non-empty string there (the spec names none).
void check_refusal(const Response& r, unsigned status, std::string_view code,
                   std::string_view type = "invalid_request_error") {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == status);
    CHECK_THAT(r.header("content-type").value_or(""), StartsWith("application/json"));
    CHECK(r.header("x-should-retry") == "false");
    boost::json::error_code ec;
    const boost::json::value doc = boost::json::parse(r.body, ec);
    REQUIRE_FALSE(ec);
    const auto* error = doc.is_object() ? doc.as_object().if_contains("error") : nullptr;
    REQUIRE(error);
    REQUIRE(error->is_object());
    const auto& e = error->as_object();
    const auto text = [&](std::string_view key) -> std::string {
        const auto* v = e.if_contains(key);
        return v && v->is_string() ? std::string(v->as_string()) : std::string();
    };
    if (type.empty())
        CHECK_FALSE(text("type").empty());
    else
        CHECK(text("type") == type);
    if (code.empty())
        CHECK_FALSE(text("code").empty());
    else
        CHECK(text("code") == code);
    CHECK_FALSE(text("message").empty());
}

// Nothing reached the fake so far; then a good request on a new connection
// does, promptly and alone.
void check_nothing_forwarded(FakeProvider& fake, const ProxyProcess& proxy, const Headers& auth = {}) {
    CHECK(fake.request_count() == 0);
    fake.push(Script::json(200, chat_answer("gpt-test", "control")));
    HttpClient control = proxy.client();
    const Response r = control.post_json("/v1/chat/completions", chat_request("gpt-test"), auth);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer("gpt-test", "control"));
    REQUIRE(fake.request_count() == 1);
    CHECK(fake.requests()[0].body == chat_request("gpt-test"));
}

enum class Framing { length, chunked };

// A valid request's head and only part of its body: 1000 bytes short of
// its Content-Length, or its chunks without the last one.
void send_part_of_body(HttpClient& client, Framing framing) {
    const std::string body = chat_request("gpt-test") + std::string(4000, ' ');
    if (framing == Framing::length) {
        const std::string wire = raw_post("/v1/chat/completions", body);
        REQUIRE_FALSE(client.send_raw(std::string_view(wire).substr(0, wire.size() - 1000)));
        return;
    }
    REQUIRE_FALSE(client.send_raw(format_request(
        "POST", "/v1/chat/completions",
        {{"Host", "127.0.0.1"}, {"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}},
        format_chunk(body))));
}

}  // namespace

// ---------------------------------------------------------------------------
// 400

TEST_CASE("a malformed JSON body gets 400 invalid_json and is not forwarded", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    check_refusal(client.post_json("/v1/chat/completions", R"({"model":"gpt-test","messages":[)"), 400,
                  "invalid_json");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a JSON body without model and no \"*\" route gets 400 missing_model", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    check_refusal(client.post_json("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})"),
                  400, "missing_model");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a body with model twice at the top level gets 400 duplicate_model", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    // Both names are served, so only the duplication can refuse it.
    check_refusal(client.post_json("/v1/chat/completions", R"({"model":"gpt-test","model":"other-model"})"), 400,
                  "duplicate_model");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a path with .. or an encoded dot or slash gets 400 invalid_path", "[client-errors]") {
    const std::string target = GENERATE(as<std::string>{}, "/v1/../x", "/v1/a%2Fb", "/v1/%2e%2e/x",
                                        "/v1/chat/%2E%2E/completions", "/v1/chat%2fcompletions");
    CAPTURE(target);
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(raw_post(target, chat_request("gpt-test"))));
    check_refusal(client.read_response(bound), 400, "invalid_path");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("an encoded slash or .. in the query string is not a path problem: forwarded as sent",
          "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    fake.push(Script::json(200, chat_answer("gpt-test")));
    HttpClient client = proxy->client();
    const Response r = client.post_json("/v1/chat/completions?after=a%2Fb&up=..", chat_request("gpt-test"));
    CAPTURE(r.wire);
    CHECK(r.status == 200);
    REQUIRE(fake.request_count() == 1);
    CHECK(fake.requests()[0].target == "/v1/chat/completions?after=a%2Fb&up=..");
}

// ---------------------------------------------------------------------------
// 401 (section 12)

TEST_CASE("without a valid client token a request under /v1/ gets 401 unauthorized", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "clients:\n  tokens_env: MP_TEST_CLIENT_TOKENS\n"),
                             {{std::string(tokens_env), "tok-alpha,tok-beta"}});
    HttpClient client = proxy->client();
    const std::string body = chat_request("gpt-test");
    SECTION("no credential") {
        check_refusal(client.post_json("/v1/chat/completions", body), 401, "unauthorized");
    }
    SECTION("a wrong bearer token") {
        check_refusal(client.post_json("/v1/chat/completions", body, {{"Authorization", "Bearer tok-gamma"}}), 401,
                      "unauthorized");
    }
    SECTION("a token that only starts like a valid one") {
        check_refusal(client.post_json("/v1/chat/completions", body, {{"Authorization", "Bearer tok-alph"}}), 401,
                      "unauthorized");
    }
    SECTION("a wrong x-api-key") {
        check_refusal(client.post_json("/v1/chat/completions", body, {{"x-api-key", "tok-gamma"}}), 401,
                      "unauthorized");
    }
    SECTION("the local model list needs a token too") {
        check_refusal(client.get("/v1/models"), 401, "unauthorized");
    }
    check_nothing_forwarded(fake, *proxy, {{"Authorization", "Bearer tok-alpha"}});
}

TEST_CASE("a valid client token passes as Bearer or x-api-key and is never forwarded", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "clients:\n  tokens_env: MP_TEST_CLIENT_TOKENS\n"),
                             {{std::string(tokens_env), "tok-alpha, tok-beta"}});
    fake.push(Script::json(200, chat_answer("gpt-test")), 3);
    HttpClient client = proxy->client();

    const Response bearer =
        client.post_json("/v1/chat/completions", chat_request("gpt-test"), {{"Authorization", "Bearer tok-alpha"}});
    CAPTURE(bearer.wire);
    CHECK(bearer.status == 200);
    const Response api_key =
        client.post_json("/v1/chat/completions", chat_request("gpt-test"), {{"x-api-key", "tok-beta"}});
    CAPTURE(api_key.wire);
    CHECK(api_key.status == 200);
    // The auth scheme is case-insensitive (RFC 9110 section 11.1).
    const Response lower =
        client.post_json("/v1/chat/completions", chat_request("gpt-test"), {{"authorization", "bearer tok-beta"}});
    CAPTURE(lower.wire);
    CHECK(lower.status == 200);

    REQUIRE(fake.request_count() == 3);
    for (const auto& req : fake.requests()) {
        CHECK_FALSE(req.header("authorization"));
        CHECK_FALSE(req.header("x-api-key"));
        for (const auto& h : req.headers) {
            CAPTURE(h.name, h.value);
            CHECK_THAT(h.value, !Contains("tok-alpha") && !Contains("tok-beta"));
        }
    }
}

TEST_CASE("/healthz and /readyz need no client token", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "clients:\n  tokens_env: MP_TEST_CLIENT_TOKENS\n"),
                             {{std::string(tokens_env), "tok-alpha"}});
    HttpClient client = proxy->client();
    const Response health = client.get("/healthz");
    CHECK(health.status == 200);
    CHECK(health.body == R"({"status":"ok"})");
    const Response ready = client.get("/readyz");
    CHECK(ready.status == 200);
    CHECK(ready.body == R"({"status":"ready"})");
    CHECK(fake.request_count() == 0);
}

// ---------------------------------------------------------------------------
// 404, 405

TEST_CASE("a model no route serves gets 404 model_not_found", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    check_refusal(client.post_json("/v1/chat/completions", chat_request("gpt-unknown")), 404, "model_not_found");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a request under /v1/ without a model and no \"*\" route gets 404 no_route", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    check_refusal(client.get("/v1/files"), 404, "no_route");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a path outside /v1 that is not served gets a 404 envelope", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    check_refusal(client.get("/chat/completions"), 404, "");
    check_refusal(client.post_json("/nothing-here", chat_request("gpt-test")), 404, "");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("POST /healthz gets 405 with an Allow header", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    const Response r = client.post_json("/healthz", "{}");
    check_refusal(r, 405, "");
    CHECK_THAT(r.header("allow").value_or(""), Contains("GET"));
    check_nothing_forwarded(fake, *proxy);
}

// ---------------------------------------------------------------------------
// Limits: 408, 413, 415, 431, 503

TEST_CASE("a request head not complete within header_timeout_ms gets 408 and the connection is closed",
          "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "limits:\n  header_timeout_ms: 200\n"));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"));
    check_refusal(client.read_response(bound), 408, "");
    CHECK(client.is_closed_by_peer(bound));
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a body above max_request_body_bytes gets 413, announced or chunked", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "limits:\n  max_request_body_bytes: 1024\n"));
    // A valid request for a served model, only too big.
    const std::string pad(1500, 'x');
    const std::string body = R"({"model":"gpt-test","pad":")" + pad + R"("})";
    HttpClient client = proxy->client();
    SECTION("Content-Length announces it") {
        REQUIRE_FALSE(client.send_raw(raw_post("/v1/chat/completions", body)));
    }
    SECTION("chunked, no length announced") {
        const std::string half = body.substr(0, body.size() / 2);
        const std::string rest = body.substr(body.size() / 2);
        REQUIRE_FALSE(client.send_raw(format_request(
            "POST", "/v1/chat/completions",
            {{"Host", "127.0.0.1"}, {"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}},
            format_chunk(half) + format_chunk(rest) + format_chunk(""))));
    }
    check_refusal(client.read_response(bound), 413, "");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a body just under max_request_body_bytes is forwarded", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "limits:\n  max_request_body_bytes: 1024\n"));
    fake.push(Script::json(200, chat_answer("gpt-test")));
    std::string body = R"({"model":"gpt-test","pad":")";
    body += std::string(1024 - body.size() - 2, 'x') + R"("})";
    REQUIRE(body.size() == 1024);
    HttpClient client = proxy->client();
    const Response r = client.post_json("/v1/chat/completions", body);
    CAPTURE(r.wire);
    CHECK(r.status == 200);
    REQUIRE(fake.request_count() == 1);
    CHECK(fake.requests()[0].body == body);
}

TEST_CASE("a large body arriving in pieces is forwarded byte for byte, and a request pipelined behind it is answered",
          "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    fake.push(Script::json(200, chat_answer("gpt-test", "large")));
    // A long conversation with `model` at the end, as agents send: routing
    // needs the whole body, which arrives in several reads.
    std::string body = R"({"messages":[)";
    for (int i = 0; i < 3000; ++i) {
        if (i > 0) body += ',';
        body += R"({"role":"user","content":"turn )" + std::to_string(i) + std::string(180, 'x') + R"("})";
    }
    body += R"(],"model":"gpt-test"})";
    REQUIRE(body.size() > 512 * 1024);
    const std::string wire = raw_post("/v1/chat/completions", body, {{"x-request-id", "large-1"}}) +
                             format_request("GET", "/healthz", {{"Host", "127.0.0.1"}});
    HttpClient client = proxy->client();
    const std::size_t head_end = wire.find("\r\n\r\n") + 4;
    REQUIRE_FALSE(client.send_raw(std::string_view(wire).substr(0, head_end + 100)));
    REQUIRE_FALSE(client.send_raw(std::string_view(wire).substr(head_end + 100, 300000)));
    REQUIRE_FALSE(client.send_raw(std::string_view(wire).substr(head_end + 300100)));
    const Response first = client.read_response(bound);
    CAPTURE(first.status, first.body);
    REQUIRE(first.ok());
    CHECK(first.status == 200);
    CHECK(first.header("x-modelproxy-request-id") == "large-1");
    CHECK(first.body == chat_answer("gpt-test", "large"));
    const Response second = client.read_response(bound);
    CAPTURE(second.wire);
    REQUIRE(second.ok());
    CHECK(second.status == 200);
    CHECK(second.body == R"({"status":"ok"})");
    REQUIRE(fake.request_count() == 1);
    CHECK(fake.requests()[0].body == body);
}

TEST_CASE("a body that stops arriving gets 408 after idle_timeout_ms and nothing is forwarded", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "limits:\n  header_timeout_ms: 200\n  idle_timeout_ms: 200\n"));
    HttpClient client = proxy->client();
    SECTION("Content-Length announces more than comes") { send_part_of_body(client, Framing::length); }
    SECTION("chunked, the last chunk never comes") { send_part_of_body(client, Framing::chunked); }
    check_refusal(client.read_response(bound), 408, "");
    CHECK(client.is_closed_by_peer(bound));
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a client that ends its side mid-body gets 400 and nothing is forwarded", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    SECTION("Content-Length announces more than comes") { send_part_of_body(client, Framing::length); }
    SECTION("chunked, the last chunk never comes") { send_part_of_body(client, Framing::chunked); }
    REQUIRE_FALSE(client.shutdown_write());
    check_refusal(client.read_response(bound), 400, "");
    CHECK(client.is_closed_by_peer(bound));
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a gzip-encoded request body gets 415", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    const Response r = client.post_json("/v1/chat/completions", gzip_compress(chat_request("gpt-test")),
                                        {{"Content-Encoding", "gzip"}});
    check_refusal(r, 415, "");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("headers above max_header_bytes get 431", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "limits:\n  max_header_bytes: 1024\n"));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(
        raw_post("/v1/chat/completions", chat_request("gpt-test"), {{"X-Padding", std::string(1500, 'p')}})));
    check_refusal(client.read_response(bound), 431, "");
    check_nothing_forwarded(fake, *proxy);
}

TEST_CASE("a connection beyond max_connections gets 503 for anything but a health probe", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "limits:\n  max_connections: 2\n"));
    // Two connections, each proven accepted by one answered request, then idle.
    auto first = std::make_unique<HttpClient>(proxy->client());
    HttpClient second = proxy->client();
    REQUIRE(first->get("/healthz").status == 200);
    REQUIRE(second.get("/healthz").status == 200);

    // The third is read for one request (section 12; health probes are
    // answered, client_hardening_test.cpp), then closed.
    HttpClient third = proxy->client();
    check_refusal(third.get("/v1/models"), 503, "", "");
    CHECK(third.is_closed_by_peer(bound));
    CHECK(second.get("/healthz").status == 200);  // the admitted ones are still served

    // Freeing a slot admits a new connection again (the close is seen
    // asynchronously, so a few tries are allowed).
    first.reset();
    unsigned status = 0;
    for (auto until = std::chrono::steady_clock::now() + bound; std::chrono::steady_clock::now() < until;) {
        HttpClient next = proxy->client();
        const Response r = next.get("/v1/models");
        status = r.status;
        if (status == 200) break;
        std::this_thread::sleep_for(20ms);
    }
    CHECK(status == 200);
    CHECK(fake.request_count() == 0);
}

// ---------------------------------------------------------------------------
// Local endpoints

TEST_CASE("/healthz and /readyz answer their exact bodies", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    const Response health = client.get("/healthz");
    CAPTURE(health.wire);
    CHECK(health.status == 200);
    CHECK_THAT(health.header("content-type").value_or(""), StartsWith("application/json"));
    CHECK(health.body == R"({"status":"ok"})");
    const Response ready = client.get("/readyz");
    CAPTURE(ready.wire);
    CHECK(ready.status == 200);
    CHECK(ready.body == R"({"status":"ready"})");
    CHECK(fake.request_count() == 0);
}

TEST_CASE("/v1/models lists the configured model names in OpenAI list format", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    const Response r = client.get("/v1/models");
    CAPTURE(r.wire);
    REQUIRE(r.status == 200);
    CHECK_THAT(r.header("content-type").value_or(""), StartsWith("application/json"));
    const boost::json::value doc = boost::json::parse(r.body);
    CHECK(doc.at("object") == "list");
    std::vector<std::string> ids;
    for (const auto& m : doc.at("data").as_array()) {
        CHECK(m.at("object") == "model");
        CHECK(m.at("created").is_number());
        CHECK(m.at("owned_by").is_string());
        ids.emplace_back(m.at("id").as_string());
    }
    CHECK(ids == std::vector<std::string>{"gpt-test", "other-model"});
    CHECK(fake.request_count() == 0);
}

TEST_CASE("/v1/models/{id} answers one model object, an unknown id 404 model_not_found", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    HttpClient client = proxy->client();
    const Response r = client.get("/v1/models/other-model");
    CAPTURE(r.wire);
    REQUIRE(r.status == 200);
    const boost::json::value doc = boost::json::parse(r.body);
    CHECK(doc.at("id") == "other-model");
    CHECK(doc.at("object") == "model");
    CHECK(doc.at("created").is_number());
    CHECK(doc.at("owned_by").is_string());

    check_refusal(client.get("/v1/models/gpt-unknown"), 404, "model_not_found");
    CHECK(fake.request_count() == 0);
}

// ---------------------------------------------------------------------------
// Connection handling

TEST_CASE("two requests on one keep-alive connection are both answered", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    fake.push(Script::json(200, chat_answer("gpt-test", "first")));
    fake.push(Script::json(200, chat_answer("other-model", "second")));
    HttpClient client = proxy->client();
    const Response one = client.post_json("/v1/chat/completions", chat_request("gpt-test"));
    CAPTURE(one.wire);
    REQUIRE(one.ok());
    CHECK(one.status == 200);
    CHECK(one.keep_alive);
    CHECK(one.body == chat_answer("gpt-test", "first"));
    const Response two = client.post_json("/v1/chat/completions", chat_request("other-model"));
    CAPTURE(two.wire);
    REQUIRE(two.ok());
    CHECK(two.status == 200);
    CHECK(two.body == chat_answer("other-model", "second"));
    CHECK(fake.request_count() == 2);
}

TEST_CASE("pipelined requests are answered in order", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    // The forwarded first request is slow, the local second one instant:
    // answering as they finish would swap them.
    fake.push(Script{}.sleep(200ms).then(Script::json(200, chat_answer("gpt-test", "slow"))));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(raw_post("/v1/chat/completions", chat_request("gpt-test"),
                                           {{"x-request-id", "pipelined-1"}}) +
                                  format_request("GET", "/healthz", {{"Host", "127.0.0.1"}})));
    const Response first = client.read_response(bound);
    CAPTURE(first.wire);
    REQUIRE(first.ok());
    CHECK(first.status == 200);
    CHECK(first.header("x-modelproxy-request-id") == "pipelined-1");
    CHECK(first.body == chat_answer("gpt-test", "slow"));
    const Response second = client.read_response(bound);
    CAPTURE(second.wire);
    REQUIRE(second.ok());
    CHECK(second.status == 200);
    CHECK(second.body == R"({"status":"ok"})");
    CHECK(fake.request_count() == 1);
}

TEST_CASE("Expect: 100-continue is answered by the proxy and not forwarded", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake));
    fake.push(Script::json(200, chat_answer("gpt-test")));
    HttpClient client = proxy->client();
    const std::string body = chat_request("gpt-test");
    REQUIRE_FALSE(client.send_raw(format_request("POST", "/v1/chat/completions",
                                                 {{"Host", "127.0.0.1"},
                                                  {"Content-Type", "application/json"},
                                                  {"Content-Length", std::to_string(body.size())},
                                                  {"Expect", "100-continue"}})));
    const RawRead interim = client.read_raw_until("\r\n\r\n", bound);
    CHECK_FALSE(interim.error);
    CHECK(interim.bytes == "HTTP/1.1 100 Continue\r\n\r\n");
    CHECK(fake.request_count() == 0);  // nothing forwarded before the body

    REQUIRE_FALSE(client.send_raw(body));
    const Response r = client.read_response(bound);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer("gpt-test"));
    REQUIRE(fake.request_count() == 1);
    const RequestRecord req = fake.requests()[0];
    CHECK_FALSE(req.header("expect"));
    CHECK(req.body == body);
}

TEST_CASE("Expect: 100-continue with a body above the limit gets 413 and no 100 Continue", "[client-errors]") {
    FakeProvider fake;
    auto proxy = start_proxy(config_for(fake, "limits:\n  max_request_body_bytes: 1024\n"));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(format_request("POST", "/v1/chat/completions",
                                                 {{"Host", "127.0.0.1"},
                                                  {"Content-Type", "application/json"},
                                                  {"Content-Length", "4096"},
                                                  {"Expect", "100-continue"}})));
    const Response r = client.read_response(bound);
    CHECK(r.status != 100);
    check_refusal(r, 413, "");
    check_nothing_forwarded(fake, *proxy);
}
