// transport/piece_body.hpp through transport/parse_step.hpp, the way
// Exchange::read_body uses them: an answer's buffered body bytes are given as
// a view where they lie when they are one piece, and joined in the spill
// buffer when a read holds several (chunked). Either way each read's piece is
// exactly the next body bytes, and the pieces add up to the whole body. And
// the answer's head as AnswerParser keeps it (transport/answer_parser.hpp).
#include "transport/parse_step.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace http = boost::beast::http;
using modelproxy::transport::parse_head;
using modelproxy::transport::put_buffered;
using modelproxy::transport::ResponseParser;

namespace {

struct Answer {
    boost::beast::flat_buffer buffer;
    modelproxy::transport::AnswerHead head;
    modelproxy::transport::BodyPiece body;
    ResponseParser parser{head, body};
    modelproxy::transport::SpillBuffer spill;

    // A spill limit of 64 by default: small, so the full case is reachable.
    explicit Answer(std::string_view wire, std::size_t spill_limit = 64) : spill(spill_limit) {
        auto room = buffer.prepare(wire.size());
        std::memcpy(room.data(), wire.data(), wire.size());
        buffer.commit(wire.size());
        boost::system::error_code ec;
        std::size_t consumed = 0;
        REQUIRE(parse_head(parser, buffer, consumed, 8192, ec));
        REQUIRE(!ec);
        REQUIRE(parser.is_header_done());
    }
    // Not copied: the view points outside the spill (into the read buffer).
    bool lies_in_buffer(std::string_view piece) const {
        return spill.made() == nullptr || piece.data() < spill.made() ||
               piece.data() >= spill.made() + spill.capacity();
    }
    // One read_body's worth: what put_buffered gives before a read is needed.
    std::string_view next(bool& gave) {
        parser.body().start(spill);
        boost::system::error_code ec;
        gave = put_buffered(parser, buffer, ec);
        REQUIRE(!ec);
        return parser.body().piece;
    }
};

}  // namespace

TEST_CASE("an identity body is given where it lies, without a copy", "[transport][piece_body]") {
    const std::string body(200, 'x');
    Answer a("HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n" + body);
    bool gave = false;
    const std::string_view piece = a.next(gave);
    CHECK(gave);
    CHECK(piece == body);
    CHECK(a.lies_in_buffer(piece));  // 200 bytes would not fit the 64-byte spill anyway
    CHECK(a.parser.is_done());
}

TEST_CASE("one chunk in a read is a view, several are joined in order", "[transport][piece_body]") {
    SECTION("one chunk") {
        Answer a("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
        bool gave = false;
        const std::string_view piece = a.next(gave);
        CHECK(gave);
        CHECK(piece == "hello");
        CHECK(a.lies_in_buffer(piece));
        CHECK(!a.parser.is_done());
    }
    SECTION("three chunks and the end") {
        Answer a("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n");
        bool gave = false;
        const std::string_view piece = a.next(gave);
        CHECK(gave);
        CHECK(piece == "hello world");
        CHECK(piece.data() == a.spill.made());
        CHECK(a.parser.is_done());
    }
}

TEST_CASE("a full spill stops the read, the rest comes with the next", "[transport][piece_body]") {
    // 10 chunks of 10 bytes: the spill takes 64, the next read gives the rest.
    std::string wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string body;
    for (int i = 0; i < 10; ++i) {
        const std::string chunk(10, static_cast<char>('a' + i));
        wire += "a\r\n" + chunk + "\r\n";
        body += chunk;
    }
    wire += "0\r\n\r\n";
    Answer a(wire);
    std::string got;
    int reads = 0;
    while (!a.parser.is_done()) {
        bool gave = false;
        const std::string_view piece = a.next(gave);
        REQUIRE(gave);
        CHECK(piece.size() <= a.spill.limit());
        got.append(piece);
        REQUIRE(++reads < 10);
    }
    CHECK(got == body);
    CHECK(reads == 2);
}

TEST_CASE("a first piece larger than the spill is not joined with a second", "[transport][piece_body]") {
    const std::string big(100, 'b');
    Answer a("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" + big + "\r\n3\r\nend\r\n0\r\n\r\n");
    bool gave = false;
    std::string_view piece = a.next(gave);
    CHECK(gave);
    CHECK(piece == big);
    CHECK(a.lies_in_buffer(piece));
    piece = a.next(gave);
    CHECK(gave);
    CHECK(piece == "end");
    CHECK(a.parser.is_done());
}

TEST_CASE("no body bytes buffered: a read is needed", "[transport][piece_body]") {
    Answer a("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
    bool gave = true;
    const std::string_view piece = a.next(gave);
    CHECK(!gave);
    CHECK(piece.empty());
}

TEST_CASE("the answer's head keeps its status, reason and every field in arrival order, and no trailer",
          "[transport][answer]") {
    Answer a("HTTP/1.1 429 Slow Down\r\nContent-Type: application/json\r\nX-Many: 1\r\nretry-after-ms: 250\r\n"
             "x-many: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Trailer: end\r\n\r\n");
    const auto& head = a.parser.head();
    CHECK(head.result_int() == 429);
    CHECK(head.reason() == "Slow Down");
    CHECK(head.version() == 11);
    std::vector<std::pair<std::string, std::string>> seen;
    for (const auto& field : head) seen.emplace_back(field.name_string(), field.value());
    CHECK(seen == std::vector<std::pair<std::string, std::string>>{{"Content-Type", "application/json"},
                                                                  {"X-Many", "1"},
                                                                  {"retry-after-ms", "250"},
                                                                  {"x-many", "2"},
                                                                  {"Transfer-Encoding", "chunked"}});
    CHECK(head.at(0).name() == http::field::content_type);
    CHECK(head.at(1).name() == http::field::unknown);
    const auto fields = modelproxy::transport::scan_response(head);
    CHECK(fields.content_type == "application/json");
    CHECK(fields.retry_after_ms == "250");
    CHECK_FALSE(fields.retry_after);
    // The body; its trailer is parsed and dropped (docs/behaviour.md section 4: never
    // merged into the head), so the head's fields stay as they were.
    bool gave = false;
    CHECK(a.next(gave) == "{}");
    while (!a.parser.is_done()) {
        a.next(gave);
        if (!gave) break;
    }
    REQUIRE(a.parser.is_done());
    std::vector<std::pair<std::string, std::string>> after;
    for (const auto& field : head) after.emplace_back(field.name_string(), field.value());
    CHECK(after == seen);
    CHECK(a.parser.keep_alive());
}

TEST_CASE("an answer's head with no reason phrase has an empty reason", "[transport][answer]") {
    Answer a("HTTP/1.1 200 \r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    CHECK(a.parser.head().result_int() == 200);
    CHECK(a.parser.head().reason().empty());
    CHECK_FALSE(a.parser.keep_alive());
}

TEST_CASE("the spill holds what the joined pieces need and grows, keeping what it joined", "[transport][piece_body]") {
    // Chunks of 300 bytes in one read: joined into memory of 1 KiB at first,
    // grown (the bytes joined so far kept) up to the 4 KiB limit, the rest
    // the next read.
    std::string wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string body;
    for (int i = 0; i < 20; ++i) {
        const std::string chunk(300, static_cast<char>('a' + i));
        wire += "12c\r\n" + chunk + "\r\n";
        body += chunk;
    }
    wire += "0\r\n\r\n";
    Answer a(wire, 4096);
    std::string got;
    std::vector<std::size_t> pieces;
    while (!a.parser.is_done()) {
        bool gave = false;
        const std::string_view piece = a.next(gave);
        REQUIRE(gave);
        got.append(piece);
        pieces.push_back(piece.size());
        REQUIRE(pieces.size() < 10);
    }
    CHECK(got == body);
    CHECK(pieces.front() == 4096);  // the limit, reached by growing
    CHECK(a.spill.capacity() == 4096);
    // Two small pieces take the least it makes, 1 KiB.
    Answer b("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 65536);
    bool gave = false;
    CHECK(b.next(gave) == "hello world");
    CHECK(gave);
    CHECK(b.spill.capacity() == 1024);
}
