// Forwarding through the real binary (docs/behaviour.md sections 4 and 9): what the
// upstream receives (target, body bytes), what the client receives (status,
// body bytes, headers), content codings, 1xx and 3xx answers, upstream
// keep-alive, and the envelopes of a refused or hanging upstream.
#include "support/fake_provider.hpp"

#include "support/compress.hpp"
#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/ports.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

// One route named "fake" to `upstream`; `extra` holds more route keys, each
// line indented by four spaces.
std::string one_route(const std::string& upstream, std::string_view models = "[gpt-4o-mini]",
                      std::string_view extra = "") {
    std::string yaml = "routes:\n  - name: fake\n    upstream: " + upstream + "\n    models: ";
    yaml += models;
    yaml += "\n";
    yaml += extra;
    return yaml;
}

std::string one_route(const FakeProvider& fake, std::string_view models = "[gpt-4o-mini]",
                      std::string_view extra = "") {
    return one_route(fake.base_url("/v1"), models, extra);
}

const std::string chat_request = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]})";

std::string chat_answer(std::string_view model = "gpt-4o-mini") {
    return R"({"id":"chatcmpl-1","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

// `text` cut at each offset (ascending, inside the text).
std::vector<std::string> split_at(const std::string& text, std::vector<std::size_t> offsets) {
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
    std::vector<std::string> pieces;
    std::size_t from = 0;
    for (const std::size_t at : offsets) {
        REQUIRE(at > from);
        REQUIRE(at < text.size());
        pieces.push_back(text.substr(from, at - from));
        from = at;
    }
    pieces.push_back(text.substr(from));
    return pieces;
}

// Waits until the fake has no open connection (it closed an idle one itself).
bool wait_for_no_open_connection(const FakeProvider& fake, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (fake.connections_open() != 0) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

// The second turn on `client`: answered 200 as its one attempt, on another
// upstream connection than the first. Returns its answer.
Response check_second_turn_on_new_connection(HttpClient& client, const FakeProvider& fake) {
    const Response second = client.post_json("/v1/chat/completions", chat_request);
    CAPTURE(second.wire);
    REQUIRE(second.ok());
    CHECK(second.status == 200);
    CHECK(second.header("x-modelproxy-attempts") == "1");
    REQUIRE(fake.wait_for_requests(2, bound));
    CHECK(fake.requests()[1].connection_id != fake.requests()[0].connection_id);
    return second;
}

// A JSON body sent with `coding` arrives decoded, without Content-Encoding.
void check_decoded(const std::string& coding, const std::string& encoded, const std::string& plain) {
    FakeProvider fake;
    fake.push(Script::response(200, {{"Content-Type", "application/json"}, {"Content-Encoding", coding}}, encoded));
    auto proxy = start_proxy(one_route(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(coding, r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == plain);
    CHECK(r.header_count("content-encoding") == 0);
    if (!r.chunked) CHECK(r.header("content-length") == std::to_string(plain.size()));
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].header("accept-encoding") == "identity");
}

}  // namespace

// ---------------------------------------------------------------------------
// Success answers

TEST_CASE("a non-stream JSON answer reaches the client byte-identical with its status and headers",
          "[forwarding]") {
    FakeProvider fake;
    // Odd spacing, an escape, raw UTF-8 and trailing whitespace: nothing may be re-serialized.
    const std::string body = "{\"id\":\"chatcmpl-7\",  \"model\" : \"gpt-4o-mini\",\n \"choices\":[{\"index\":0,"
                             "\"message\":{\"role\":\"assistant\",\"content\":\"caf\\u00e9 \xE2\x98\x95\"},"
                             "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,"
                             "\"total_tokens\":5}}  \n";
    fake.push(Script::json(201, body,
                           {{"X-Upstream-Trace", "up-123"},
                            {"OpenAI-Processing-Ms", "42"},
                            {"X-Multi", "a"},
                            {"X-Multi", "b"}}));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 201);
    CHECK(r.body == body);
    CHECK(r.header("content-type") == "application/json");
    CHECK(r.header("x-upstream-trace") == "up-123");
    CHECK(r.header("openai-processing-ms") == "42");
    CHECK(r.header_count("x-multi") == 2);
    CHECK(r.header("x-modelproxy-attempts") == "1");
    const auto request_id = r.header("x-modelproxy-request-id");
    REQUIRE(request_id);
    CHECK_FALSE(request_id->empty());
    CHECK(r.header_count("x-modelproxy-error-class") == 0);

    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("request_id") == *request_id);
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->integer("attempts") == 1);
    CHECK(turn->integer("status") == 201);
}

TEST_CASE("the client's x-request-id becomes the request id of the answer and the records", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake));

    const Response r =
        proxy->client().post_json("/v1/chat/completions", chat_request, {{"X-Request-Id", "req-client-42"}});
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-request-id") == "req-client-42");
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("request_id") == "req-client-42");
}

TEST_CASE("an SSE stream split at awkward chunk boundaries reaches the client with the same bytes",
          "[forwarding]") {
    const std::string head = R"(data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":)";
    const std::string full = head + R"({"role":"assistant","content":""},"finish_reason":null}]})" + "\n\n" +
                             head + "{\"content\":\"h\xC3\xA9llo\"},\"finish_reason\":null}]}\r\n\r\n" +
                             head + R"({"content":" world"},"finish_reason":null}]})" + "\n\n" +
                             head + R"({},"finish_reason":"stop"}]})" + "\n\n" +
                             "data: [DONE]\n\n";
    const std::size_t crlf = full.find("\r\n\r\n");
    const std::vector<std::string> chunks = split_at(full, {
        3,                                     // inside "data:"
        full.find("gpt-4o") + 3,               // inside the model name
        full.find("\xC3\xA9") + 1,             // between the two bytes of one UTF-8 character
        crlf + 1,                              // between CR and LF
        crlf + 3,                              // between the second CR and LF
        full.find(" world") + 2,               // inside answer text
        full.find("[DONE]") + 3,               // inside the end marker
    });
    REQUIRE(chunks.size() == 8);

    FakeProvider fake;
    SseOptions options;
    options.delay = 5ms;
    fake.push(Script::sse(chunks, options));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json(
        "/v1/chat/completions", R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("content-type") == "text/event-stream");
    CHECK(r.header("cache-control") == "no-cache");
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(r.body == full);

    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->boolean("stream") == true);
}

TEST_CASE("a chunked upstream JSON answer reaches the client whole", "[forwarding]") {
    FakeProvider fake;
    const std::string body = chat_answer();
    fake.push(Script::chunked(200, {{"Content-Type", "application/json"}},
                              {body.substr(0, 7), body.substr(7, 1), body.substr(8)}, 5ms));
    auto proxy = start_proxy(one_route(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == body);
    CHECK(r.header_count("transfer-encoding") <= 1);
}

TEST_CASE("a close-delimited upstream JSON answer reaches the client whole, and the next turn works",
          "[forwarding]") {
    FakeProvider fake;
    const std::string body = chat_answer();
    fake.push(Script{}
                  .write(format_response_head(200, {{"Content-Type", "application/json"}, {"Connection", "close"}}) +
                         body)
                  .close());
    fake.push(Script::json(200, body));
    auto proxy = start_proxy(one_route(fake), {}, {"--workers", "1"});
    HttpClient client = proxy->client();

    const Response r = client.post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == body);
    CHECK(r.keep_alive);  // the upstream's Connection: close is hop-by-hop

    check_second_turn_on_new_connection(client, fake);
}

// ---------------------------------------------------------------------------
// What the upstream receives

TEST_CASE("the upstream request body is byte-identical to the client's", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake));
    // Odd whitespace, key order, escapes (\u, surrogate pairs, \/) and number spellings.
    const std::string body = R"json({ "messages" :[ {"role":"user","content":"caf\u00e9 \ud83d\ude00 \"q\" \/ ü"}],
	"model":  "gpt-4o-mini" ,"temperature":0.50, "z":1E2 ,"n":-0.0e+0 }
)json";

    const Response r = proxy->client().post_json("/v1/chat/completions", body);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord up = fake.requests()[0];
    CHECK(up.method == "POST");
    CHECK(up.target == "/v1/chat/completions");
    CHECK(up.body == body);
    CHECK(up.header("content-length") == std::to_string(body.size()));
    CHECK(up.header("content-type") == "application/json");
}

// Bodies larger than a loopback socket takes at once: the request's send and
// the answer's write each finish after a wait (the proxy tries both without
// waiting first: transport/write_now.hpp), and the answer's body is read in
// many pieces.
TEST_CASE("a 12 MiB request and a 12 MiB answer pass whole and byte-identical", "[forwarding]") {
    const std::string filler(12 * 1024 * 1024, 'x');
    const std::string request = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":")" + filler + "\"}]}";
    std::string answer = chat_answer();
    answer.insert(answer.find("hello"), filler);
    FakeProvider fake;
    fake.push(Script::json(200, answer));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", request);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body.size() == answer.size());
    CHECK(r.body == answer);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].body.size() == request.size());
    CHECK(fake.requests()[0].body == request);
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "ok");
}

TEST_CASE("upstream_model rewriting changes only the bytes of the model value", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-4o-mini-2024-07-18")));
    auto proxy = start_proxy(one_route(fake, "[{name: fast, upstream_model: gpt-4o-mini-2024-07-18}]"));
    // A nested "model" and the word in the content must stay as they are.
    const std::string body =
        "{\"metadata\":{\"model\":\"fast\"},\"model\" :\t\"fast\" , \"messages\":[{\"role\":\"user\","
        "\"content\":\"model \\\"fast\\\"\"}]}";
    const std::string lead = "\"model\" :\t";
    const std::size_t at = body.find(lead + "\"fast\"") + lead.size();
    const std::string expected = body.substr(0, at) + "\"gpt-4o-mini-2024-07-18\"" + body.substr(at + 6);

    const Response r = proxy->client().post_json("/v1/chat/completions", body);
    CAPTURE(r.body);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].body == expected);
    CHECK(fake.requests()[0].header("content-length") == std::to_string(expected.size()));
}

TEST_CASE("the upstream target joins the base path, the client path and both queries", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer()));
    const std::string upstream = "http://127.0.0.1:" + std::to_string(fake.port()) + "/base/v1/";
    auto proxy = start_proxy(one_route(upstream, "[gpt-4o-mini]", "    query: {api-version: \"2024-06-01\"}\n"));

    const Response r = proxy->client().post_json("/v1/chat/completions?x=1", chat_request);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].target == "/base/v1/chat/completions?x=1&api-version=2024-06-01");
}

TEST_CASE("a \"*\" route forwards an unknown model unchanged", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("my-local-llama")));
    auto proxy = start_proxy(one_route(fake, "[\"*\"]"));
    const std::string body = R"({"model":"my-local-llama","messages":[{"role":"user","content":"hi"}]})";

    const Response r = proxy->client().post_json("/v1/chat/completions", body);
    CAPTURE(r.body);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer("my-local-llama"));
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].target == "/v1/chat/completions");
    CHECK(fake.requests()[0].body == body);
}

TEST_CASE("a \"*\" route forwards a GET /v1/files", "[forwarding]") {
    FakeProvider fake;
    const std::string list = R"({"object":"list","data":[{"id":"file-1","object":"file","purpose":"batch"}]})";
    fake.push(Script::json(200, list));
    auto proxy = start_proxy(one_route(fake, "[\"*\"]"));

    const Response r = proxy->client().get("/v1/files?purpose=batch");
    CAPTURE(r.body);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == list);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].method == "GET");
    CHECK(fake.requests()[0].target == "/v1/files?purpose=batch");
    CHECK(fake.requests()[0].body.empty());
}

TEST_CASE("a multipart/form-data request is routed by its model part", "[forwarding]") {
    FakeProvider chat;
    FakeProvider audio;
    audio.push(Script::json(200, R"({"text":"hello there"})"));
    const std::string yaml = "routes:\n"
                             "  - name: chat\n    upstream: " + chat.base_url("/v1") + "\n    models: [gpt-4o-mini]\n"
                             "  - name: audio\n    upstream: " + audio.base_url("/v1") + "\n    models: [whisper-1]\n";
    auto proxy = start_proxy(yaml);
    const std::string boundary = "----mpBoundary7MA4YWxk";
    const std::string body = "--" + boundary + "\r\n"
                             "Content-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
                             "Content-Type: audio/wav\r\n\r\n" +
                             std::string("RIFF\0\x01\x02\xff model", 14) + "\r\n"
                             "--" + boundary + "\r\n"
                             "Content-Disposition: form-data; name=\"model\"\r\n\r\n"
                             "whisper-1\r\n"
                             "--" + boundary + "--\r\n";

    const Response r = proxy->client().request(
        "POST", "/v1/audio/transcriptions", {{"Content-Type", "multipart/form-data; boundary=" + boundary}}, body);
    CAPTURE(r.body);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == R"({"text":"hello there"})");
    REQUIRE(audio.wait_for_requests(1, bound));
    CHECK(audio.requests()[0].target == "/v1/audio/transcriptions");
    CHECK(audio.requests()[0].body == body);
    CHECK(chat.request_count() == 0);
    CHECK(chat.connections_accepted() == 0);
}

// ---------------------------------------------------------------------------
// Non-success upstream answers

TEST_CASE("a terminal 400 is passed on with its body and headers and the proxy's failure headers",
          "[forwarding]") {
    FakeProvider fake;
    const std::string error =
        R"({"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}})";
    fake.push(Script::json(400, error, {{"X-Custom-Trace", "t-1"}, {"x-should-retry", "true"}}));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 400);
    CHECK(r.body == error);
    CHECK(r.header("content-type") == "application/json");
    CHECK(r.header("x-custom-trace") == "t-1");
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(r.header("x-modelproxy-error-class") == "invalid-request");
    CHECK(r.header("x-modelproxy-decision") == "terminal");
    CHECK(r.header_count("x-modelproxy-bound") == 0);
    CHECK(r.header_count("x-should-retry") == 1);
    CHECK(r.header("x-should-retry") == "false");
    CHECK(fake.request_count() == 1);
}

TEST_CASE("an upstream 3xx is not followed: 502 upstream_redirect after one request", "[forwarding]") {
    FakeProvider fake;
    FakeProvider elsewhere;
    fake.set_default(Script::response(302, {{"Location", elsewhere.base_url("/v1/chat/completions")}}, ""));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    const auto error = envelope_error(r);
    CHECK(error.at("code") == "upstream_redirect");
    CHECK(error.at("type") == "modelproxy_error");
    CHECK(error.at("attempts") == 1);
    CHECK(r.header("x-should-retry") == "false");
    CHECK(fake.request_count() == 1);
    CHECK(elsewhere.connections_accepted() == 0);
}

TEST_CASE("upstream 100 Continue and 103 Early Hints are consumed before the final answer", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script{}
                  .write("HTTP/1.1 100 Continue\r\n\r\n")
                  .write("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
                  .then(Script::json(200, chat_answer())));
    auto proxy = start_proxy(one_route(fake));
    HttpClient client = proxy->client();

    const Response r = client.post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.wire.rfind("HTTP/1.1 200 ", 0) == 0);
    CHECK(r.body == chat_answer());
    // Nothing else (a late interim answer) follows on the connection.
    CHECK(client.read_some_raw(200ms).bytes.empty());
}

// ---------------------------------------------------------------------------
// Content codings

TEST_CASE("a gzip-encoded upstream body arrives decoded without Content-Encoding", "[forwarding]") {
    const std::string plain = chat_answer();
    check_decoded("gzip", gzip_compress(plain), plain);
}

TEST_CASE("a deflate-encoded upstream body arrives decoded without Content-Encoding", "[forwarding]") {
    const std::string plain = chat_answer();
    check_decoded("deflate", deflate_compress(plain), plain);
}

TEST_CASE("a gzip-encoded upstream error body is passed on decoded", "[forwarding]") {
    FakeProvider fake;
    const std::string error = R"({"error":{"message":"bad","type":"invalid_request_error","code":"invalid_value"}})";
    fake.push(Script::response(400, {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}},
                               gzip_compress(error)));
    auto proxy = start_proxy(one_route(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 400);
    CHECK(r.body == error);
    CHECK(r.header_count("content-encoding") == 0);
}

TEST_CASE("a gzip-encoded SSE stream arrives decoded", "[forwarding]") {
    const std::string events =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":"
        "[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    const std::string encoded = gzip_compress(events);
    FakeProvider fake;
    fake.push(Script::chunked(200, {{"Content-Type", "text/event-stream"}, {"Content-Encoding", "gzip"}},
                              {encoded.substr(0, 9), encoded.substr(9)}));
    auto proxy = start_proxy(one_route(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions",
                                                 R"({"model":"gpt-4o-mini","stream":true,"messages":[]})");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("content-type") == "text/event-stream");
    CHECK(r.header_count("content-encoding") == 0);
    CHECK(r.body == events);
}

TEST_CASE("a br-encoded upstream body is a terminal 502 unsupported_encoding", "[forwarding]") {
    FakeProvider fake;
    fake.set_default(Script::response(200, {{"Content-Type", "application/json"}, {"Content-Encoding", "br"}},
                                      std::string("\x1b\x2a\x00\xf8\x8d\x94\x6e", 7)));
    auto proxy = start_proxy(one_route(fake));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(envelope_error(r).at("code") == "unsupported_encoding");
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(r.header_count("content-encoding") == 0);
    CHECK(fake.request_count() == 1);
}

// ---------------------------------------------------------------------------
// Upstream connections

TEST_CASE("upstream keep-alive: two sequential turns reuse one upstream connection", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer()), 2);
    // One worker: one pool, whichever client connection a turn arrives on.
    auto proxy = start_proxy(one_route(fake), {}, {"--workers", "1"});

    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat_request).status == 200);
    REQUIRE(proxy->client().post_json("/v1/chat/completions", chat_request).status == 200);
    REQUIRE(fake.wait_for_requests(2, bound));
    const auto up = fake.requests();
    CHECK(up[0].connection_id == up[1].connection_id);
    CHECK(fake.connections_accepted() == 1);
}

TEST_CASE("an upstream that closes after its answer does not fail the next turn, which is attempt 1",
          "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer()).close());
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake), {}, {"--workers", "1"});
    HttpClient client = proxy->client();

    REQUIRE(client.post_json("/v1/chat/completions", chat_request).status == 200);
    // The fake has sent its FIN and given up the connection (close() drains for at most 2 s).
    REQUIRE(wait_for_no_open_connection(fake, bound));
    const Response second = check_second_turn_on_new_connection(client, fake);
    CHECK(second.body == chat_answer());
}

TEST_CASE("an answer read whole that lists close in Connection is not pooled: the proxy closes that connection",
          "[forwarding]") {
    // A Content-Length answer that arrives whole is read in one pass, not by
    // Beast's parser (transport/whole_answer.hpp); its keep-alive must still
    // be Beast's: any Connection token `close` ends the connection.
    const std::string value = GENERATE(as<std::string>{}, "close", "x-trace, Close");
    CAPTURE(value);
    FakeProvider fake;
    const std::string body = chat_answer();
    fake.push(Script{}
                  .write(format_response_head(200, {{"Content-Type", "application/json"},
                                                    {"Content-Length", std::to_string(body.size())},
                                                    {"Connection", value}}) +
                         body)
                  .expect_close(bound));
    fake.push(Script::json(200, body));
    auto proxy = start_proxy(one_route(fake), {}, {"--workers", "1"});
    HttpClient client = proxy->client();

    const Response first = client.post_json("/v1/chat/completions", chat_request);
    CAPTURE(first.wire);
    REQUIRE(first.ok());
    CHECK(first.status == 200);
    CHECK(first.body == body);
    CHECK(fake.wait_for_peer_close(0, bound));  // the proxy closed it, not the fake after its wait

    check_second_turn_on_new_connection(client, fake);
}

TEST_CASE("an upstream that closes an idle kept-alive connection does not fail the next turn",
          "[forwarding]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer()).expect_close(100ms));  // then the fake closes it
    fake.push(Script::json(200, chat_answer()));
    auto proxy = start_proxy(one_route(fake), {}, {"--workers", "1"});
    HttpClient client = proxy->client();

    REQUIRE(client.post_json("/v1/chat/completions", chat_request).status == 200);
    REQUIRE(wait_for_no_open_connection(fake, bound));
    check_second_turn_on_new_connection(client, fake);
    REQUIRE(proxy->wait_for_records("turn", 2, bound));
    std::size_t attempt_records = 0;
    for (const auto& record : proxy->records()) attempt_records += record.event() == "attempt";
    CHECK(attempt_records == 2);  // one per turn: the stale connection is no attempt
}

TEST_CASE("connection refused: 502 envelope with class network", "[forwarding]") {
    const std::string upstream = "http://127.0.0.1:" + std::to_string(unused_port()) + "/v1";
    auto proxy = start_proxy(one_route(upstream, "[gpt-4o-mini]", "    retry: {max_attempts: 1}\n"));

    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 502);
    CHECK(r.header("content-type") == "application/json");
    const auto error = envelope_error(r);
    CHECK(error.at("type") == "modelproxy_error");
    CHECK(error.at("class") == "network");
    CHECK(error.at("attempts") == 1);
    CHECK(error.at("decision") == "exhausted");
    CHECK(error.at("bound") == "max_attempts");
    CHECK(error.at("code").is_string());
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(r.header("x-modelproxy-error-class") == "network");
    CHECK(r.header("x-should-retry") == "false");

    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("class") == "network");
    CHECK(turn->integer("attempts") == 1);
}

TEST_CASE("a hanging upstream ends at the turn deadline with 504 class timeout", "[forwarding]") {
    FakeProvider fake;
    fake.push(Script{}.hang());
    auto proxy = start_proxy(one_route(fake, "[gpt-4o-mini]",
                                       "    timeout_ms: 300\n    retry: {max_attempts: 1, min_attempt_ms: 10}\n"));

    const auto start = std::chrono::steady_clock::now();
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 504);
    const auto error = envelope_error(r);
    CHECK(error.at("class") == "timeout");
    CHECK(error.at("attempts") == 1);
    CHECK(r.header("x-modelproxy-error-class") == "timeout");
    CHECK(elapsed >= 200ms);
    CHECK(elapsed < 4s);
    // The timed-out upstream connection is closed, never reused (section 4).
    CHECK(fake.wait_for_peer_close(0, bound));
}
