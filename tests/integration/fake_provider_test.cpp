// Self-tests of tests/support/: FakeProvider, HttpClient, TestCa,
// ProxyProcess (against a shell script standing in for the proxy),
// run_command, and the small helpers. No modelproxy binary is involved.
#include "support/fake_provider.hpp"

#include "support/compress.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/ports.hpp"
#include "support/proxy_process.hpp"
#include "support/test_ca.hpp"
#include "support/temp_dir.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

bool has_exact_header_name(const Headers& headers, std::string_view name) {
    for (const auto& h : headers)
        if (h.name == name) return true;
    return false;
}

std::string sse_head() {
    return format_response_head(200, {{"Content-Type", "text/event-stream"},
                                      {"Cache-Control", "no-cache"},
                                      {"Transfer-Encoding", "chunked"}});
}

struct TlsOutcome {
    bool finished = false;
    boost::system::error_code handshake;
    unsigned status = 0;
    std::string body;
};

// One HTTPS GET with peer and host-name verification against `ca_file`,
// bounded by `bound`.
TlsOutcome tls_get(std::uint16_t port, const std::filesystem::path& ca_file, const std::string& host,
                   const CertFiles* client_cert = nullptr) {
    net::io_context ioc;
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(ca_file.string());
    ctx.set_verify_mode(ssl::verify_peer);
    if (client_cert) {
        ctx.use_certificate_chain_file(client_cert->cert.string());
        ctx.use_private_key_file(client_cert->key.string(), ssl::context::pem);
    }
    ssl::stream<tcp::socket> stream(ioc, ctx);
    SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
    stream.set_verify_callback(ssl::host_name_verification(host));
    TlsOutcome out;
    auto exchange = [&]() -> net::awaitable<void> {
        constexpr auto tuple = net::as_tuple(net::use_awaitable);
        auto [cec] = co_await stream.next_layer().async_connect({net::ip::make_address_v4("127.0.0.1"), port}, tuple);
        if (cec) {
            out.handshake = cec;
            out.finished = true;
            co_return;
        }
        auto [hec] = co_await stream.async_handshake(ssl::stream_base::client, tuple);
        out.handshake = hec;
        if (!hec) {
            std::string req = "GET /tls HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
            co_await net::async_write(stream, net::buffer(req), tuple);
            boost::beast::flat_buffer buffer;
            http::response<http::string_body> res;
            auto [rec, n] = co_await http::async_read(stream, buffer, res, tuple);
            if (!rec) {
                out.status = res.result_int();
                out.body = res.body();
            }
        }
        out.finished = true;
    };
    net::co_spawn(ioc, exchange(), net::detached);
    ioc.run_for(bound);
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// FakeProvider + HttpClient

TEST_CASE("fake provider answers a scripted JSON response and records the request", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script::json(200, R"({"id":"c1","model":"gpt-4o-mini"})", {{"X-Upstream", "yes"}}));
    HttpClient client(fake.port());

    const Response r = client.post_json("/v1/chat/completions?a=1", R"({"model":"gpt-4o-mini"})",
                                        {{"Authorization", "Bearer sk-test"}, {"X-Mixed-Case", "v"}});
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("content-type") == "application/json");
    CHECK(r.header("x-upstream") == "yes");
    CHECK(r.header("Content-Length") == std::to_string(r.body.size()));
    CHECK_FALSE(r.chunked);
    CHECK(r.keep_alive);
    CHECK(boost::json::parse(r.body).at("model").as_string() == "gpt-4o-mini");

    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord req = fake.requests().at(0);
    CHECK(req.index == 0);
    CHECK(req.connection_id == 1);
    CHECK(req.method == "POST");
    CHECK(req.target == "/v1/chat/completions?a=1");
    CHECK(req.version == 11);
    CHECK(req.body == R"({"model":"gpt-4o-mini"})");
    CHECK(req.header("authorization") == "Bearer sk-test");
    CHECK(has_exact_header_name(req.headers, "X-Mixed-Case"));
    CHECK(req.tls_server_name.empty());
    CHECK_FALSE(req.peer_closed_at.has_value());
}

TEST_CASE("fake provider answers 500 no script when its queue is empty", "[fake_provider]") {
    FakeProvider fake;
    HttpClient client(fake.port());
    const Response r = client.get("/v1/models");
    REQUIRE(r.ok());
    CHECK(r.status == 500);
    CHECK_THAT(r.body, Contains("no script"));

    fake.set_default(Script::json(418, "{}"));
    CHECK(client.get("/again").status == 418);
}

TEST_CASE("fake provider serves scripts in FIFO order and push copies", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script::json(201, "{}"));
    fake.push(Script::json(202, "{}"), 2);
    CHECK(fake.scripts_pending() == 3);
    HttpClient client(fake.port());
    CHECK(client.get("/1").status == 201);
    CHECK(client.get("/2").status == 202);
    CHECK(client.get("/3").status == 202);
    CHECK(client.get("/4").status == 500);
    CHECK(fake.scripts_pending() == 0);
}

TEST_CASE("keep-alive: requests on one connection share its id, a new connection gets a new id",
          "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script::json(200, R"({"n":1})"), 3);
    {
        HttpClient client(fake.port());
        REQUIRE(client.get("/first").ok());
        REQUIRE(client.get("/second").ok());
    }
    HttpClient other(fake.port());
    REQUIRE(other.get("/third").ok());

    REQUIRE(fake.wait_for_requests(3, bound));
    const auto reqs = fake.requests();
    CHECK(reqs[0].connection_id == reqs[1].connection_id);
    CHECK(reqs[2].connection_id != reqs[0].connection_id);
    CHECK(fake.connections_accepted() == 2);
    CHECK(reqs[0].received_at <= reqs[1].received_at);
    // The first client closed its idle keep-alive connection.
    CHECK(fake.wait_for_peer_close(1, bound));
}

TEST_CASE("requests are recorded with header order and case, de-chunked binary bodies", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script::json(200, "{}"));
    HttpClient client(fake.port());
    const std::string body("a\0b\r\nc", 6);
    std::string raw = "PUT /upload HTTP/1.1\r\nHost: x\r\nx-B: 2\r\nX-a: 1\r\nTransfer-Encoding: chunked\r\n\r\n" +
                      format_chunk(body.substr(0, 2)) + format_chunk(body.substr(2)) + format_chunk("");
    REQUIRE_FALSE(client.send_raw(raw));
    REQUIRE(client.read_response().ok());
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord req = fake.requests().at(0);
    CHECK(req.method == "PUT");
    CHECK(req.body == body);
    REQUIRE(req.headers.size() == 4);
    CHECK(req.headers[1].name == "x-B");
    CHECK(req.headers[2].name == "X-a");
    CHECK(req.headers[2].value == "1");
    CHECK(req.header("transfer-encoding") == "chunked");
}

TEST_CASE("pipelined requests are answered in order on one connection", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script::json(200, R"({"n":1})"));
    fake.push(Script::json(200, R"({"n":2})"));
    HttpClient client(fake.port());
    REQUIRE_FALSE(client.send_raw(format_request("GET", "/a", {{"Host", "x"}}) +
                                  format_request("GET", "/b", {{"Host", "x"}})));
    const Response first = client.read_response();
    const Response second = client.read_response();
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    CHECK(first.body == R"({"n":1})");
    CHECK(second.body == R"({"n":2})");
    REQUIRE(fake.wait_for_requests(2, bound));
    CHECK(fake.requests()[1].target == "/b");
}

TEST_CASE("chunked SSE arrives with the exact bytes and chunk boundaries the test chose", "[fake_provider]") {
    FakeProvider fake;
    const std::vector<std::string> chunks{"data: {\"model\":\"m\",\"x\":", "1}\r", "\n\r\ndata: [DONE]\n\n"};
    fake.push(Script::sse(chunks));
    HttpClient client(fake.port());
    const Response r = client.post_json("/v1/chat/completions", R"({"model":"m","stream":true})");
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.chunked);
    CHECK(r.header("Content-Type") == "text/event-stream");
    CHECK(r.body == chunks[0] + chunks[1] + chunks[2]);
    CHECK(r.wire == sse_head() + format_chunk(chunks[0]) + format_chunk(chunks[1]) + format_chunk(chunks[2]) +
                        format_chunk(""));
    // The stream finished cleanly: the connection serves another request.
    fake.push(Script::json(200, "{}"));
    CHECK(client.get("/next").ok());
}

TEST_CASE("a streamed event arrives before the next one is sent", "[fake_provider]") {
    FakeProvider fake;
    SseOptions options;
    options.delay = 400ms;
    fake.push(Script::sse({"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"}, options));
    HttpClient client(fake.port());
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {}, R"({"stream":true})"));

    const Response head = client.read_head(bound);
    REQUIRE(head.head_complete);
    CHECK(head.status == 200);
    const RawRead first = client.read_body_some(bound);
    REQUIRE_FALSE(first.error);
    CHECK(first.bytes == "data: {\"n\":1}\n\n");
    const auto first_at = std::chrono::steady_clock::now();

    const RawRead early = client.read_body_some(50ms);
    CHECK(early.timed_out());
    CHECK(early.bytes.empty());

    const RawRead second = client.read_body_some(bound);
    REQUIRE_FALSE(second.error);
    CHECK(second.bytes == "data: {\"n\":2}\n\n");
    CHECK(std::chrono::steady_clock::now() - first_at >= 250ms);

    const Response rest = client.read_rest(bound);
    REQUIRE(rest.ok());
    CHECK(rest.body == "data: {\"n\":1}\n\ndata: {\"n\":2}\n\n");
}

TEST_CASE("close-delimited SSE ends with the provider's FIN", "[fake_provider]") {
    FakeProvider fake;
    SseOptions options;
    options.framing = SseFraming::close_delimited;
    fake.push(Script::sse({"data: {\"a\":1}\n", "\n"}, options));
    HttpClient client(fake.port());
    const Response r = client.post_json("/v1/completions", "{}");
    REQUIRE(r.ok());
    CHECK_FALSE(r.chunked);
    CHECK_FALSE(r.keep_alive);
    CHECK(r.header("connection") == "close");
    CHECK(r.body == "data: {\"a\":1}\n\n");
    CHECK(client.is_closed_by_peer(bound));
}

TEST_CASE("Script::chunked writes one chunk per element", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script::chunked(200, {{"Content-Type", "application/json"}}, {"{\"a\":", "1}"}, 10ms));
    HttpClient client(fake.port());
    const Response r = client.get("/x");
    REQUIRE(r.ok());
    CHECK(r.chunked);
    CHECK(r.body == "{\"a\":1}");
    CHECK(r.wire.find(format_chunk("{\"a\":") + format_chunk("1}") + "0\r\n\r\n") != std::string::npos);
}

TEST_CASE("a clean close reads as EOF, a reset as connection reset", "[fake_provider]") {
    FakeProvider fake;

    SECTION("close before any byte of the head") {
        fake.push(Script::refuse_head_then_close());
        HttpClient client(fake.port());
        const Response r = client.get("/x");
        CHECK(r.error == net::error::eof);
        CHECK_FALSE(r.head_complete);
        CHECK(r.wire.empty());
    }
    SECTION("reset before any byte of the head") {
        fake.push(Script{}.reset());
        HttpClient client(fake.port());
        const Response r = client.get("/x");
        CHECK(r.error == net::error::connection_reset);
        CHECK_FALSE(r.head_complete);
    }
    SECTION("reset in the middle of a Content-Length body") {
        fake.push(Script::reset_mid_body(format_response_head(200, {{"Content-Length", "100"}}) + "0123456789"));
        HttpClient client(fake.port());
        REQUIRE_FALSE(client.send_request("GET", "/x"));
        const Response head = client.read_head(bound);
        REQUIRE(head.head_complete);
        const Response r = client.read_rest(bound);
        CHECK(r.error == net::error::connection_reset);
        CHECK(r.status == 200);
        CHECK(r.body == "0123456789");
        CHECK_FALSE(r.complete);
    }
    SECTION("a clean close in the middle of a chunked body is a partial message") {
        SseOptions options;
        options.end = SseEnd::close;
        fake.push(Script::sse({"data: {}\n\n"}, options));
        HttpClient client(fake.port());
        const Response r = client.get("/x");
        CHECK(r.error == http::error::partial_message);
        CHECK(r.head_complete);
        CHECK(r.body == "data: {}\n\n");
    }
    SECTION("a reset in the middle of a stream, as a raw read sees it") {
        SseOptions options;
        options.end = SseEnd::reset;
        options.delay = 50ms;
        fake.push(Script::sse({"data: {}\n\n", "data: {}\n\n"}, options));
        HttpClient client(fake.port());
        REQUIRE_FALSE(client.send_request("GET", "/x"));
        const RawRead got = client.read_raw_until("0\r\n\r\n", bound);  // never comes
        CHECK(got.error == net::error::connection_reset);
        CHECK(got.closed());
        CHECK_THAT(got.bytes, Contains(format_chunk("data: {}\n\n")));
    }
}

TEST_CASE("hang: the client times out, and its close is recorded", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script{}.write(sse_head() + format_chunk("data: {}\n\n")).hang());
    HttpClient client(fake.port());
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {}, "{}"));
    REQUIRE(client.read_head(bound).head_complete);
    CHECK(client.read_body_some(bound).bytes == "data: {}\n\n");
    const RawRead idle = client.read_body_some(200ms);
    CHECK(idle.timed_out());

    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK_FALSE(fake.wait_for_peer_close(0, 50ms));
    client.close();
    CHECK(fake.wait_for_peer_close(0, bound));
    CHECK(fake.requests()[0].peer_closed_at.value() >= fake.requests()[0].received_at);
}

TEST_CASE("hang before any byte: a whole-response read times out", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script{}.hang());
    HttpClient client(fake.port());
    const auto start = std::chrono::steady_clock::now();
    REQUIRE_FALSE(client.send_request("GET", "/x"));
    const Response r = client.read_response(150ms);
    CHECK(r.error == net::error::timed_out);
    CHECK_FALSE(r.head_complete);
    CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("expect_close records whether the client closed in time", "[fake_provider]") {
    FakeProvider fake;
    SECTION("the client closes") {
        fake.push(Script::json(200, "{}").expect_close(bound));
        HttpClient client(fake.port());
        REQUIRE(client.get("/x").ok());
        client.close();
        CHECK(fake.wait_for_peer_close(0, bound));
    }
    SECTION("the client keeps the connection: the provider closes it after the bound") {
        fake.push(Script::json(200, "{}").expect_close(100ms));
        HttpClient client(fake.port());
        REQUIRE(client.get("/x").ok());
        CHECK(client.is_closed_by_peer(bound));
        CHECK_FALSE(fake.requests().at(0).peer_closed_at.has_value());
    }
}

TEST_CASE("sleep delays the response", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script{}.sleep(300ms).then(Script::json(200, "{}")));
    HttpClient client(fake.port());
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(client.get("/slow").ok());
    CHECK(std::chrono::steady_clock::now() - start >= 300ms);
}

TEST_CASE("stop closes connections and the listener within its bound", "[fake_provider]") {
    FakeProvider fake;
    fake.push(Script{}.hang());
    HttpClient client(fake.port());
    REQUIRE_FALSE(client.send_request("GET", "/x"));
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.connections_open() == 1);
    const auto port = fake.port();
    const auto start = std::chrono::steady_clock::now();
    fake.stop();
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    CHECK(client.is_closed_by_peer(bound));
    CHECK(try_connect(port) == net::error::connection_refused);
    CHECK(fake.requests().size() == 1);  // records survive stop
    CHECK_FALSE(fake.requests()[0].peer_closed_at.has_value());
}

TEST_CASE("an unused port refuses, a silent listener accepts and never answers", "[fake_provider]") {
    CHECK(try_connect(unused_port()) == net::error::connection_refused);

    SilentListener silent;
    CHECK_FALSE(try_connect(silent.port()));
    HttpClient client(silent.port());
    REQUIRE_FALSE(client.send_request("GET", "/x"));
    CHECK(client.read_response(100ms).error == net::error::timed_out);
}

// ---------------------------------------------------------------------------
// TLS

TEST_CASE("TLS: a client trusting the test CA verifies localhost, another CA or name fails", "[fake_provider][tls]") {
    TestCa ca;
    TestCa other("unrelated test CA");
    const CertFiles server = ca.issue_server();
    FakeProvider fake(FakeProvider::tls_options(server.cert, server.key));
    CHECK(fake.base_url("/v1") == "https://localhost:" + std::to_string(fake.port()) + "/v1");
    fake.push(Script::json(200, R"({"tls":true})"));

    const TlsOutcome good = tls_get(fake.port(), ca.cert_file(), "localhost");
    REQUIRE(good.finished);
    REQUIRE_FALSE(good.handshake);
    CHECK(good.status == 200);
    CHECK(good.body == R"({"tls":true})");
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].tls_server_name == "localhost");

    const TlsOutcome wrong_ca = tls_get(fake.port(), other.cert_file(), "localhost");
    REQUIRE(wrong_ca.finished);
    CHECK(wrong_ca.handshake);
    CHECK_THAT(wrong_ca.handshake.message(), Contains("certificate verify failed"));

    const TlsOutcome wrong_name = tls_get(fake.port(), ca.cert_file(), "example.com");
    REQUIRE(wrong_name.finished);
    CHECK(wrong_name.handshake);

    CHECK(fake.wait_for_connections(3, bound));
    CHECK(fake.request_count() == 1);
}

TEST_CASE("TLS: the provider can require a client certificate from a CA", "[fake_provider][tls]") {
    TestCa ca;
    const CertFiles server = ca.issue_server();
    const CertFiles client_cert = ca.issue_client("client-1");
    FakeProvider fake(FakeProvider::tls_options(server.cert, server.key, ca.cert_file()));
    fake.push(Script::json(200, "{}"));

    const TlsOutcome with_cert = tls_get(fake.port(), ca.cert_file(), "localhost", &client_cert);
    REQUIRE(with_cert.finished);
    REQUIRE_FALSE(with_cert.handshake);
    CHECK(with_cert.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK_THAT(fake.requests()[0].client_cert_subject, Contains("CN=client-1"));

    // TLS 1.3: the client learns of the refusal on its first read, not in its handshake.
    const TlsOutcome without = tls_get(fake.port(), ca.cert_file(), "localhost");
    REQUIRE(without.finished);
    CHECK(without.status == 0);
    CHECK(fake.request_count() == 1);
}

TEST_CASE("TestCa: expired leaves fail verification", "[fake_provider][tls]") {
    TestCa ca;
    TestCa::Leaf leaf;
    leaf.expired = true;
    const CertFiles expired = ca.issue(leaf);
    FakeProvider fake(FakeProvider::tls_options(expired.cert, expired.key));
    const TlsOutcome r = tls_get(fake.port(), ca.cert_file(), "localhost");
    REQUIRE(r.finished);
    CHECK(r.handshake);
    CHECK_THAT(ca.cert_pem(), Contains("-----BEGIN CERTIFICATE-----"));
    CHECK_THAT(read_file(expired.key), Contains("-----BEGIN PRIVATE KEY-----"));
}

// ---------------------------------------------------------------------------
// Processes

TEST_CASE("run_command captures exit code, stdout, stderr and feeds stdin", "[process]") {
    const CommandResult echo = run_command({"/bin/echo", "hello", "world"});
    CHECK(echo.exit_code == 0);
    CHECK(echo.out == "hello world\n");
    CHECK(echo.err.empty());

    const CommandResult sh = run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
    CHECK(sh.exit_code == 3);
    CHECK(sh.out == "out\n");
    CHECK(sh.err == "err\n");

    const CommandResult cat = run_command({"/bin/cat"}, {}, std::string("line 1\nline 2"));
    CHECK(cat.exit_code == 0);
    CHECK(cat.out == "line 1\nline 2");

    const CommandResult killed = run_command({"/bin/sh", "-c", "kill -9 $$"});
    CHECK(killed.exit_code == 128 + SIGKILL);

    CHECK_THROWS_WITH(run_command({"/nonexistent/modelproxy"}), Contains("No such file"));
}

TEST_CASE("run_command passes only the given environment", "[process]") {
    ::setenv("OPENAI_API_KEY", "sk-must-not-leak", 1);
    const CommandResult env = run_command({"/usr/bin/env"}, {{"FOO", "bar"}});
    ::unsetenv("OPENAI_API_KEY");
    CHECK(env.exit_code == 0);
    CHECK_THAT(env.out, Contains("FOO=bar\n"));
    CHECK_THAT(env.out, !Contains("OPENAI_API_KEY"));
}

TEST_CASE("run_command kills a command that outlives its timeout", "[process]") {
    const auto start = std::chrono::steady_clock::now();
    const CommandResult r = run_command({"/bin/sleep", "10"}, {}, std::nullopt, 200ms);
    CHECK(r.timed_out);
    CHECK(r.exit_code == -1);
    CHECK(std::chrono::steady_clock::now() - start < 5s);
}

namespace {

// Stands in for the proxy: reports its arguments and environment, prints the
// readiness line, logs records on stdout, and reacts to SIGHUP and SIGTERM.
constexpr const char* fake_proxy_script = R"SH(#!/bin/sh
echo "starting with args: $*" >&2
echo "key=${OPENAI_API_KEY:-unset} foo=${FOO:-unset}" >&2
trap 'echo "{\"event\":\"reload\"}"' HUP
trap 'echo "{\"event\":\"turn\",\"outcome\":\"ok\"}"; echo "draining" >&2; exit 0' TERM
echo '{"event":"attempt","attempt":1,"status":200,"digest":"sha256:00"}'
echo "modelproxy 0.1.0 listening on 127.0.0.1:4242 (2 workers)" >&2
while :; do /bin/sleep 0.02; done
)SH";

}  // namespace

TEST_CASE("ProxyProcess starts a command, parses the listening port and captures both streams", "[process]") {
    TempDir dir("script");
    const auto script = dir.write("fake-proxy.sh", fake_proxy_script, true);
    ::setenv("OPENAI_API_KEY", "sk-must-not-leak", 1);
    ProxyProcess::Options options;
    options.command = {"/bin/sh", script.string()};
    options.config_yaml = "listen: 127.0.0.1:0\n";
    options.args = {"--workers", "2"};
    options.env = {{"FOO", "bar"}};
    ProxyProcess proxy(options);
    proxy.start();
    ::unsetenv("OPENAI_API_KEY");

    CHECK(proxy.port() == 4242);
    CHECK(proxy.host() == "127.0.0.1");
    CHECK(read_file(proxy.config_path()) == "listen: 127.0.0.1:0\n");
    const auto args_line = proxy.wait_for_stderr_line(
        [](const std::string& l) { return l.rfind("starting with args:", 0) == 0; }, bound);
    REQUIRE(args_line);
    CHECK(*args_line == "starting with args: --config " + proxy.config_path().string() +
                            " --listen 127.0.0.1:0 --workers 2");
    CHECK(proxy.wait_for_stderr_line([](const std::string& l) { return l == "key=unset foo=bar"; }, bound));

    const auto attempt = proxy.wait_for_record([](const JsonRecord& r) { return r.event() == "attempt"; }, bound);
    REQUIRE(attempt);
    CHECK(attempt->integer("attempt") == 1);
    CHECK(attempt->str("digest") == "sha256:00");

    REQUIRE(proxy.signal(SIGHUP));
    CHECK(proxy.wait_for_records("reload", 1, bound));
    CHECK(proxy.running());

    REQUIRE(proxy.signal(SIGTERM));
    CHECK(proxy.wait_exit(bound) == 0);
    CHECK_FALSE(proxy.running());
    CHECK(proxy.wait_for_stderr_line([](const std::string& l) { return l == "draining"; }, bound));
    std::vector<std::string> bad;
    const auto records = proxy.records(&bad);
    CHECK(bad.empty());
    REQUIRE(records.size() == 3);
    CHECK(records[2].str("outcome") == "ok");
    CHECK_FALSE(proxy.signal(SIGTERM));  // reaped: never signals a recycled pid
}

TEST_CASE("ProxyProcess::start fails clearly when the process exits first", "[process]") {
    TempDir dir("script");
    const auto script = dir.write("bad.sh", "#!/bin/sh\necho 'routes[0].upstream: not a URL' >&2\nexit 2\n", true);
    ProxyProcess::Options options;
    options.command = {"/bin/sh", script.string()};
    ProxyProcess proxy(options);
    CHECK_THROWS_WITH(proxy.start(), Contains("exited with code 2") && Contains("routes[0].upstream: not a URL"));
    CHECK(proxy.wait_exit(bound) == 2);
}

TEST_CASE("ProxyProcess::start fails clearly on timeout and the destructor kills the process", "[process]") {
    TempDir dir("script");
    const auto script = dir.write("silent.sh", "#!/bin/sh\necho 'still loading' >&2\nexec /bin/sleep 30\n", true);
    pid_t pid = -1;
    {
        ProxyProcess::Options options;
        options.command = {"/bin/sh", script.string()};
        options.start_timeout = 300ms;
        ProxyProcess proxy(options);
        const auto start = std::chrono::steady_clock::now();
        CHECK_THROWS_WITH(proxy.start(), Contains("within 300 ms") && Contains("still loading"));
        CHECK(std::chrono::steady_clock::now() - start < 3s);
        pid = proxy.pid();
        CHECK(proxy.running());
    }
    CHECK(::kill(pid, 0) != 0);  // killed and reaped
}

TEST_CASE("ProxyProcess reports an exec failure", "[process]") {
    ProxyProcess::Options options;
    options.binary = "/nonexistent/modelproxy";
    ProxyProcess proxy(options);
    CHECK_THROWS_WITH(proxy.start(), Contains("exec /nonexistent/modelproxy"));
}

// ---------------------------------------------------------------------------
// Helpers

TEST_CASE("JsonRecord reads typed fields of one JSON-lines record", "[helpers]") {
    const auto r = JsonRecord::parse(
        R"({"event":"turn","attempts":3,"stream":true,"bound":null,"duration_ms":12.0,"ttft_ms":1.5})");
    REQUIRE(r);
    CHECK(r->event() == "turn");
    CHECK(r->integer("attempts") == 3);
    CHECK(r->boolean("stream") == true);
    CHECK(r->is_null("bound"));
    CHECK(r->has("bound"));
    CHECK_FALSE(r->has("class"));
    CHECK(r->integer("duration_ms") == 12);
    CHECK_FALSE(r->integer("ttft_ms"));
    CHECK(r->number("ttft_ms") == Approx(1.5));
    CHECK_FALSE(r->str("attempts"));
    CHECK_FALSE(JsonRecord::parse("not json"));
    CHECK_FALSE(JsonRecord::parse("[1,2]"));

    std::vector<std::string> bad;
    CHECK(parse_records({R"({"event":"a"})", "garbage", R"({"event":"b"})"}, &bad).size() == 2);
    CHECK(bad == std::vector<std::string>{"garbage"});
}

TEST_CASE("TempDir writes files atomically and removes everything", "[helpers]") {
    std::filesystem::path kept;
    {
        TempDir dir("helpers");
        kept = dir.path();
        const auto file = dir.write("sub/config.yaml", "a: 1\n");
        CHECK(read_file(file) == "a: 1\n");
        dir.write("sub/config.yaml", "a: 2\n");
        CHECK(read_file(file) == "a: 2\n");
        CHECK_FALSE(std::filesystem::exists(file.string() + ".partial"));
    }
    CHECK_FALSE(std::filesystem::exists(kept));
}

TEST_CASE("gzip and deflate helpers round-trip", "[helpers]") {
    const std::string text = R"({"id":"x","choices":[]})";
    CHECK(decompress(gzip_compress(text)) == text);
    CHECK(decompress(deflate_compress(text)) == text);
    CHECK(gzip_compress(text).substr(0, 2) == "\x1f\x8b");
    CHECK_THROWS(decompress("not compressed"));
}

TEST_CASE("format helpers produce exact HTTP text", "[helpers]") {
    CHECK(format_response_head(429, {{"Retry-After", "1"}}) == "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n\r\n");
    CHECK(format_response_head(529, {}, "Overloaded") == "HTTP/1.1 529 Overloaded\r\n\r\n");
    CHECK(format_chunk("abcdefghijklmnopq") == "11\r\nabcdefghijklmnopq\r\n");
    CHECK(format_chunk("") == "0\r\n\r\n");
    CHECK(format_request("GET", "/x", {{"Host", "h"}}) == "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(count_header({{"A", "1"}, {"a", "2"}}, "A") == 2);
}
