// transport/whole_answer.hpp: an upstream answer read in one pass when it
// arrived whole in the strict form. What it takes must be a subset of what
// Beast's parser (the proxy's AnswerParser) takes, with Beast's result:
// every case, and thousands of mutations of them, are parsed both ways and
// compared.
#include "transport/whole_answer.hpp"

#include <boost/asio/buffer.hpp>

#include "differential.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace http = boost::beast::http;
namespace tp = modelproxy::transport;

namespace {

constexpr std::size_t head_limit = 512;

struct BeastResult {
    bool ok = false;
    std::size_t used = 0;
    tp::AnswerHead head;
    std::string body;
    bool keep_alive = false;
    bool chunked = false;
    std::optional<std::uint64_t> content_length;
};

// The proxy's AnswerParser (Beast's basic_parser<false>) given all of
// `bytes` with the same head limit, as the exchange sets it up.
BeastResult beast_parse(std::string_view bytes) {
    BeastResult r;
    tp::BodyPiece piece;
    tp::SpillBuffer spill{4096};
    tp::AnswerParser parser(r.head, piece);
    parser.eager(true);
    parser.header_limit(static_cast<std::uint32_t>(head_limit));
    parser.body_limit(boost::none);
    boost::system::error_code ec;
    while (!parser.is_done()) {
        piece.start(spill);
        const std::size_t n = parser.put(boost::asio::buffer(bytes.data() + r.used, bytes.size() - r.used), ec);
        if (ec == http::error::need_buffer) ec = {};
        if (ec) return r;
        r.body.append(piece.piece);
        r.used += n;
        if (n == 0) return r;
    }
    r.ok = true;
    r.keep_alive = parser.keep_alive();
    r.chunked = parser.chunked();
    if (const auto length = parser.content_length()) r.content_length = *length;
    return r;
}

// Reads `bytes` both ways. When the one-pass reader takes the answer, Beast
// must take the same bytes and see the same answer. Returns whether the
// reader took it.
bool agrees_with_beast(std::string_view bytes) {
    tp::AnswerHead head;
    head.start(999, "left from the last answer", 10);
    const auto whole = tp::read_whole_answer(bytes, head_limit, head);
    if (!whole) {
        CHECK(head.size() == 0);
        CHECK(head.result_int() == 0);
        CHECK(head.reason().empty());
        return false;
    }
    const BeastResult beast = beast_parse(bytes);
    REQUIRE(beast.ok);
    CHECK(whole->head_size + whole->body_size == beast.used);
    CHECK(bytes.substr(whole->head_size, whole->body_size) == beast.body);
    CHECK(whole->keep_alive == beast.keep_alive);
    CHECK_FALSE(beast.chunked);
    CHECK(beast.content_length == whole->body_size);
    CHECK(head.result_int() == beast.head.result_int());
    CHECK(head.reason() == beast.head.reason());
    CHECK(head.version() == beast.head.version());
    modelproxy::test::check_same_fields(head, beast.head);
    return true;
}

const std::string provider_answer =
    "HTTP/1.1 200 OK\r\n"
    "Date: Tue, 01 Dec 2026 06:00:00 GMT\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 28\r\n"
    "Connection: keep-alive\r\n"
    "openai-processing-ms: 412\r\n"
    "x-ratelimit-remaining-requests: 9999\r\n"
    "\r\n"
    "{\"model\":\"gpt-4o-mini-2024\"}";

}  // namespace

TEST_CASE("a provider's answer is read in one pass, as Beast reads it", "[whole_answer]") {
    CHECK(agrees_with_beast(provider_answer));
    tp::AnswerHead head;
    const auto whole = tp::read_whole_answer(provider_answer, head_limit, head);
    REQUIRE(whole);
    CHECK(whole->body_size == 28);
    CHECK(whole->head_size + whole->body_size == provider_answer.size());
    CHECK(whole->keep_alive);
    CHECK(head.result_int() == 200);
    CHECK(head.reason() == "OK");
    CHECK(head.size() == 6);
    CHECK(head.at(1).name() == http::field::content_type);
    CHECK(head.at(4).name_string() == "openai-processing-ms");
}

TEST_CASE("answers in the strict form are read in one pass, as Beast reads them", "[whole_answer]") {
    for (const std::string& text : {
             std::string("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length: 2\r\n\r\n{}"),
             std::string("HTTP/1.1 500 \r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK \t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"),
             std::string("HTTP/1.1 503 Unavailable\r\nConnection: x-a, ,Close\r\ncontent-length: 01\r\n\r\nz"),
             std::string("HTTP/1.1 200 OK\r\nProxy-Connection: close\r\nContent-Length: 1\r\n\r\nzextra bytes after"),
             std::string("HTTP/1.1 201 Created\r\nx-empty:\r\nx-ows: \t a b \t\r\nContent-Length: 2\r\n\r\n{}"),
             std::string("HTTP/1.1 599 Odd\r\nA: 1\r\na: 2\r\nContent-Length: 0\r\n\r\n"),
         }) {
        INFO(text);
        CHECK(agrees_with_beast(text));
    }
}

TEST_CASE("answers outside the strict form are left to Beast", "[whole_answer]") {
    for (const std::string& text : {
             std::string("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
             std::string("HTTP/1.1 100 Continue\r\n\r\n"),
             std::string("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
             std::string("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\r\n\r\nread until the close"),
             std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc"),
             std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
             std::string("HTTP/1.1 200 OK\r\nContent-Length: 2,2\r\n\r\n{}"),
             std::string("HTTP/1.1 200 caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\r\nx-a: 1\r\n folded\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\r\nConnection: keep-alive close\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\r\nUpgrade: x\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"),
             std::string("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 600 OK\r\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"),
             std::string("HTTP/1.1 200 OK\r\nx-pad: ") + std::string(head_limit, 'p') + "\r\nContent-Length: 0\r\n\r\n",
         }) {
        INFO(text);
        CHECK_FALSE(agrees_with_beast(text));
    }
}

TEST_CASE("mutated answers: whatever is read in one pass, Beast reads the same", "[whole_answer]") {
    // As whole_request_test: each mutant the reader takes (differential.hpp)
    // must be read the same by Beast.
    const std::vector<std::string> seeds = {
        provider_answer,
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nx-a: b\r\n\r\nabcHTTP/1.1 200 OK\r\n\r\n",
    };
    modelproxy::test::check_mutants(seeds, 20261202, agrees_with_beast);
}

TEST_CASE("a status outside 100..599 is refused by both readers", "[whole_answer]") {
    // docs/behaviour.md section 4: a bad response (class network), never an answer.
    for (const std::string status : {"000", "099", "600", "999"}) {
        const std::string text = "HTTP/1.1 " + status + " Odd\r\nContent-Length: 2\r\n\r\n{}";
        INFO(text);
        CHECK_FALSE(agrees_with_beast(text));
        CHECK_FALSE(beast_parse(text).ok);
    }
    for (const std::string status : {"100", "599"}) {
        INFO(status);
        CHECK(beast_parse("HTTP/1.1 " + status + " Odd\r\nContent-Length: 0\r\n\r\n").ok);
    }
}
