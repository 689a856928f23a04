// Assertions several integration tests share. Header-only: it uses Catch2's
// macros, which belong to the test executable, not to mp_test_support.
#pragma once

#include "support/http_client.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace modelproxy::test {

// The "error" object of a section 9 envelope; fails the test unless the body
// is one.
inline boost::json::object envelope_error(const Response& r) {
    CAPTURE(r.body);
    boost::json::error_code ec;
    const boost::json::value doc = boost::json::parse(r.body, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(doc.is_object());
    REQUIRE(doc.as_object().contains("error"));
    REQUIRE(doc.at("error").is_object());
    return doc.at("error").as_object();
}

// Reads a streamed body after its head until `needle` has arrived; returns
// everything read so far (the head's body included). Fails the test on an
// error, an early end or a timeout of one read.
inline std::string read_body_until(HttpClient& client, std::string body, std::string_view needle,
                                   std::chrono::milliseconds timeout) {
    while (body.find(needle) == std::string::npos) {
        const RawRead more = client.read_body_some(timeout);
        REQUIRE_FALSE(more.error);
        REQUIRE_FALSE(more.bytes.empty());
        body += more.bytes;
    }
    return body;
}

// The JSON object of the last `data:` line of a streamed body; fails the
// test unless there is one and it is an object.
inline boost::json::object last_data(const std::string& body) {
    CAPTURE(body);
    const auto at = body.rfind("data: ");
    REQUIRE(at != std::string::npos);
    const auto end = body.find('\n', at);
    const std::string line = body.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
    boost::json::error_code ec;
    const boost::json::value doc = boost::json::parse(line, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(doc.is_object());
    return doc.as_object();
}

}  // namespace modelproxy::test
