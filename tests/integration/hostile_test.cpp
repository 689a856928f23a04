// Hostile clients against the real binary: slow heads, a client
// that never reads, half-closed sockets, thousands of connections opened and
// dropped, request smuggling. Each test asserts the defined answer and that
// the proxy still serves a new connection afterwards. Hostile upstreams are in
// hostile_upstream_test.cpp.
//
// Covered elsewhere and not repeated: one partial head -> 408
// (client_errors_test.cpp), pipelined requests answered in order
// (client_errors_test.cpp), a client that leaves mid-stream
// (stream_test.cpp).
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds

const std::string chat_request = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
const std::string chat_answer =
    R"({"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";

std::unique_ptr<ProxyProcess> start_proxy(const FakeProvider& fake, std::string_view preamble = {},
                                          std::string_view route_extra = {}) {
    ProxyProcess::Options options;
    options.config_yaml = std::string(preamble) + "routes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") +
                          "\n    models: [m]\n" + std::string(route_extra);
    auto proxy = std::make_unique<ProxyProcess>(std::move(options));
    proxy->start();
    return proxy;
}

// The proxy still serves: /healthz on a new connection, and a forwarded turn.
void check_healthy(FakeProvider& fake, const ProxyProcess& proxy) {
    HttpClient probe = proxy.client();
    const Response health = probe.get("/healthz");
    CAPTURE(health.wire);
    REQUIRE(health.ok());
    CHECK(health.status == 200);
    CHECK(health.body == R"({"status":"ok"})");
    fake.push(Script::json(200, chat_answer));
    const Response turn = probe.post_json("/v1/chat/completions", chat_request);
    CAPTURE(turn.wire);
    REQUIRE(turn.ok());
    CHECK(turn.status == 200);
    CHECK(turn.body == chat_answer);
}

// A section 9 refusal: status, envelope code, x-should-retry: false.
void check_refusal(const Response& r, unsigned status, std::string_view code) {
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == status);
    CHECK(r.header("x-should-retry") == "false");
    const auto error = envelope_error(r);
    CHECK(error.at("code").as_string() == code);
    CHECK(error.at("type").as_string() == "invalid_request_error");
}

std::string raw_request(std::string_view method, std::string_view target, const Headers& extra,
                        std::string_view body) {
    Headers headers{{"Host", "127.0.0.1"}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    return format_request(method, target, headers, body);
}

// A plain socket connected to the proxy; -1 when connect fails.
int raw_connect(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Polls `value` until it is at most `limit` or `timeout` passes; the last value.
template <class F>
auto wait_at_most(F value, decltype(value()) limit, std::chrono::milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    auto v = value();
    while (v > limit && Clock::now() < until) {
        std::this_thread::sleep_for(20ms);
        v = value();
    }
    return v;
}

}  // namespace

// ---------------------------------------------------------------------------
// Slow heads

TEST_CASE("slowloris: heads trickled a byte at a time get 408 at header_timeout_ms and hold up no one",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy(fake, "limits: {header_timeout_ms: 1500}\n");
    constexpr std::size_t slow_count = 40;
    std::vector<HttpClient> slow;
    for (std::size_t i = 0; i < slow_count; ++i) {
        slow.push_back(proxy->client());
        REQUIRE_FALSE(slow.back().send_raw("POST /v1/chat/completions HTTP/1.1\r\n"));
    }
    const auto started = Clock::now();

    // One byte per client every ~50 ms, until the proxy closes each one
    // (or 10 s pass: a head that was never cut would keep it going).
    std::atomic<std::size_t> answered{0};
    std::thread trickler([&] {
        std::vector<bool> done(slow_count, false);
        while (answered.load() < slow_count && Clock::now() - started < 10s) {
            for (std::size_t i = 0; i < slow_count; ++i) {
                if (done[i]) continue;
                if (slow[i].is_closed_by_peer(1ms) || slow[i].send_raw("x")) {
                    done[i] = true;
                    ++answered;
                }
            }
            std::this_thread::sleep_for(50ms);
        }
    });

    // Meanwhile a normal client is served at once, local and forwarded.
    check_healthy(fake, *proxy);
    const std::size_t answered_while_normal_served = answered.load();
    trickler.join();
    const auto took = Clock::now() - started;

    CHECK(answered_while_normal_served == 0);  // the slow heads were all still open
    CHECK(answered.load() == slow_count);
    CHECK(took < 6s);  // trickled bytes do not extend the head's time
    for (auto& client : slow) check_refusal(client.read_response(bound), 408, "request_timeout");
    CHECK(fake.request_count() == 1);  // only the normal client's turn
    check_healthy(fake, *proxy);
}

// ---------------------------------------------------------------------------
// A client that never reads

namespace {

// About 4 KiB of answer text per event; 16 events per upstream write.
std::string big_text_event() {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":")" +
           std::string(4000, 'x') + "\"},\"finish_reason\":null}]}\n\n";
}

constexpr std::size_t writes = 1024;  // of 16 events each: 64 MiB of stream

// `Connection: close`: the proxy closes the upstream connection once it has
// read the whole stream, which the fake records as the request's
// peer_closed_at. (A reset instead would discard what still sits unsent in
// the fake's socket buffer.)
Script long_stream() {
    std::string piece;
    for (int i = 0; i < 16; ++i) piece += big_text_event();
    std::vector<std::string> chunks(writes, piece);
    chunks.push_back("data: [DONE]\n\n");
    SseOptions options;
    options.headers = {{"Connection", "close"}};
    Script s = Script::sse(std::move(chunks), options);
    s.close();
    return s;
}

const std::string stream_request = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";

}  // namespace

// What the proxy does with a client that never reads: it stops reading the
// upstream once the socket buffers are full (back-pressure, nothing buffered
// in the process), and waits. There is no client write timeout: the turn
// lasts until the client reads or leaves (or the drain limit ends it).
TEST_CASE("a client that never reads a 64 MiB stream: the proxy holds a bounded amount and the upstream waits",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy(fake);
    REQUIRE(proxy->client().get("/healthz").status == 200);
    const std::int64_t baseline = proxy->rss_kib();
    REQUIRE(baseline > 0);

    fake.push(long_stream());
    HttpClient client = proxy->client({.timeout = 30s});
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                      stream_request));
    REQUIRE(fake.wait_for_requests(1, bound));

    // The client reads nothing for a while: the relay stops when the socket
    // buffers are full, and the proxy's memory stays flat.
    std::int64_t peak = 0;
    for (int i = 0; i < 30; ++i) {
        peak = std::max(peak, proxy->rss_kib());
        std::this_thread::sleep_for(50ms);
    }
    CAPTURE(baseline, peak);
    CHECK(peak - baseline < 32 * 1024);  // KiB: well below the 64 MiB streamed

    // Once the client reads, every byte arrives, in order, whole; and only
    // then could the upstream finish (back-pressure reached it).
    const auto reading_from = Clock::now();
    const Response head = client.read_head(30s);
    REQUIRE(head.head_complete);
    CHECK(head.status == 200);
    const Response r = client.read_rest(60s);
    REQUIRE(r.ok());
    CHECK(r.body.size() == writes * 16 * big_text_event().size() + std::string("data: [DONE]\n\n").size());
    CHECK(r.body.ends_with("data: [DONE]\n\n"));
    REQUIRE(fake.wait_for_peer_close(0, bound));
    CHECK(fake.requests()[0].peer_closed_at > reading_from);
    check_healthy(fake, *proxy);
}

TEST_CASE("a client that never reads, then leaves: the turn is cancelled and the upstream connection closed",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy(fake);
    fake.push(long_stream());
    {
        HttpClient client = proxy->client();
        REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions",
                                          {{"Content-Type", "application/json"}, {"x-request-id", "never-reads"}},
                                          stream_request));
        REQUIRE(fake.wait_for_requests(1, bound));
    }  // closed without reading a byte
    const auto turn = proxy->wait_for_record(
        [](const JsonRecord& r) { return r.event() == "turn" && r.str("request_id") == "never-reads"; }, bound);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "cancelled");
    CHECK(fake.wait_for_peer_close(0, bound));
    check_healthy(fake, *proxy);
}

// ---------------------------------------------------------------------------
// Half-closed clients

TEST_CASE("a client that half-closes after a whole request", "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy(fake);

    SECTION("a local answer still arrives") {
        HttpClient client = proxy->client();
        REQUIRE_FALSE(client.send_request("GET", "/healthz"));
        REQUIRE_FALSE(client.shutdown_write());
        const Response r = client.read_response(bound);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(client.is_closed_by_peer(bound));
    }
    SECTION("a forwarded turn ends as a client disconnect: cancelled, nothing answered") {
        // docs/behaviour.md section 6: a client that disconnects ends the turn at once. A
        // FIN is all a proxy sees of a disconnect before it writes.
        fake.push(Script{}.sleep(300ms).then(Script::json(200, chat_answer)));
        HttpClient client = proxy->client();
        REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions",
                                          {{"Content-Type", "application/json"}, {"x-request-id", "half-closed"}},
                                          chat_request));
        REQUIRE_FALSE(client.shutdown_write());
        const auto turn = proxy->wait_for_record(
            [](const JsonRecord& r) { return r.event() == "turn" && r.str("request_id") == "half-closed"; }, bound);
        REQUIRE(turn);
        CHECK(turn->str("outcome") == "cancelled");
        CHECK(turn->is_null("status"));  // the client got nothing
        CHECK(turn->boolean("published") == false);
        const RawRead rest = client.read_some_raw(bound);
        CHECK(rest.closed());
        CHECK(rest.bytes.empty());
    }
    check_healthy(fake, *proxy);
}

// A reset that arrives with the bytes it follows is not in what the proxy's
// read learns of the socket (TCP_INQ reports bytes and a FIN, not a reset):
// the read of the rest of the head must still find it at once, not wait for
// a readiness epoll already reported until header_timeout_ms.
TEST_CASE("a client that resets right after part of a request head: its connection closes at once",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy(fake);
    check_healthy(fake, *proxy);
    const int baseline = proxy->open_fds();
    const std::string partial = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/js";
    std::vector<int> fds;
    for (int i = 0; i < 20; ++i) {
        const int fd = raw_connect(proxy->port());
        REQUIRE(fd >= 0);
        fds.push_back(fd);
    }
    std::this_thread::sleep_for(300ms);  // accepted, each session waiting for its first byte
    // The proxy stopped, so that each socket's bytes and reset are both
    // there when it reads: one readiness for both, as on a busy worker.
    REQUIRE(proxy->signal(SIGSTOP));
    for (const int fd : fds) {
        REQUIRE(::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL) > 0);
        const linger hard{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        ::close(fd);
    }
    REQUIRE(proxy->signal(SIGCONT));
    // Well inside the 10 s header_timeout_ms that would otherwise close them.
    const int after = wait_at_most([&] { return proxy->open_fds(); }, baseline, 3s);
    CAPTURE(baseline, after);
    CHECK(after <= baseline);
    CHECK(fake.request_count() == 1);  // check_healthy's own turn only
    check_healthy(fake, *proxy);
}

// ---------------------------------------------------------------------------
// Many connections

TEST_CASE("2000 connections opened and dropped leave no descriptor behind", "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy(fake);
    check_healthy(fake, *proxy);
    const int baseline = proxy->open_fds();
    REQUIRE(baseline > 0);

    const std::string partial = "GET /heal";
    const std::string whole = raw_request("GET", "/healthz", {}, {});
    for (int i = 0; i < 2000; ++i) {
        const int fd = raw_connect(proxy->port());
        REQUIRE(fd >= 0);
        switch (i % 4) {
            case 0: break;  // nothing sent
            case 1: REQUIRE(::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL) > 0); break;
            case 2: {       // reset instead of FIN
                const linger hard{1, 0};
                ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
                break;
            }
            case 3: REQUIRE(::send(fd, whole.data(), whole.size(), MSG_NOSIGNAL) > 0); break;  // answer unread
        }
        ::close(fd);
    }
    // Every session notices its peer is gone and closes its socket.
    const int after = wait_at_most([&] { return proxy->open_fds(); }, baseline + 2, 10s);
    CAPTURE(baseline, after);
    CHECK(after <= baseline + 2);
    CHECK(fake.request_count() == 1);
    check_healthy(fake, *proxy);
}

// ---------------------------------------------------------------------------
// Request smuggling: framing a proxy and an upstream could read differently

TEST_CASE("ambiguous request framing gets 400 bad_request, nothing is forwarded and the connection closes",
          "[hostile]") {
    FakeProvider fake;
    auto proxy = start_proxy(fake);
    // A whole second request hidden where one reading of the framing puts it.
    const std::string smuggled = raw_request("POST", "/v1/chat/completions",
                                             {{"Content-Type", "application/json"},
                                              {"Content-Length", std::to_string(chat_request.size())}},
                                             chat_request);
    const std::string chunked_body = "0\r\n\r\n" + smuggled;
    Headers headers{{"Content-Type", "application/json"}};
    std::string body;
    SECTION("Content-Length and Transfer-Encoding: chunked") {
        headers.push_back({"Content-Length", std::to_string(chunked_body.size())});
        headers.push_back({"Transfer-Encoding", "chunked"});
        body = chunked_body;
    }
    SECTION("Transfer-Encoding: chunked, then Content-Length") {
        headers.push_back({"Transfer-Encoding", "chunked"});
        headers.push_back({"Content-Length", "5"});
        body = chunked_body;
    }
    SECTION("two different Content-Lengths") {
        headers.push_back({"Content-Length", std::to_string(chat_request.size())});
        headers.push_back({"Content-Length", std::to_string(chat_request.size() + smuggled.size())});
        body = chat_request + smuggled;
    }
    SECTION("a Content-Length list that disagrees with itself") {
        headers.push_back({"Content-Length", std::to_string(chat_request.size()) + ", " +
                                                 std::to_string(chat_request.size() + smuggled.size())});
        body = chat_request + smuggled;
    }
    SECTION("a Transfer-Encoding whose last coding is not chunked") {
        headers.push_back({"Transfer-Encoding", "chunked, identity"});
        body = chunked_body;
    }
    SECTION("Transfer-Encoding: chunked twice") {
        headers.push_back({"Transfer-Encoding", "chunked"});
        headers.push_back({"Transfer-Encoding", "chunked"});
        body = chunked_body;
    }
    SECTION("a Transfer-Encoding that is not chunked at all") {
        headers.push_back({"Transfer-Encoding", "gzip"});
        body = chat_request + smuggled;
    }
    SECTION("a Content-Length that is not a number") {
        headers.push_back({"Content-Length", "+" + std::to_string(chat_request.size())});
        body = chat_request + smuggled;
    }
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(raw_request("POST", "/v1/chat/completions", headers, body)));
    const Response r = client.read_response(bound);
    check_refusal(r, 400, "bad_request");
    CHECK(r.header("connection") == "close");
    CHECK(client.is_closed_by_peer(bound));
    CHECK(fake.request_count() == 0);  // neither the request nor what it hid
    check_healthy(fake, *proxy);
}
