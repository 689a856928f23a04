// Memory is bounded whatever the upstream sends (docs/behaviour.md section 8): one SSE
// line longer than limits.max_event_bytes is refused as soon as it passes
// that length, never buffered to its end; a gzip body is decoded in bounded
// steps and its decoded bytes count against the limits; held stream bytes
// count against max_response_body_bytes. Each test sends the proxy many
// times its limits and checks what the client sees and the proxy's peak
// resident set (VmHWM): a proxy that buffered what it was sent would grow by
// tens of megabytes.
//
// Also docs/behaviour.md section 4: an upstream status outside 100..599 is a bad response
// (class network, replayed like a connection dropped before its head).
#include "support/fake_provider.hpp"

#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"
#include "support/temp_dir.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 10s;  // generous bound for things that take milliseconds
constexpr std::int64_t event_limit = 64 * 1024;
constexpr std::int64_t body_limit = 1024 * 1024;
// What the proxy may grow by beyond the largest limit (KiB): its buffers of
// one read (64 KiB each), a decode step, allocator slack, and a sanitizer's
// bookkeeping (check_memory). A proxy that buffers a 64 MiB line, or decodes
// a read of a gzip bomb whole, grows by far more.
constexpr std::int64_t margin_kib = 24 * 1024;

std::string config(const FakeProvider& fake) {
    return "workers: 1\nlimits: {max_event_bytes: " + std::to_string(event_limit) +
           ", max_response_body_bytes: " + std::to_string(body_limit) +
           "}\nretry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\n"
           "routes:\n  - name: r\n    upstream: " +
           fake.base_url("/v1") + "\n    models: [m]\n";
}

const std::string stream_request = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";
const std::string chat_request = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
const std::string role = R"(data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]})" "\n\n";
const std::string text = R"(data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]})" "\n\n";
const std::string finish =
    R"(data: {"id":"c","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})" "\n\n";
const std::string done = "data: [DONE]\n\n";

// A line of `mib` MiB ("data: xxxx...") without a line end, in 1 MiB writes.
std::vector<std::string> long_line(int mib) {
    std::vector<std::string> chunks(static_cast<std::size_t>(mib), std::string(1 << 20, 'x'));
    chunks.front().replace(0, 6, "data: ");
    return chunks;
}

// gzip of `prefix`, then `fill_bytes` copies of `fill`: a few hundred KiB
// that decode to `fill_bytes`, compressed piece by piece (never whole here).
std::string gzip_bomb(std::string_view prefix, char fill, std::size_t fill_bytes) {
    z_stream z{};
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("deflateInit2 failed");
    std::string out;
    const std::string block(1 << 20, fill);
    const auto put = [&](std::string_view in, int flush) {
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
        z.avail_in = static_cast<uInt>(in.size());
        int rc = Z_OK;
        do {
            char buf[65536];
            z.next_out = reinterpret_cast<Bytef*>(buf);
            z.avail_out = sizeof buf;
            rc = deflate(&z, flush);
            out.append(buf, sizeof buf - z.avail_out);
        } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    };
    put(prefix, Z_NO_FLUSH);
    for (std::size_t left = fill_bytes; left > 0;) {
        const std::size_t n = std::min(left, block.size());
        put(std::string_view(block).substr(0, n), Z_NO_FLUSH);
        left -= n;
    }
    put({}, Z_FINISH);
    deflateEnd(&z);
    return out;
}

// `bytes` cut into writes of `size`.
std::vector<std::string> pieces(const std::string& bytes, std::size_t size) {
    std::vector<std::string> out;
    for (std::size_t at = 0; at < bytes.size(); at += size) out.push_back(bytes.substr(at, size));
    return out;
}

// The proxy's peak resident set (VmHWM) in KiB, or -1.
std::int64_t peak_kib(const ProxyProcess& proxy) {
    std::ifstream status("/proc/" + std::to_string(proxy.pid()) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6));
    return -1;
}

// A started proxy that has already relayed one ordinary stream, so that it
// holds what any turn uses (pools, buffers, scanners), with its peak
// resident set then reset to its current one ("5" to clear_refs, Linux 4.0
// and later): startup's passing peaks must not hide the turn's.
std::unique_ptr<ProxyProcess> start_warm(FakeProvider& fake) {
    auto proxy = start_proxy(config(fake));
    fake.push(Script::sse({role, text, finish, done}));
    const Response warm = proxy->client().post_json("/v1/chat/completions", stream_request);
    REQUIRE(warm.ok());
    REQUIRE(warm.status == 200);
    REQUIRE(proxy->wait_for_records("turn", 1, bound));
    std::ofstream("/proc/" + std::to_string(proxy->pid()) + "/clear_refs") << "5";
    return proxy;
}

// The proxy grew by no more than the response body limit and the margin
// since `baseline` (its peak, reset before the hostile turn). Measured
// growth where a body or held stream reaches the 1 MiB limit: about 3 MiB
// in the normal build, 4 MiB under ASan (its quarantine holds what the turn
// freed), 12 MiB under TSan (its shadow of what the turn touched); deploy/test
// drives all three with these tests.
void check_memory(const ProxyProcess& proxy, std::int64_t baseline) {
    const std::int64_t peak = peak_kib(proxy);
    CAPTURE(baseline, peak);
    REQUIRE(baseline > 0);
    CHECK(peak - baseline < body_limit / 1024 + margin_kib);
}

// The 502 response_too_large envelope before publication, its one attempt,
// and its turn record's outcome `refused` (a section 8 refusal, a stream's
// or a whole body's alike).
void check_too_large(const ProxyProcess& proxy, const FakeProvider& fake, const Response& r,
                     std::string_view message_part) {
    CAPTURE(r.wire.substr(0, 2000));
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(r.header("x-modelproxy-attempts") == "1");
    const auto error = envelope_error(r);
    CHECK(error.at("code") == "response_too_large");
    CHECK(std::string(error.at("message").as_string()).find(message_part) != std::string::npos);
    CHECK(fake.request_count() == 2);  // the warm-up and this one: a refusal is never retried
    const auto turn = proxy.wait_for_record(
        [](const JsonRecord& t) { return t.event() == "turn" && t.str("code") == "response_too_large"; }, bound);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "refused");
    CHECK(turn->integer("status") == 502);
}

}  // namespace

TEST_CASE("max_event_bytes: a 64 MiB SSE line before answer text is a 502, memory stays bounded", "[bounds]") {
    FakeProvider fake;
    auto proxy = start_warm(fake);
    const std::int64_t baseline = peak_kib(*proxy);
    // The line never ends and the upstream then waits: the refusal cannot
    // wait for its end.
    fake.push(Script::sse(long_line(64), {.end = SseEnd::hang}));
    const Response r = proxy->client({.timeout = bound}).post_json("/v1/chat/completions", stream_request);
    check_too_large(*proxy, fake, r, "max_event_bytes");
    CHECK(fake.wait_for_peer_close(1, bound));  // the upstream connection is closed, not kept
    check_memory(*proxy, baseline);
}

TEST_CASE("max_event_bytes: a 64 MiB SSE line after answer text ends the stream with the closing error event",
          "[bounds]") {
    FakeProvider fake;
    auto proxy = start_warm(fake);
    const std::int64_t baseline = peak_kib(*proxy);
    std::vector<std::string> chunks{role, text};
    for (std::string& chunk : long_line(64)) chunks.push_back(std::move(chunk));
    fake.push(Script::sse(std::move(chunks), {.end = SseEnd::hang}));
    const Response r = proxy->client({.timeout = bound}).post_json("/v1/chat/completions", stream_request);
    CAPTURE(r.wire.substr(0, 2000));
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(r.body.rfind(role + text, 0) == 0);
    CHECK(r.body.find("xxxx") == std::string::npos);  // nothing of the long line is forwarded
    CHECK(r.body.find("[DONE]") == std::string::npos);
    const auto event = last_data(r.body);
    CHECK(event.at("error").at("type") == "response_too_large");
    CHECK(event.at("error").at("code") == 502);
    CHECK(r.body.size() < 4096);
    const auto turn = proxy->wait_for_record(
        [](const JsonRecord& t) { return t.event() == "turn" && t.str("code") == "response_too_large"; }, bound);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "refused");
    CHECK(turn->boolean("published") == true);
    check_memory(*proxy, baseline);
}

TEST_CASE("max_event_bytes: a gzip stream decoding to one 100 MiB line is a 502, memory stays bounded",
          "[bounds]") {
    FakeProvider fake;
    auto proxy = start_warm(fake);
    const std::int64_t baseline = peak_kib(*proxy);
    const std::string bomb = gzip_bomb("data: ", 'x', std::size_t{100} << 20);
    REQUIRE(bomb.size() < 512 * 1024);
    fake.push(Script::sse(pieces(bomb, 64 * 1024), {.headers = {{"Content-Encoding", "gzip"}}, .end = SseEnd::hang}));
    const Response r = proxy->client({.timeout = bound}).post_json("/v1/chat/completions", stream_request);
    check_too_large(*proxy, fake, r, "max_event_bytes");
    check_memory(*proxy, baseline);
}

TEST_CASE("max_response_body_bytes: a gzip JSON body decoding to 100 MiB is a 502, memory stays bounded",
          "[bounds]") {
    FakeProvider fake;
    auto proxy = start_warm(fake);
    const std::int64_t baseline = peak_kib(*proxy);
    const std::string bomb = gzip_bomb(R"({"model":"m","pad":")", 'x', std::size_t{100} << 20);
    fake.push(Script::response(200, {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}}, bomb));
    const Response r = proxy->client({.timeout = bound}).post_json("/v1/chat/completions", chat_request);
    check_too_large(*proxy, fake, r, "max_response_body_bytes");
    check_memory(*proxy, baseline);
}

TEST_CASE("gzip bodies that decode in several steps arrive whole, streamed and not", "[bounds]") {
    // Each read decodes in steps of at most 64 KiB: what the limits allow
    // must still arrive byte for byte.
    FakeProvider fake;
    auto proxy = start_warm(fake);
    const std::string body = R"({"id":"c","model":"m","pad":")" + std::string(700 * 1024, 'p') + R"("})";
    fake.push(Script::response(200, {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}},
                               gzip_bomb(body, ' ', 0)));
    const Response whole = proxy->client().post_json("/v1/chat/completions", chat_request);
    REQUIRE(whole.ok());
    CHECK(whole.status == 200);
    CHECK(whole.body == body);

    std::string events = role;
    for (int i = 0; i < 4000; ++i) events += text;
    events += finish + done;
    REQUIRE(events.size() > 200 * 1024);
    fake.push(Script::sse({gzip_bomb(events, ' ', 0)}, {.headers = {{"Content-Encoding", "gzip"}}}));
    const Response streamed = proxy->client().post_json("/v1/chat/completions", stream_request);
    REQUIRE(streamed.ok());
    CHECK(streamed.status == 200);
    CHECK(streamed.body == events);
}

TEST_CASE("max_response_body_bytes: held stream bytes before answer text count against it, a 502",
          "[bounds]") {
    FakeProvider fake;
    auto proxy = start_warm(fake);
    const std::int64_t baseline = peak_kib(*proxy);
    // 2 MiB of role chunks and comments, never any answer text.
    std::vector<std::string> chunks;
    for (int i = 0; i < 32; ++i) {
        std::string chunk;
        while (chunk.size() < 64 * 1024) chunk += role + ": keep-alive\n\n";
        chunks.push_back(std::move(chunk));
    }
    fake.push(Script::sse(std::move(chunks), {.end = SseEnd::hang}));
    const Response r = proxy->client({.timeout = bound}).post_json("/v1/chat/completions", stream_request);
    check_too_large(*proxy, fake, r, "max_response_body_bytes");
    check_memory(*proxy, baseline);
}

TEST_CASE("an upstream status outside 100..599 is a dropped connection, replayed, never passed on", "[bounds]") {
    FakeProvider fake;
    auto proxy = start_proxy(config(fake));
    const std::string status = GENERATE(std::string("099"), std::string("999"), std::string("600"));
    CAPTURE(status);
    const std::string answer = "HTTP/1.1 " + status + " Odd\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    fake.push(Script{}.write(answer), 2);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(r.header("x-modelproxy-error-class") == "network");
    const auto error = envelope_error(r);
    CHECK(error.at("code") == "connection_dropped");
    CHECK(error.at("class") == "network");
    CHECK(fake.request_count() == 2);
    REQUIRE(proxy->wait_for_records("turn", 1, bound));
    const auto attempts = attempt_records(*proxy);
    REQUIRE(attempts.size() == 2);
    for (const auto& a : attempts) {
        CAPTURE(a.line());
        CHECK(a.is_null("status"));
        CHECK(a.str("rule") == "dropped-before-head");
    }
}

TEST_CASE("check and startup refuse max_event_bytes outside 1 KiB..64 MiB", "[bounds]") {
    const TempDir dir("bounds");
    const std::string routes = "routes:\n  - {name: r, upstream: 'http://127.0.0.1:9', models: [m]}\n";
    for (const std::string value : {"1023", "67108865"}) {
        const auto path = dir.write("c.yaml", "limits: {max_event_bytes: " + value + "}\n" + routes);
        const std::string line =
            "limits.max_event_bytes: must be 1024..67108864 (1 KiB..64 MiB), got " + value;
        const CommandResult check = run_modelproxy({"check", "--config", path.string()});
        CHECK(check.exit_code == 2);
        CHECK(check.err.find(line) != std::string::npos);
        const CommandResult serve = run_modelproxy({"--config", path.string(), "--listen", "127.0.0.1:0"});
        CHECK(serve.exit_code == 2);
        CHECK(serve.err.find(line) != std::string::npos);
    }
}
