// Stream bodies already read with their head (transport/ parses buffered
// body bytes without I/O): an identity stream larger than one read
// and a chunked stream whose every chunk came in one write, each relayed
// byte-identical and its upstream connection reused for the next turn.
#include "support/fake_provider.hpp"

#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

std::string route(const FakeProvider& fake) {
    return "routes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") + "\n    models: [gpt-4o-mini]\n";
}

const std::string chat_request =
    R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})";

std::string event(std::string_view delta, std::string_view finish = "null") {
    return R"(data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":)" +
           std::string(delta) + R"(,"finish_reason":)" + std::string(finish) + "}]}\n\n";
}

// A chat stream of at least `bytes`, as its events.
std::vector<std::string> chat_events(std::size_t bytes) {
    std::vector<std::string> events{event(R"({"role":"assistant","content":""})")};
    std::size_t size = events.back().size();
    for (int i = 0; size < bytes; ++i) {
        events.push_back(event(R"({"content":"word )" + std::to_string(i) + "\"}"));
        size += events.back().size();
    }
    events.push_back(event("{}", R"("stop")"));
    events.push_back("data: [DONE]\n\n");
    return events;
}

std::string joined(const std::vector<std::string>& pieces) {
    std::string all;
    for (const auto& piece : pieces) all += piece;
    return all;
}

// Two turns through one worker get `body` each, byte-identical, outcome ok,
// over one upstream connection.
void check_two_turns(const FakeProvider& fake, const ProxyProcess& proxy, const std::string& body) {
    for (int turn = 0; turn < 2; ++turn) {
        const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.header("content-type") == "text/event-stream");
        CHECK(r.body.size() == body.size());
        CHECK(r.body == body);
    }
    const auto turn = turn_record(proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "ok");
    REQUIRE(fake.wait_for_requests(2, bound));
    CHECK(fake.connections_accepted() == 1);
}

}  // namespace

TEST_CASE("an identity stream written with its head and longer than one read is relayed whole", "[stream]") {
    const std::string body = joined(chat_events(150 * 1024));  // more than the 64 KiB a read takes
    FakeProvider fake;
    const Headers headers{{"Content-Type", "text/event-stream"}, {"Content-Length", std::to_string(body.size())}};
    fake.push(Script{}.write(format_response_head(200, headers) + body), 2);
    auto proxy = start_proxy(route(fake), {}, {"--workers", "1"});
    check_two_turns(fake, *proxy, body);
}

TEST_CASE("a chunked stream whose every chunk came in one write with its head is relayed whole", "[stream]") {
    const std::vector<std::string> events = chat_events(20 * 1024);
    std::string wire =
        format_response_head(200, {{"Content-Type", "text/event-stream"}, {"Transfer-Encoding", "chunked"}});
    for (const auto& e : events) wire += format_chunk(e);
    wire += "0\r\nX-Trailer: end\r\n\r\n";  // a trailer too, in the same write
    FakeProvider fake;
    fake.push(Script{}.write(wire), 2);
    auto proxy = start_proxy(route(fake), {}, {"--workers", "1"});
    check_two_turns(fake, *proxy, joined(events));
}

// After publication the relay sends a read's events as views where the read
// put them (RelayOut). An event that spans reads is yielded from the SSE
// reader's own buffer instead, which the start of the next unfinished event
// overwrites within the same read: such an event must be copied, or the
// client gets the next event's bytes in its place.
TEST_CASE("an event that spans reads is relayed whole when the next one also spans reads", "[stream]") {
    const std::string role = event(R"({"role":"assistant","content":""})");
    const std::string first = event(R"({"content":"published"})");  // the first answer text
    const std::string answer = event(R"({"content":"spanning two reads"})");
    // Its first bytes differ from the spanning event's, so that they show
    // if they land in its place.
    const std::string finish =
        R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"object":"chat.completion.chunk","model":"gpt-4o-mini","id":"c1"})"
        "\n\n";
    const std::string done = "data: [DONE]\n\n";
    const std::size_t half = answer.size() / 2, finish_half = finish.size() / 2;
    SseOptions options;
    options.delay = 30ms;  // each piece its own upstream read
    FakeProvider fake;
    fake.push(Script::sse({role + first + answer.substr(0, half), answer.substr(half) + finish.substr(0, finish_half),
                           finish.substr(finish_half) + done},
                          options));
    auto proxy = start_proxy(route(fake), {}, {"--workers", "1"});
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == role + first + answer + finish + done);
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "ok");
}
