// transport/field_scan.hpp: the fields the proxy reads, found in one walk.
// Each answer must be what Beast's own lookup (find, operator[],
// message::keep_alive) gives for the same parsed head, so every case is
// checked against Beast as well as against the expected text (an answer's
// head as the proxy's own parser keeps it, answer_parser.hpp).
#include "transport/field_scan.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace http = boost::beast::http;
using modelproxy::transport::FieldValue;
using modelproxy::transport::Fields;
using modelproxy::transport::RecyclingAllocator;
namespace scan = modelproxy::transport;

namespace {

template <bool isRequest>
using Parser = http::parser<isRequest, http::string_body, RecyclingAllocator<char>>;

// Parses a whole message as the proxy's parsers do (so Beast computes each
// field's enum itself).
template <bool isRequest>
std::unique_ptr<Parser<isRequest>> parse(std::string_view text) {
    auto parser = std::make_unique<Parser<isRequest>>();
    parser->eager(true);
    boost::system::error_code ec;
    while (!text.empty() && !parser->is_done()) {
        const std::size_t n = parser->put(boost::asio::buffer(text.data(), text.size()), ec);
        REQUIRE(!ec);
        text.remove_prefix(n);
    }
    REQUIRE(parser->is_done());
    return parser;
}

// Beast's answer: the first field of that name, found in its tree.
FieldValue beast_first(const Fields& fields, std::string_view name) {
    auto it = fields.find(name);
    if (it == fields.end()) return std::nullopt;
    return std::string_view(it->value());
}

std::optional<std::string> text(FieldValue v) { return v ? std::optional<std::string>(*v) : std::nullopt; }

// Every value scan_request reports, compared with Beast's lookup of the same name.
void check_request_against_beast(const Fields& f) {
    const scan::RequestFields r = scan::scan_request(f);
    CHECK(text(r.content_type) == text(beast_first(f, "content-type")));
    CHECK(text(r.content_encoding) == text(beast_first(f, "content-encoding")));
    CHECK(text(r.expect) == text(beast_first(f, "expect")));
    CHECK(text(r.connection) == text(beast_first(f, "connection")));
    CHECK(text(r.authorization) == text(beast_first(f, "authorization")));
    CHECK(text(r.x_api_key) == text(beast_first(f, "x-api-key")));
    CHECK(text(r.x_request_id) == text(beast_first(f, "x-request-id")));
    CHECK(text(r.x_modelproxy_timeout_ms) == text(beast_first(f, "x-modelproxy-timeout-ms")));
    CHECK(text(r.x_stainless_timeout) == text(beast_first(f, "x-stainless-timeout")));
    CHECK(text(r.x_stainless_read_timeout) == text(beast_first(f, "x-stainless-read-timeout")));
    CHECK(r.transfer_encoding == (f.count("transfer-encoding") != 0));
    CHECK(r.connection_repeated == (f.count("connection") > 1));
}

// An upstream answer parsed twice: by the proxy's own parser
// (answer_parser.hpp), whose head scan_response reads, and by Beast's, the
// reference.
struct Answer {
    scan::AnswerHead head;
    scan::BodyPiece body;
    std::unique_ptr<Parser<false>> beast;

    explicit Answer(std::string_view text) : beast(parse<false>(text)) {
        scan::AnswerParser parser(head, body);
        parser.eager(true);
        boost::system::error_code ec;
        while (!text.empty() && !parser.is_done()) {
            const std::size_t n = parser.put(boost::asio::buffer(text.data(), text.size()), ec);
            REQUIRE(!ec);
            text.remove_prefix(n);
        }
        REQUIRE(parser.is_done());
    }
};

void check_response_against_beast(const Answer& a) {
    const Fields& f = a.beast->get();
    const scan::ResponseFields r = scan::scan_response(a.head);
    CHECK(text(r.content_type) == text(beast_first(f, "content-type")));
    CHECK(text(r.content_encoding) == text(beast_first(f, "content-encoding")));
    CHECK(text(r.connection) == text(beast_first(f, "connection")));
    CHECK(text(r.retry_after) == text(beast_first(f, "retry-after")));
    CHECK(text(r.retry_after_ms) == text(beast_first(f, "retry-after-ms")));
}

}  // namespace

TEST_CASE("the names compared as strings are ones Beast has no enum for", "[field_scan]") {
    // The scan compares name strings only for field::unknown: a name Beast
    // knew would be missed.
    for (std::string_view name : {"x-request-id", "x-api-key", "x-modelproxy-timeout-ms", "x-stainless-timeout",
                                  "x-stainless-read-timeout", "retry-after-ms"}) {
        INFO(name);
        CHECK(http::string_to_field(name) == http::field::unknown);
    }
}

TEST_CASE("a request's repeated fields answer with the first, as Beast's find does", "[field_scan]") {
    auto p = parse<true>(
        "POST /v1/chat/completions HTTP/1.1\r\n"
        "Content-Type: application/json\r\n"
        "x-request-id: first-id\r\n"
        "Authorization: Bearer one\r\n"
        "content-type: text/plain\r\n"
        "X-Request-Id: second-id\r\n"
        "authorization: Bearer two\r\n"
        "Connection: keep-alive\r\n"
        "connection: upgrade\r\n"
        "Content-Length: 2\r\n"
        "\r\n{}");
    const Fields& f = p->get();
    const scan::RequestFields r = scan::scan_request(f);
    CHECK(text(r.content_type) == "application/json");
    CHECK(text(r.x_request_id) == "first-id");
    CHECK(text(r.authorization) == "Bearer one");
    CHECK(text(r.connection) == "keep-alive");
    CHECK(r.connection_repeated);
    CHECK_FALSE(r.transfer_encoding);
    check_request_against_beast(f);
}

TEST_CASE("unknown request names match in any case", "[field_scan]") {
    auto p = parse<true>(
        "POST /v1/responses HTTP/1.1\r\n"
        "X-REQUEST-ID: shouted\r\n"
        "x-Api-Key: sk-odd\r\n"
        "X-ModelProxy-Timeout-MS: 1500\r\n"
        "X-Stainless-TIMEOUT: 30\r\n"
        "x-stainless-READ-timeout: 20\r\n"
        "EXPECT: 100-continue\r\n"
        "content-ENCODING: gzip\r\n"
        "Transfer-Encoding: chunked\r\n"
        "\r\n0\r\n\r\n");
    const Fields& f = p->get();
    const scan::RequestFields r = scan::scan_request(f);
    CHECK(text(r.x_request_id) == "shouted");
    CHECK(text(r.x_api_key) == "sk-odd");
    CHECK(text(r.x_modelproxy_timeout_ms) == "1500");
    CHECK(text(r.x_stainless_timeout) == "30");
    CHECK(text(r.x_stainless_read_timeout) == "20");
    CHECK(text(r.expect) == "100-continue");
    CHECK(text(r.content_encoding) == "gzip");
    CHECK(r.transfer_encoding);
    check_request_against_beast(f);
}

TEST_CASE("an absent field is none and an empty one is an empty value", "[field_scan]") {
    auto p = parse<true>(
        "GET /v1/models HTTP/1.1\r\n"
        "x-request-id:\r\n"
        "Content-Type: \r\n"
        "x-requests-id: not-this-one\r\n"
        "x-request-i: nor-this\r\n"
        "Host: example\r\n"
        "\r\n");
    const Fields& f = p->get();
    const scan::RequestFields r = scan::scan_request(f);
    REQUIRE(r.x_request_id.has_value());
    CHECK(r.x_request_id->empty());
    REQUIRE(r.content_type.has_value());
    CHECK(r.content_type->empty());
    CHECK_FALSE(r.authorization.has_value());
    CHECK_FALSE(r.x_api_key.has_value());
    CHECK_FALSE(r.expect.has_value());
    CHECK_FALSE(r.connection.has_value());
    CHECK_FALSE(r.connection_repeated);
    CHECK_FALSE(r.transfer_encoding);
    check_request_against_beast(f);
}

TEST_CASE("a chunked body's trailer fields are seen by a scan made after the body", "[field_scan]") {
    // Why prepare() and the upstream exchange scan again after a chunked
    // body: Beast adds trailers to the head's fields, and a lookup made after
    // the body (as before the scan existed) finds them.
    auto p = parse<true>(
        "POST /v1/chat/completions HTTP/1.1\r\n"
        "Transfer-Encoding: chunked\r\n"
        "\r\n"
        "2\r\n{}\r\n0\r\n"
        "X-Request-Id: from-trailer\r\n"
        "\r\n");
    const scan::RequestFields r = scan::scan_request(p->get());
    CHECK(text(r.x_request_id) == "from-trailer");
    check_request_against_beast(p->get());
}

TEST_CASE("an upstream answer's fields: first of repeats, odd case, absent, empty", "[field_scan]") {
    const Answer a(
        "HTTP/1.1 429 Too Many Requests\r\n"
        "Content-Type: application/json\r\n"
        "Retry-After-MS: 250\r\n"
        "retry-after: 3\r\n"
        "RETRY-AFTER-MS: 900\r\n"
        "Retry-After: 7\r\n"
        "content-type: text/html\r\n"
        "Content-Encoding:\r\n"
        "Content-Length: 2\r\n"
        "\r\n{}");
    const scan::ResponseFields r = scan::scan_response(a.head);
    CHECK(text(r.content_type) == "application/json");
    CHECK(text(r.retry_after_ms) == "250");
    CHECK(text(r.retry_after) == "3");
    REQUIRE(r.content_encoding.has_value());
    CHECK(r.content_encoding->empty());
    CHECK_FALSE(r.connection.has_value());
    check_response_against_beast(a);
}

TEST_CASE("an upstream answer's Connection: the first field", "[field_scan]") {
    const Answer a(
        "HTTP/1.1 200 OK\r\n"
        "connection: x-trace\r\n"
        "Connection: close\r\n"
        "Content-Length: 0\r\n"
        "\r\n");
    CHECK(text(scan::scan_response(a.head).connection) == "x-trace");
    check_response_against_beast(a);
}

TEST_CASE("keep_alive follows Beast's rule on the first Connection field", "[field_scan]") {
    struct Case {
        std::string_view version;
        std::string_view connection_lines;
        bool expected;
    };
    const Case cases[] = {
        {"1.1", "", true},
        {"1.1", "Connection: close\r\n", false},
        {"1.1", "Connection: CLOSE\r\n", false},
        {"1.1", "Connection: upgrade, Close\r\n", false},
        {"1.1", "Connection: keep-alive\r\nConnection: close\r\n", true},  // only the first counts
        {"1.1", "Connection: closed\r\n", true},
        {"1.0", "", false},
        {"1.0", "Connection: Keep-Alive\r\n", true},
        {"1.0", "Connection: x-a, keep-alive\r\n", true},
        {"1.0", "Connection: close\r\n", false},
        {"1.0", "Connection: close\r\nConnection: keep-alive\r\n", false},
    };
    for (const Case& c : cases) {
        const std::string head =
            "GET / HTTP/" + std::string(c.version) + "\r\n" + std::string(c.connection_lines) + "\r\n";
        INFO(head);
        auto p = parse<true>(head);
        const auto& req = p->get();
        const bool ours = scan::keep_alive(req.version(), scan::scan_request(req).connection);
        CHECK(ours == c.expected);
        CHECK(ours == req.keep_alive());
    }
}
