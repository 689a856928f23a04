// HTTPS upstreams through the real binary (docs/behaviour.md sections 3, 4 and 5): the
// route's tls.ca_file is the trust root, SNI and the host name are checked,
// verification failures are terminal network failures (one attempt, no HTTP
// request sent), and a client certificate is presented when configured.
#include "support/fake_provider.hpp"

#include "support/compress.hpp"
#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"
#include "support/test_ca.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

// One route to `upstream` whose `tls` map is `tls` (YAML flow map) plus
// `extra` route keys, each line indented by four spaces.
std::string tls_route(const std::string& upstream, const std::string& tls, std::string_view extra = "") {
    std::string yaml = "routes:\n  - name: secure\n    upstream: " + upstream +
                       "\n    models: [gpt-4o-mini]\n    tls: " + tls + "\n";
    yaml += extra;
    return yaml;
}

std::string ca_only(const std::filesystem::path& ca_file) { return "{ca_file: \"" + ca_file.string() + "\"}"; }

FakeProvider tls_fake(const CertFiles& server, const std::filesystem::path& client_ca = {}) {
    return FakeProvider(FakeProvider::Options{
        .tls = FakeProvider::Tls{.cert_file = server.cert, .key_file = server.key, .client_ca_file = client_ca}});
}

const std::string chat_request = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]})";
const std::string chat_answer =
    R"({"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";

// A refused verification: 502 network envelope after exactly one attempt
// (the default route allows 8), and no HTTP request reached the upstream.
void check_verification_refused(const FakeProvider& fake, const ProxyProcess& proxy, const Response& r) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "network");
    CHECK(error.at("attempts") == 1);
    CHECK(error.at("decision") == "terminal");
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(r.header("x-modelproxy-error-class") == "network");
    CHECK(r.header("x-modelproxy-decision") == "terminal");
    CHECK(fake.request_count() == 0);
    CHECK(fake.connections_accepted() == 1);  // one attempt: one TCP connection
    const auto turn = proxy.wait_for_record([](const JsonRecord& rec) { return rec.event() == "turn"; }, bound);
    REQUIRE(turn);
    CHECK(turn->integer("attempts") == 1);
    CHECK(turn->str("class") == "network");
}

}  // namespace

TEST_CASE("an https upstream verified against the route's CA answers, with SNI localhost", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(tls_route(fake.base_url("/v1"), ca_only(ca.cert_file())));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer);
    CHECK(r.header("x-modelproxy-attempts") == "1");
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord up = fake.requests()[0];
    CHECK(up.tls_server_name == "localhost");
    CHECK(up.header("host") == "localhost:" + std::to_string(fake.port()));
    CHECK(up.target == "/v1/chat/completions");
    CHECK(up.body == chat_request);
}

TEST_CASE("two turns to an https upstream reuse one TLS connection", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());
    fake.push(Script::json(200, chat_answer), 2);
    ProxyProcess::Options options;
    options.config_yaml = tls_route(fake.base_url("/v1"), ca_only(ca.cert_file()));
    options.args = {"--workers", "1"};  // one worker: one pool
    ProxyProcess proxy(options);
    proxy.start();

    CHECK(proxy.client().post_json("/v1/chat/completions", chat_request).status == 200);
    CHECK(proxy.client().post_json("/v1/chat/completions", chat_request).status == 200);
    REQUIRE(fake.wait_for_requests(2, bound));
    CHECK(fake.requests()[0].connection_id == fake.requests()[1].connection_id);
    CHECK(fake.connections_accepted() == 1);
}

TEST_CASE("an https upstream given by IP is verified against the certificate's IP address", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());  // SANs localhost and IP 127.0.0.1
    fake.push(Script::json(200, chat_answer));
    const std::string upstream = "https://127.0.0.1:" + std::to_string(fake.port()) + "/v1";
    auto proxy = start_proxy(tls_route(upstream, ca_only(ca.cert_file())));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].tls_server_name.empty());  // RFC 6066: no SNI for an IP literal
}

TEST_CASE("a certificate from an unrelated CA is a terminal 502 network failure after one attempt", "[tls]") {
    TestCa ca;
    TestCa unrelated("unrelated test CA");
    FakeProvider fake = tls_fake(ca.issue_server());
    fake.set_default(Script::json(200, chat_answer));
    auto proxy = start_proxy(tls_route(fake.base_url("/v1"), ca_only(unrelated.cert_file())));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_verification_refused(fake, *proxy, r);
}

TEST_CASE("a certificate for another host name is a terminal 502 after one attempt", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server({"DNS:other.example"}));
    fake.set_default(Script::json(200, chat_answer));
    auto proxy = start_proxy(tls_route(fake.base_url("/v1"), ca_only(ca.cert_file())));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_verification_refused(fake, *proxy, r);
}

TEST_CASE("an expired upstream certificate is a terminal 502 after one attempt", "[tls]") {
    TestCa ca;
    TestCa::Leaf leaf;
    leaf.expired = true;
    FakeProvider fake = tls_fake(ca.issue(leaf));
    fake.set_default(Script::json(200, chat_answer));
    auto proxy = start_proxy(tls_route(fake.base_url("/v1"), ca_only(ca.cert_file())));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    check_verification_refused(fake, *proxy, r);
}

TEST_CASE("the route's client certificate is presented when the upstream requires one", "[tls]") {
    TestCa ca;
    const CertFiles client_cert = ca.issue_client("modelproxy-client");
    FakeProvider fake = tls_fake(ca.issue_server(), ca.cert_file());
    fake.push(Script::json(200, chat_answer));
    const std::string tls = "{ca_file: \"" + ca.cert_file().string() + "\", cert_file: \"" +
                            client_cert.cert.string() + "\", key_file: \"" + client_cert.key.string() + "\"}";
    auto proxy = start_proxy(tls_route(fake.base_url("/v1"), tls));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK_THAT(fake.requests()[0].client_cert_subject, Contains("CN=modelproxy-client"));
}

TEST_CASE("without a client certificate an upstream that requires one gets no request", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server(), ca.cert_file());
    fake.set_default(Script::json(200, chat_answer));
    auto proxy = start_proxy(
        tls_route(fake.base_url("/v1"), ca_only(ca.cert_file()), "    retry: {max_attempts: 1}\n"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(envelope_error(r).at("class") == "network");
    CHECK(fake.request_count() == 0);
}

// A chat request as an agent sends one: the conversation so far, padded to
// `bytes`, with `model` at the end of the object (the router reads it there).
std::string conversation_of(std::size_t bytes) {
    const std::string open = R"({"messages":[{"role":"user","content":")";
    const std::string close = R"("}],"model":"gpt-4o-mini"})";
    std::string body = open;
    body.append(bytes - open.size() - close.size(), 'x');
    body += close;
    return body;
}

// Request bodies of 16 KiB and more (one TLS record and beyond) must reach an
// HTTPS upstream whole, on fresh and on reused connections alike, and be
// answered at once. A body that stops at the TLS layer leaves the upstream
// waiting for it: the turn then runs into its deadline, or a reused
// connection's next request is read as the rest of this one. The bound is
// generous (the exchange takes about a millisecond); the deadline is short so
// that a stall fails the test rather than hanging it.
TEST_CASE("request bodies of 16 KiB to 1 MiB reach an https upstream whole, on kept-alive connections", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());
    fake.set_default(Script::json(200, chat_answer));
    ProxyProcess::Options options;
    options.config_yaml = tls_route(fake.base_url("/v1"), ca_only(ca.cert_file()), "    timeout_ms: 3000\n");
    options.args = {"--workers", "1"};  // one worker: one pool, so the second round reuses its connection
    ProxyProcess proxy(options);
    proxy.start();

    HttpClient client = proxy.client();
    std::size_t sent = 0;
    for (int round = 0; round < 2; ++round) {
        for (const std::size_t size : {16384u, 17408u, 102400u, 1048576u}) {
            const std::string body = conversation_of(size);
            const auto started = std::chrono::steady_clock::now();
            const Response r = client.post_json("/v1/chat/completions", body);
            const auto took = std::chrono::steady_clock::now() - started;
            INFO("round " << round << ", body of " << size << " bytes");
            CAPTURE(r.status, r.body);
            REQUIRE(r.ok());
            CHECK(r.status == 200);
            CHECK(r.header("x-modelproxy-attempts") == "1");
            CHECK(took < 500ms);
            ++sent;
            REQUIRE(fake.wait_for_requests(sent, bound));
            CHECK(fake.requests()[sent - 1].body == body);
        }
    }
    // Every turn after the first went over the pooled connection.
    CHECK(fake.connections_accepted() == 1);
}

namespace {

std::string chunk_event(std::string_view delta, std::string_view finish = "null") {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":)" +
           std::string(delta) + R"(,"finish_reason":)" + std::string(finish) + "}]}\n\n";
}
const std::string stream_request = R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})";

}  // namespace

// The ways an answer's body is framed and ended, over TLS as over plain TCP:
// OpenSSL reads the connection's socket itself, so each end (a chunked
// stream, a body ended by the upstream's close_notify, one cut without it, a
// gzip body) must come out as the transport reads it on plain TCP.
TEST_CASE("over https, a chunked stream of many reads is relayed whole and the connection reused", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());
    std::vector<std::string> events{chunk_event(R"({"role":"assistant","content":""})")};
    for (int i = 0; i < 50; ++i) events.push_back(chunk_event(R"({"content":"word "})"));
    events.push_back(chunk_event("{}", "\"stop\""));
    events.push_back("data: [DONE]\n\n");
    fake.push(Script::sse(events, {.delay = 1ms}));
    fake.push(Script::json(200, chat_answer));
    ProxyProcess::Options options;
    options.config_yaml = tls_route(fake.base_url("/v1"), ca_only(ca.cert_file()));
    options.args = {"--workers", "1"};
    ProxyProcess proxy(options);
    proxy.start();

    HttpClient client = proxy.client();
    const Response r = client.post_json("/v1/chat/completions", stream_request);
    CAPTURE(r.status, r.error.message());
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    std::string expected;
    for (const auto& e : events) expected += e;
    CHECK(r.body == expected);
    CHECK(client.post_json("/v1/chat/completions", chat_request).status == 200);
    CHECK(fake.connections_accepted() == 1);
}

TEST_CASE("over https, a body ended by the upstream's close_notify is whole, one cut without it is a drop",
          "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());
    auto proxy = start_proxy(
        tls_route(fake.base_url("/v1"), ca_only(ca.cert_file()), "    retry: {max_attempts: 2, base_delay_ms: 1}\n"));
    SECTION("close-delimited, ended by close_notify: the answer") {
        fake.push(Script{}.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + chat_answer).close());
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.body == chat_answer);
        CHECK(r.header("x-modelproxy-attempts") == "1");
    }
    SECTION("a Content-Length body cut by a reset: replayed, and the replay's answer") {
        fake.push(Script::reset_mid_body("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                         std::to_string(chat_answer.size()) + "\r\n\r\n" + chat_answer.substr(0, 20)));
        fake.push(Script::json(200, chat_answer));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.body == chat_answer);
        CHECK(r.header("x-modelproxy-attempts") == "2");
    }
    SECTION("a stream cut by a clean close before its end marker, after answer text: the closing error event") {
        fake.push(Script::sse({chunk_event(R"({"role":"assistant","content":"Hi"})")}, {.end = SseEnd::close}));
        const Response r = proxy->client().post_json("/v1/chat/completions", stream_request);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK_THAT(r.body, Contains("\"stream_incomplete\""));
        CHECK_THAT(r.body, !Contains("[DONE]"));
    }
}

TEST_CASE("over https, a gzip answer is decoded", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());
    fake.push(Script::response(200, {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}},
                               gzip_compress(chat_answer)));
    auto proxy = start_proxy(tls_route(fake.base_url("/v1"), ca_only(ca.cert_file())));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer);
    CHECK_FALSE(r.header("content-encoding"));
}

namespace {

// An answer after which the provider closes its connection: the next turn
// needs a new one, so a new TLS handshake.
Script answer_then_close() { return Script::json(200, chat_answer, {{"Connection", "close"}}).close(); }

// `turns` turns one after another on `proxy`'s route, each answered 200.
void run_turns(const ProxyProcess& proxy, int turns, const std::string& request = chat_request) {
    for (int i = 0; i < turns; ++i) {
        const Response r = proxy.client().post_json("/v1/chat/completions", request);
        CAPTURE(i, r.wire);
        REQUIRE(r.status == 200);
        CHECK(r.body.find("\"choices\"") != std::string::npos);
    }
}

}  // namespace

// A new connection to a provider resumes the session an earlier connection
// to it was given: a round trip and the certificate's public-key operations
// fewer. The provider's own record of each handshake says whether it was.
// Over TLS 1.2 a connection is given one session, and the proxy's close of
// that connection (it never sends close_notify) must not spend it.
TEST_CASE("a new connection to an https upstream resumes the TLS session an earlier one was given", "[tls]") {
    TestCa ca;
    const CertFiles client_cert = ca.issue_client("modelproxy-client");
    const CertFiles server = ca.issue_server();
    const bool with_client_cert = GENERATE(false, true);
    const bool tls12 = GENERATE(false, true);
    CAPTURE(with_client_cert, tls12);
    FakeProvider fake(FakeProvider::Options{
        .tls = FakeProvider::Tls{.cert_file = server.cert,
                                 .key_file = server.key,
                                 .client_ca_file = with_client_cert ? ca.cert_file() : std::filesystem::path{},
                                 .tls12_only = tls12}});
    fake.set_default(answer_then_close());
    const std::string tls = with_client_cert ? "{ca_file: \"" + ca.cert_file().string() + "\", cert_file: \"" +
                                                   client_cert.cert.string() + "\", key_file: \"" +
                                                   client_cert.key.string() + "\"}"
                                             : ca_only(ca.cert_file());
    const auto proxy = start_proxy(tls_route(fake.base_url("/v1"), tls), {}, {"--workers", "1"});

    run_turns(*proxy, 3);
    REQUIRE(fake.wait_for_requests(3, bound));
    const auto up = fake.requests();
    CHECK(fake.connections_accepted() == 3);
    CHECK_FALSE(up[0].tls_resumed);  // the first connection: a full handshake
    CHECK(up[1].tls_resumed);
    CHECK(up[2].tls_resumed);
    // The proxy's metrics count the same.
    const std::string text = proxy->client().get("/metrics").body;
    CHECK(metric_value(text, R"(modelproxy_upstream_connects_total{route="secure",tls="full"})") == 1);
    CHECK(metric_value(text, R"(modelproxy_upstream_connects_total{route="secure",tls="resumed"})") == 2);
    CHECK(metric_value(text, R"(modelproxy_upstream_connects_total{route="secure",tls="none"})") == 0);
    // (OpenSSL's server reports a resumed TLS 1.2 connection's SNI from its
    // session, which it stores only with a servername callback: the first.)
    CHECK(up[0].tls_server_name == "localhost");
    for (const RequestRecord& r : up) {
        // A resumed session keeps the identity the full handshake verified.
        if (with_client_cert) CHECK_THAT(r.client_cert_subject, Contains("CN=modelproxy-client"));
    }
}

// Sessions belong to the route whose trust roots and client certificate
// made them: a route never resumes another route's session, even to the
// same host and port.
TEST_CASE("a route does not resume a TLS session another route's connection was given", "[tls]") {
    TestCa ca;
    FakeProvider fake = tls_fake(ca.issue_server());
    fake.set_default(answer_then_close());
    const std::string yaml = "routes:\n"
                             "  - name: first\n    upstream: " + fake.base_url("/v1") +
                             "\n    models: [gpt-4o-mini]\n    tls: " + ca_only(ca.cert_file()) +
                             "\n  - name: second\n    upstream: " + fake.base_url("/v1") +
                             "\n    models: [gpt-4o]\n    tls: " + ca_only(ca.cert_file()) + "\n";
    const auto proxy = start_proxy(yaml, {}, {"--workers", "1"});

    run_turns(*proxy, 2);  // route first: a full handshake, then a resumed one
    const std::string other_model = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";
    fake.set_default(Script::json(200, R"({"id":"c","object":"chat.completion","model":"gpt-4o","choices":[]})",
                                  {{"Connection", "close"}})
                         .close());
    run_turns(*proxy, 2, other_model);
    REQUIRE(fake.wait_for_requests(4, bound));
    const auto up = fake.requests();
    CHECK_FALSE(up[0].tls_resumed);
    CHECK(up[1].tls_resumed);
    CHECK_FALSE(up[2].tls_resumed);  // route second's first connection
    CHECK(up[3].tls_resumed);
}

// A resumed connection is not verified again, so a session must not outlive
// the certificate that verified it: once the provider's certificate has
// expired, the next connection makes a full handshake, which refuses it.
TEST_CASE("a TLS session is not resumed once the certificate that verified it has expired", "[tls]") {
    TestCa ca;
    TestCa::Leaf leaf;
    leaf.valid_for_seconds = 4;  // enough for the proxy to start and make its first turn
    const auto expires = std::chrono::system_clock::now() + std::chrono::seconds(leaf.valid_for_seconds);
    FakeProvider fake = tls_fake(ca.issue(leaf));
    fake.set_default(answer_then_close());
    const auto proxy = start_proxy(
        tls_route(fake.base_url("/v1"), ca_only(ca.cert_file()), "    retry: {max_attempts: 1}\n"), {},
        {"--workers", "1"});
    run_turns(*proxy, 1);
    REQUIRE(std::chrono::system_clock::now() < expires);  // else the first turn proved nothing

    // Certificate times have a resolution of one second.
    while (std::chrono::system_clock::now() < expires + 1100ms) std::this_thread::sleep_for(50ms);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    CHECK(r.status == 502);
    CHECK(r.header("x-modelproxy-error-class") == "network");
    CHECK(r.header("x-modelproxy-decision") == "terminal");
    CHECK(fake.request_count() == 1);  // only the first turn's
}

// TLS 1.2 (RFC 5246 section 7.2.2): a session whose connection failed with a
// fatal alert is not resumed. The provider's second connection resumes the
// first's session, then sends a record the proxy cannot decrypt; the third
// connection must make a full handshake.
TEST_CASE("a TLS session whose connection failed at the TLS layer is not offered again", "[tls]") {
    TestCa ca;
    const CertFiles server = ca.issue_server();
    FakeProvider fake(FakeProvider::Options{
        .tls = FakeProvider::Tls{.cert_file = server.cert, .key_file = server.key, .tls12_only = true}});
    // An application-data record of TLS 1.2 whose 32 bytes are no encryption.
    const std::string bad_record = std::string("\x17\x03\x03\x00\x20", 5) + std::string(32, 'x');
    fake.push(answer_then_close());
    fake.push(Script().write_raw(bad_record).expect_close(bound));
    fake.push(answer_then_close());
    const auto proxy = start_proxy(
        tls_route(fake.base_url("/v1"), ca_only(ca.cert_file()), "    retry: {max_attempts: 1}\n"), {},
        {"--workers", "1"});

    run_turns(*proxy, 1);
    const Response failed = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(failed.wire);
    CHECK(failed.status == 502);
    CHECK(failed.header("x-modelproxy-error-class") == "network");
    run_turns(*proxy, 1);
    REQUIRE(fake.wait_for_requests(3, bound));
    const auto up = fake.requests();
    CHECK_FALSE(up[0].tls_resumed);
    CHECK(up[1].tls_resumed);        // the session of the first connection
    CHECK_FALSE(up[2].tls_resumed);  // that session failed on the second: a full handshake
}
