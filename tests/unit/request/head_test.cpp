// request/head.hpp: what a request head's framing alone decides.
#include "request/head.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

using namespace modelproxy;
using namespace modelproxy::request;

TEST_CASE("acceptable_request_encoding accepts only identity", "[head]") {
    CHECK(acceptable_request_encoding(""));
    CHECK(acceptable_request_encoding("identity"));
    CHECK(acceptable_request_encoding(" Identity "));
    CHECK_FALSE(acceptable_request_encoding("gzip"));
    CHECK_FALSE(acceptable_request_encoding("deflate"));
    CHECK_FALSE(acceptable_request_encoding("identity, gzip"));
}

TEST_CASE("check_request_head: what the head alone refuses, and 100 Continue", "[head]") {
    constexpr std::uint64_t max = 1000;
    const auto head = [](bool te, bool chunked, std::optional<std::uint64_t> length, std::string_view encoding,
                         std::string_view expect) {
        RequestHead h;
        h.method = "POST";
        h.transfer_encoding = te;
        h.chunked = chunked;
        h.content_length = length;
        h.content_encoding = encoding;
        h.expect = expect;
        return h;
    };
    using E = ClientError;
    struct Row {
        RequestHead head;
        std::optional<ClientError> refusal;
        bool send_continue;
    };
    const std::vector<Row> rows{
        {head(false, false, std::nullopt, "", ""), std::nullopt, false},
        {head(false, false, 1000, "identity", ""), std::nullopt, false},  // the limit itself is allowed
        {head(true, true, std::nullopt, "", ""), std::nullopt, false},    // chunked
        {head(true, false, std::nullopt, "", ""), E::bad_request, false},  // gzip alone: length unknown
        {head(false, false, 1001, "", ""), E::payload_too_large, false},
        {head(false, false, 10, "gzip", ""), E::unsupported_content_encoding, false},
        {head(false, false, 10, "", "100-continue"), std::nullopt, true},
        {head(false, false, 10, "", "100-Continue"), std::nullopt, true},
        {head(false, false, 10, "", "200-ok"), std::nullopt, false},
        // Refusals first: a refused head is never told to go on.
        {head(false, false, 1001, "", "100-continue"), E::payload_too_large, false},
        {head(true, false, std::nullopt, "gzip", "100-continue"), E::bad_request, false},
        {head(false, false, 1001, "gzip", ""), E::payload_too_large, false},
    };
    for (const Row& row : rows) {
        CAPTURE(row.head.transfer_encoding, row.head.chunked, row.head.content_length.value_or(0),
                row.head.content_encoding, row.head.expect);
        const HeadCheck check = check_request_head(row.head, max);
        CHECK(check.refusal == row.refusal);
        CHECK(check.send_continue == row.send_continue);
    }
}

TEST_CASE("check_request_head: strict framing of method, Host and HTTP/1.0", "[head]") {
    using E = ClientError;
    auto [method, version, hosts, te, expect, refusal, send_continue] =
        GENERATE(table<std::string, unsigned, unsigned, bool, std::string, std::optional<ClientError>, bool>({
            {"POST", 11, 1, false, "", std::nullopt, false},
            {"M-SEARCH", 11, 1, false, "", std::nullopt, false},
            {"BREW_X", 11, 1, false, "", std::nullopt, false},
            {"post", 11, 1, false, "", E::bad_request, false},  // methods are case-sensitive
            {"Post", 11, 1, false, "", E::bad_request, false},
            {"GEt", 11, 1, false, "", E::bad_request, false},
            {"P0ST", 11, 1, false, "", E::bad_request, false},
            {"", 11, 1, false, "", E::bad_request, false},
            {"POST", 11, 0, false, "", E::bad_request, false},  // HTTP/1.1 needs one Host
            {"POST", 11, 2, false, "", E::bad_request, false},
            {"POST", 10, 0, false, "", std::nullopt, false},  // HTTP/1.0 may go without
            {"POST", 10, 2, false, "", E::bad_request, false},
            {"POST", 10, 1, true, "", E::bad_request, false},  // no Transfer-Encoding in HTTP/1.0
            {"POST", 10, 1, false, "100-continue", std::nullopt, false},  // nor 100 Continue
            {"POST", 11, 1, false, "100-continue", std::nullopt, true},
            {"post", 11, 1, false, "100-continue", E::bad_request, false},
        }));
    RequestHead head;
    head.method = method;
    head.version = version;
    head.host_fields = hosts;
    head.transfer_encoding = te;
    head.chunked = te;
    head.content_length = te ? std::nullopt : std::optional<std::uint64_t>(10);
    head.expect = expect;
    CAPTURE(method, version, hosts, te, expect);
    const HeadCheck check = check_request_head(head, 1000);
    CHECK(check.refusal == refusal);
    CHECK(check.send_continue == send_continue);
}
