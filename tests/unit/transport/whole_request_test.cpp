// transport/whole_request.hpp: a request read in one pass when it arrived
// whole in the strict form. What it takes must be a subset of what Beast's
// parser takes, with Beast's result: every case, and thousands of mutations
// of them, are parsed both ways and compared.
#include "transport/whole_request.hpp"

#include <boost/asio/buffer.hpp>

#include "differential.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace http = boost::beast::http;
namespace tp = modelproxy::transport;

namespace {

constexpr std::size_t header_limit = 512;
constexpr std::uint64_t body_limit = 64;

struct BeastResult {
    bool ok = false;
    std::size_t used = 0;
    tp::RequestHead head;
    std::string body;
    bool chunked = false;
    std::optional<std::uint64_t> content_length;
};

// Beast's parser (the proxy's RequestParser, on basic_parser<true>) given
// all of `bytes` at once with the same limits.
BeastResult beast_parse(std::string_view bytes) {
    BeastResult r;
    tp::RequestParser parser(r.head, r.body);
    parser.eager(true);
    parser.header_limit(static_cast<std::uint32_t>(header_limit));
    parser.body_limit(body_limit);
    boost::system::error_code ec;
    while (!parser.is_done()) {
        const std::size_t n = parser.put(boost::asio::buffer(bytes.data() + r.used, bytes.size() - r.used), ec);
        if (ec) return r;
        r.used += n;
        if (n == 0) return r;
    }
    r.ok = true;
    r.chunked = parser.chunked();
    if (const auto length = parser.content_length()) r.content_length = *length;
    return r;
}

// Reads `bytes` both ways. When the one-pass reader takes the request,
// Beast must take the same bytes and see the same request. Returns whether
// the reader took it.
bool agrees_with_beast(std::string_view bytes) {
    tp::RequestHead head;
    std::string body = "left from the last request";
    const auto whole = tp::read_whole_request(bytes, header_limit, body_limit, head, body);
    if (!whole) {
        CHECK(head.size() == 0);
        CHECK(head.target().empty());
        CHECK(body.empty());
        return false;
    }
    const BeastResult beast = beast_parse(bytes);
    REQUIRE(beast.ok);
    CHECK(whole->size == beast.used);
    CHECK(whole->content_length == beast.content_length);
    CHECK_FALSE(beast.chunked);
    CHECK(head.method() == beast.head.method());
    CHECK(head.method_string() == beast.head.method_string());
    CHECK(head.target() == beast.head.target());
    CHECK(head.version() == beast.head.version());
    CHECK(body == beast.body);
    modelproxy::test::check_same_fields(head, beast.head);
    return true;
}

const std::string sdk_request =
    "POST /v1/chat/completions HTTP/1.1\r\n"
    "Host: 127.0.0.1:8080\r\n"
    "Content-Type: application/json\r\n"
    "Authorization: Bearer sk-client\r\n"
    "User-Agent: OpenAI/Python 1.40.0\r\n"
    "x-stainless-retry-count: 0\r\n"
    "Connection: keep-alive\r\n"
    "Content-Length: 23\r\n"
    "\r\n"
    "{\"model\":\"gpt-4o-mini\"}";

}  // namespace

TEST_CASE("an SDK's request is read in one pass, as Beast reads it", "[whole_request]") {
    CHECK(agrees_with_beast(sdk_request));
    tp::RequestHead head;
    std::string body;
    const auto whole = tp::read_whole_request(sdk_request, header_limit, body_limit, head, body);
    REQUIRE(whole);
    CHECK(whole->size == sdk_request.size());
    CHECK(whole->content_length == 23u);
    CHECK(head.method() == http::verb::post);
    CHECK(head.target() == "/v1/chat/completions");
    CHECK(head.size() == 7);
    CHECK(head.at(2).name() == http::field::authorization);
    CHECK(head.at(3).name() == http::field::unknown);  // User-Agent: not one the proxy switches on
    CHECK(head.at(4).name_string() == "x-stainless-retry-count");
    CHECK(body == "{\"model\":\"gpt-4o-mini\"}");
}

TEST_CASE("requests in the strict form are read in one pass, as Beast reads them", "[whole_request]") {
    const std::string at_head_limit = [] {
        std::string r = "GET / HTTP/1.1\r\nx-pad: ";
        r += std::string(header_limit - r.size() - 4, 'p');
        return r + "\r\n\r\n";
    }();
    REQUIRE(at_head_limit.size() == header_limit);
    for (const std::string& text : {
             std::string("GET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n"),
             std::string("GET /v1/models HTTP/1.1\r\n\r\n"),
             std::string("POST /v1/embeddings HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
             std::string("BREW /pot?x=1&y=%20 HTTP/1.1\r\nx-empty:\r\nx-ows: \t padded \t \r\n\r\n"),
             std::string("POST /v1/x HTTP/1.1\r\ncontent-length:  007 \r\n\r\n1234567"),
             std::string("POST /v1/x HTTP/1.1\r\nConnection: ,keep-alive , ,x-a\r\nProxy-Connection: close\r\n\r\n"),
             std::string("POST /v1/x HTTP/1.1\r\nConnection:\r\nContent-Length: 2\r\n\r\n{}GET /next HTTP/1.1\r\n\r\n"),
             std::string("POST /v1/x HTTP/1.1\r\nContent-Length: 64\r\n\r\n") + std::string(64, 'b'),
             std::string("OPTIONS * HTTP/1.1\r\nA: 1\r\na: 2\r\nA: 3\r\n\r\n"),
             at_head_limit,
         }) {
        INFO(text);
        CHECK(agrees_with_beast(text));
    }
}

TEST_CASE("requests outside the strict form are left to Beast", "[whole_request]") {
    const std::string over_head_limit = [] {
        std::string r = "GET / HTTP/1.1\r\nx-pad: ";
        r += std::string(header_limit - r.size() - 3, 'p');
        return r + "\r\n\r\n";
    }();
    for (const std::string& text : {
             std::string("GET / HTTP/1.0\r\n\r\n"),
             std::string("GET / http/1.1\r\n\r\n"),
             std::string("GET  / HTTP/1.1\r\n\r\n"),
             std::string("GET / HTTP/1.1 \r\n\r\n"),
             std::string("G(T / HTTP/1.1\r\n\r\n"),
             std::string("GET /\x80 HTTP/1.1\r\n\r\n"),
             std::string("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
             std::string("POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}"),
             std::string("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
             std::string("POST / HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n{}"),
             std::string("POST / HTTP/1.1\r\nContent-Length: +2\r\n\r\n{}"),
             std::string("POST / HTTP/1.1\r\nContent-Length: \r\n\r\n"),
             std::string("POST / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n"),
             std::string("POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n") + std::string(65, 'b'),
             std::string("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc"),
             std::string("GET / HTTP/1.1\r\nHost: h\r\n"),
             std::string("GET / HTTP/1.1\r\nx-a: 1\r\n folded\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nx-a: caf\xc3\xa9\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nx-a: a\x01z\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nx-a: a\x7fz\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nx-a: 1\n\r\n"),
             std::string("GET / HTTP/1.1\r\nx-a: 1\rz\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nx-a : 1\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\n: 1\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nConnection: keep-alive close\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nConnection: a;b\r\n\r\n"),
             over_head_limit,
         }) {
        INFO(text);
        CHECK_FALSE(agrees_with_beast(text));
    }
}

TEST_CASE("mutated requests: whatever is read in one pass, Beast reads the same", "[whole_request]") {
    // Byte mutations of requests in the form (differential.hpp): each mutant
    // the reader takes must be read the same by Beast; most are declined,
    // and some of those Beast takes.
    const std::vector<std::string> seeds = {
        sdk_request,
        "GET /v1/models HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        "POST /v1/x HTTP/1.1\r\nContent-Length: 3\r\nx-a: b\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
    };
    modelproxy::test::check_mutants(seeds, 20261201, agrees_with_beast);
}
