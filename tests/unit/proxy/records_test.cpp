#include "proxy/records.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

using namespace modelproxy::proxy;

TEST_CASE("an attempt record is one JSON line with every section 10 field", "[records]") {
    AttemptRecord r;
    r.request_id = "req-1";
    r.route = "openai";
    r.model = "fast";
    r.attempt = 2;
    r.status = 503;
    r.error_class = "server";
    r.rule = "http-5xx";
    r.decision = "retry";
    r.delay_ms = 1000;
    r.remaining_ms = 298000;
    r.digest = "sha256:ab";
    const std::string line = to_json_line(r);
    REQUIRE(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);
    auto o = boost::json::parse(line).as_object();
    CHECK(o.at("event") == "attempt");
    CHECK(o.at("request_id") == "req-1");
    CHECK(o.at("route") == "openai");
    CHECK(o.at("model") == "fast");
    CHECK(o.at("attempt") == 2);
    CHECK(o.at("status") == 503);
    CHECK(o.at("class") == "server");
    CHECK(o.at("code").is_null());
    CHECK(o.at("timeout_source").is_null());
    CHECK(o.at("rule") == "http-5xx");
    CHECK(o.at("decision") == "retry");
    CHECK(o.at("delay_ms") == 1000);
    CHECK(o.at("remaining_ms") == 298000);
    CHECK(o.at("digest") == "sha256:ab");
    CHECK(o.at("candidate") == 0);
    CHECK(o.at("resume_offset").is_null());
    CHECK(o.size() == 16);
}

TEST_CASE("a turn record counts provider_retries from attempts", "[records]") {
    TurnRecord r;
    r.request_id = "req-2";
    r.attempts = 3;
    r.outcome = "ok";
    r.status = 200;
    r.stream = true;
    r.published = true;
    r.ttft_ms = 12;
    auto o = boost::json::parse(to_json_line(r)).as_object();
    CHECK(o.at("event") == "turn");
    CHECK(o.at("attempts") == 3);
    CHECK(o.at("provider_retries") == 2);
    CHECK(o.at("outcome") == "ok");
    CHECK(o.at("route").is_null());
    CHECK(o.at("fallback_from").is_null());
    CHECK(o.at("stream") == true);
    CHECK(o.at("published") == true);
    CHECK(o.at("ttft_ms") == 12);
    CHECK(o.at("resumed") == 0);
    CHECK(o.size() == 17);
}

TEST_CASE("a turn with no attempt has zero provider_retries", "[records]") {
    TurnRecord r;
    r.outcome = "rejected";
    auto o = boost::json::parse(to_json_line(r)).as_object();
    CHECK(o.at("provider_retries") == 0);
    CHECK(o.at("ttft_ms").is_null());
}

TEST_CASE("record strings are JSON-escaped, so a client request id cannot break the line", "[records]") {
    TurnRecord r;
    r.request_id = "a\"b\nc";
    r.outcome = "ok";
    const std::string line = to_json_line(r);
    CHECK(line.find('\n') == line.size() - 1);
    CHECK(boost::json::parse(line).as_object().at("request_id") == "a\"b\nc");
}

TEST_CASE("every kind of string value comes back from the line unchanged", "[records]") {
    // Plain ASCII is written as is; the rest (quotes, backslashes, control
    // bytes, DEL, UTF-8) goes through the escaping path.
    const std::string values[] = {"req-abc_123.x", "", "back\\slash", "tab\there", std::string("nul\0x", 5),
                                  "del\x7f", "caf\xc3\xa9", "\x01\x1f", "{\"json\":1}", "ends with space "};
    for (const std::string& v : values) {
        AttemptRecord r;
        r.request_id = v;
        r.model = v;
        r.decision = "ok";
        const std::string line = to_json_line(r);
        CHECK(line.find('\n') == line.size() - 1);
        auto o = boost::json::parse(line).as_object();
        if (v.empty()) {
            CHECK(o.at("request_id").is_null());
        } else {
            CHECK(o.at("request_id").as_string() == v);
            CHECK(o.at("model").as_string() == v);
        }
        CHECK(o.size() == 16);
    }
}
