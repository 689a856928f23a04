// transport/field_scan.hpp: the fields the proxy reads, found in one walk.
// Each answer must be what Beast's own lookup (find, operator[],
// message::keep_alive) gives for the same parsed head, so every case is
// checked against Beast as well as against the expected text. The heads are
// kept by the proxy's own parsers (answer_parser.hpp, request_parser.hpp),
// and what those keep of a request is checked against Beast's message too.
#include "transport/field_scan.hpp"
#include "transport/request_parser.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/string_body.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace http = boost::beast::http;
using modelproxy::transport::FieldValue;
using Fields = http::fields;
namespace scan = modelproxy::transport;

namespace {

template <bool isRequest>
using Parser = http::parser<isRequest, http::string_body>;

// Gives `parser` a whole message, which it must take.
template <bool isRequest>
void put_all(http::basic_parser<isRequest>& parser, std::string_view text) {
    parser.eager(true);
    boost::system::error_code ec;
    while (!text.empty() && !parser.is_done()) {
        const std::size_t n = parser.put(boost::asio::buffer(text.data(), text.size()), ec);
        REQUIRE(!ec);
        text.remove_prefix(n);
    }
    REQUIRE(parser.is_done());
}

// Parses a whole message with Beast's own parser, the reference (which
// computes each field's enum itself).
template <bool isRequest>
std::unique_ptr<Parser<isRequest>> parse(std::string_view text) {
    auto parser = std::make_unique<Parser<isRequest>>();
    put_all(*parser, text);
    return parser;
}

// Beast's parser given only a message's head: the reference for the head's
// fields, which a chunked body's trailer fields are not (Beast's message
// gets those too; the proxy's parser drops them, docs/behaviour.md section 4).
template <bool isRequest>
std::unique_ptr<Parser<isRequest>> parse_head(std::string_view text) {
    auto parser = std::make_unique<Parser<isRequest>>();
    boost::system::error_code ec;
    while (!text.empty() && !parser->is_header_done()) {
        const std::size_t n = parser->put(boost::asio::buffer(text.data(), text.size()), ec);
        REQUIRE((!ec || ec == http::error::need_more));
        text.remove_prefix(n);
    }
    REQUIRE(parser->is_header_done());
    return parser;
}

// Beast's answer: the first field of that name, found in its tree.
FieldValue beast_first(const Fields& fields, std::string_view name) {
    auto it = fields.find(name);
    if (it == fields.end()) return std::nullopt;
    return std::string_view(it->value());
}

std::optional<std::string> text(FieldValue v) { return v ? std::optional<std::string>(*v) : std::nullopt; }

// A client request parsed twice: by the proxy's own parser
// (request_parser.hpp), whose head scan_request reads, and by Beast's, the
// reference.
struct Request {
    scan::RequestHead head;
    std::string body = "the last request's bytes";  // the parser clears what it is given
    std::unique_ptr<Parser<true>> beast;       // the whole message
    std::unique_ptr<Parser<true>> beast_head;  // its head alone

    explicit Request(std::string_view text) : beast(parse<true>(text)), beast_head(parse_head<true>(text)) {
        scan::RequestParser parser(head, body);
        put_all(parser, text);
    }
};

// What the proxy's parser kept is Beast's message: method, target, version,
// every field of the head in order (name, value, and Beast's enum as the
// proxy keeps it: known_field), the body; and every value scan_request
// reports is Beast's lookup of the same name among the head's fields.
void check_request_against_beast(const Request& q) {
    const auto& m = q.beast_head->get();
    CHECK(q.head.method() == m.method());
    CHECK(q.head.method_string() == std::string_view(m.method_string()));
    CHECK(q.head.target() == std::string_view(m.target()));
    CHECK(q.head.version() == m.version());
    CHECK(q.body == q.beast->get().body());
    // The proxy keeps fields in arrival order; Beast's list puts a field
    // after the last one of the same name. Ours, in Beast's order:
    std::vector<scan::FlatFields::Field> grouped;
    for (const auto field : q.head) {
        auto at = grouped.end();
        for (auto it = grouped.begin(); it != grouped.end(); ++it)
            if (boost::beast::iequals(it->name_string(), field.name_string())) at = it + 1;
        grouped.insert(at, field);
    }
    std::size_t i = 0;
    for (const auto& field : m) {
        REQUIRE(i < grouped.size());
        const auto ours = grouped[i++];
        CHECK(ours.name() == scan::known_field(field.name()));
        CHECK(ours.name_string() == std::string_view(field.name_string()));
        CHECK(ours.value() == std::string_view(field.value()));
    }
    CHECK(i == grouped.size());

    const Fields& f = m;
    const scan::RequestFields r = scan::scan_request(q.head);
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
    CHECK(r.host_fields == std::min<std::size_t>(f.count("host"), 2));
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
        put_all(parser, text);
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

TEST_CASE("the names compared as strings are ones known_field leaves unknown", "[field_scan]") {
    // The scan compares name strings only for field::unknown: a name given
    // an enum would be missed.
    for (std::string_view name : {"x-request-id", "x-api-key", "x-modelproxy-timeout-ms", "x-stainless-timeout",
                                  "x-stainless-read-timeout", "retry-after-ms"}) {
        INFO(name);
        CHECK(http::string_to_field(name) == http::field::unknown);
        CHECK(scan::known_field(name) == http::field::unknown);
    }
    // Host too, which Beast knows: the scan counts it by its name string.
    CHECK(scan::known_field("Host") == http::field::unknown);
    CHECK(scan::known_field(http::field::host) == http::field::unknown);
}

TEST_CASE("known_field gives Beast's enum for the names the proxy reads and unknown for the rest", "[field_scan]") {
    // Every name Beast knows, in three cases: the string and Beast's enum
    // are classified alike, and a name keeps Beast's enum exactly when it is
    // one the proxy switches on.
    const std::vector<http::field> read = {
        http::field::expect,           http::field::upgrade,          http::field::connection,
        http::field::retry_after,      http::field::content_type,     http::field::authorization,
        http::field::content_length,   http::field::content_encoding, http::field::proxy_connection,
        http::field::transfer_encoding};
    int kept = 0;
    for (unsigned i = 1; i <= static_cast<unsigned>(http::field::xref); ++i) {
        const auto beast = static_cast<http::field>(i);
        const std::string lower(http::to_string(beast));
        std::string upper = lower, mixed = lower;
        for (std::size_t k = 0; k < lower.size(); ++k) {
            upper[k] = static_cast<char>(std::toupper(static_cast<unsigned char>(lower[k])));
            if (k % 2 == 0) mixed[k] = upper[k];
        }
        INFO(lower);
        const bool is_read = std::find(read.begin(), read.end(), beast) != read.end();
        const http::field want = is_read ? beast : http::field::unknown;
        CHECK(scan::known_field(beast) == want);
        for (const std::string& name : {lower, upper, mixed}) CHECK(scan::known_field(name) == want);
        if (is_read) ++kept;
    }
    CHECK(kept == static_cast<int>(read.size()));
    // Near misses: one byte off, a byte short or long, a byte that folds to
    // the right one only under a careless case fold ('\r' | 0x20 is '-').
    for (std::string_view name : {"content-lengtH ", "content-lengt", "contentlength", "content\rlength",
                                  "proxy-encoding", "content-connect", "", "x", "connectioN2", "upgradE\r"}) {
        INFO(name);
        CHECK(scan::known_field(name) == http::field::unknown);
    }
    CHECK(scan::known_field(http::field::unknown) == http::field::unknown);
}

TEST_CASE("a request's repeated fields answer with the first, as Beast's find does", "[field_scan]") {
    const Request q(
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
    const scan::RequestFields r = scan::scan_request(q.head);
    CHECK(text(r.content_type) == "application/json");
    CHECK(text(r.x_request_id) == "first-id");
    CHECK(text(r.authorization) == "Bearer one");
    CHECK(text(r.connection) == "keep-alive");
    CHECK(r.connection_repeated);
    CHECK_FALSE(r.transfer_encoding);
    check_request_against_beast(q);
}

TEST_CASE("unknown request names match in any case", "[field_scan]") {
    const Request q(
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
    const scan::RequestFields r = scan::scan_request(q.head);
    CHECK(text(r.x_request_id) == "shouted");
    CHECK(text(r.x_api_key) == "sk-odd");
    CHECK(text(r.x_modelproxy_timeout_ms) == "1500");
    CHECK(text(r.x_stainless_timeout) == "30");
    CHECK(text(r.x_stainless_read_timeout) == "20");
    CHECK(text(r.expect) == "100-continue");
    CHECK(text(r.content_encoding) == "gzip");
    CHECK(r.transfer_encoding);
    check_request_against_beast(q);
}

TEST_CASE("an absent field is none and an empty one is an empty value", "[field_scan]") {
    const Request q(
        "GET /v1/models HTTP/1.1\r\n"
        "x-request-id:\r\n"
        "Content-Type: \r\n"
        "x-requests-id: not-this-one\r\n"
        "x-request-i: nor-this\r\n"
        "Host: example\r\n"
        "\r\n");
    const scan::RequestFields r = scan::scan_request(q.head);
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
    check_request_against_beast(q);
}

TEST_CASE("a chunked body's trailer fields are dropped: a scan after the body sees the head's alone",
          "[field_scan]") {
    // docs/behaviour.md section 4: a trailer cannot authenticate, route, set a deadline
    // or change how the body is read; the parser keeps none.
    const Request q(
        "POST /v1/chat/completions HTTP/1.1\r\n"
        "Transfer-Encoding: chunked\r\n"
        "x-request-id: from-head\r\n"
        "\r\n"
        "2\r\n{}\r\n0\r\n"
        "X-Request-Id: from-trailer\r\n"
        "Authorization: Bearer from-trailer\r\n"
        "x-modelproxy-timeout-ms: 1\r\n"
        "Connection: close\r\n"
        "\r\n");
    const scan::RequestFields r = scan::scan_request(q.head);
    CHECK(q.head.size() == 2);
    CHECK(text(r.x_request_id) == "from-head");
    CHECK_FALSE(r.authorization);
    CHECK_FALSE(r.x_modelproxy_timeout_ms);
    CHECK_FALSE(r.connection_close);
    CHECK(q.body == "{}");
    check_request_against_beast(q);
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

TEST_CASE("keep_alive reads every Connection field, and never keeps an HTTP/1.0 connection", "[field_scan]") {
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
        {"1.1", "Connection: keep-alive\r\nConnection: close\r\n", false},  // any field counts
        {"1.1", "Connection: keep-alive\r\nconnection: x-a ,\tclose \r\n", false},
        {"1.1", "Connection: keep-alive\r\nConnection: x-close\r\n", true},
        {"1.1", "Connection: closed\r\n", true},
        {"1.0", "", false},
        {"1.0", "Connection: Keep-Alive\r\n", false},  // HTTP/1.0 terms: one request per connection
        {"1.0", "Connection: close\r\n", false},
    };
    for (const Case& c : cases) {
        const std::string head =
            "GET / HTTP/" + std::string(c.version) + "\r\n" + std::string(c.connection_lines) + "\r\n";
        INFO(head);
        const Request q(head);
        const bool ours = scan::keep_alive(q.head.version(), scan::scan_request(q.head));
        CHECK(ours == c.expected);
        // Beast's parser reads every Connection field as well (its message's
        // keep_alive() reads only the first).
        if (c.version == "1.1") CHECK(ours == q.beast->keep_alive());
    }
}

TEST_CASE("scan_request counts Host fields up to two", "[field_scan]") {
    CHECK(scan::scan_request(Request("GET / HTTP/1.1\r\n\r\n").head).host_fields == 0);
    CHECK(scan::scan_request(Request("GET / HTTP/1.1\r\nhOsT: a\r\n\r\n").head).host_fields == 1);
    CHECK(scan::scan_request(Request("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\nHOST: b\r\n\r\n").head).host_fields ==
          2);
    CHECK(scan::scan_request(Request("GET / HTTP/1.1\r\nHosts: a\r\nx-host: b\r\n\r\n").head).host_fields == 0);
}

TEST_CASE("a request as the proxy's parser keeps it is Beast's message", "[field_scan]") {
    for (std::string_view text : {
             std::string_view("POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"),
             std::string_view("BREW /pot HTTP/1.0\r\nx-odd:   padded value \t \r\nx-empty:\r\n\r\n"),
             std::string_view("GET http://example.com/v1/models HTTP/1.1\r\nHost: example.com\r\n\r\n"),
             std::string_view("POST /v1/embeddings HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "3;ext=1\r\nabc\r\n4\r\ndefg\r\n0\r\nx-trailer: t\r\n\r\n"),
             std::string_view("DELETE /v1/files/f HTTP/1.1\r\nA: 1\r\na: 2\r\nA: 3\r\n\r\n"),
         }) {
        INFO(text);
        const Request q(text);
        check_request_against_beast(q);
    }
}

TEST_CASE("a request parser given a used head and body keeps none of the last request", "[field_scan]") {
    scan::RequestHead head;
    std::string body;
    const auto parse_into = [&](std::string_view text) {
        scan::RequestParser parser(head, body);
        put_all(parser, text);
    };
    parse_into("POST /first HTTP/1.1\r\nx-request-id: one\r\nContent-Length: 3\r\n\r\nabc");
    parse_into("GET /second HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(head.method() == http::verb::get);
    CHECK(head.target() == "/second");
    REQUIRE(head.size() == 1);
    CHECK(head.at(0).name_string() == "Host");
    CHECK(body.empty());
    CHECK_FALSE(scan::scan_request(head).x_request_id.has_value());
}
