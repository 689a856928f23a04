// Exact record lines (docs/behaviour.md section 10): key order, null/number/boolean forms
// and escaping pinned byte for byte, so a faster writer cannot change what a
// log reader sees.
#include "proxy/records.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace modelproxy::proxy;

namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::string repeat(std::string_view piece, int times) {
    std::string out;
    for (int i = 0; i < times; ++i) out.append(piece);
    return out;
}

AttemptRecord every_attempt_field() {
    AttemptRecord r;
    r.request_id = "req-7f3a";
    r.route = "openai";
    r.model = "gpt-4o-mini";
    r.attempt = 3;
    r.status = 429;
    r.error_class = "rate_limit";
    r.code = "rate_limited";
    r.timeout_source = "first_byte";
    r.rule = "http-429";
    r.decision = "retry";
    r.delay_ms = 1500;
    r.remaining_ms = 298500;
    r.digest = "sha256:0123abcd";
    r.candidate = 2;
    r.resume_offset = 1234;
    return r;
}

TurnRecord every_turn_field() {
    TurnRecord r;
    r.request_id = "req-7f3a";
    r.route = "anthropic";
    r.model = "claude";
    r.attempts = 4;
    r.outcome = "exhausted";
    r.error_class = "server";
    r.code = "upstream_5xx";
    r.bound = "attempts";
    r.status = 502;
    r.stream = true;
    r.published = true;
    r.fallback_from = "openai";
    r.duration_ms = 4321;
    r.ttft_ms = 87;
    r.resumed = 2;
    return r;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("an attempt record with every optional field empty pins its nulls", "[records]") {
    CHECK(to_json_line(AttemptRecord{}) ==
          R"({"event":"attempt","request_id":null,"route":null,"model":null,"attempt":1,"status":null,)"
          R"("class":null,"code":null,"timeout_source":null,"rule":null,"decision":null,"delay_ms":0,)"
          R"("remaining_ms":0,"digest":null,"candidate":0,"resume_offset":null})"
          "\n");
}

TEST_CASE("a turn record with every optional field empty pins its nulls and falses", "[records]") {
    CHECK(to_json_line(TurnRecord{}) ==
          R"({"event":"turn","request_id":null,"route":null,"model":null,"attempts":0,"provider_retries":0,)"
          R"("outcome":null,"class":null,"code":null,"bound":null,"status":null,"stream":false,)"
          R"("published":false,"fallback_from":null,"duration_ms":0,"ttft_ms":null,"resumed":0})"
          "\n");
}

TEST_CASE("an attempt record with every field set is pinned byte for byte", "[records]") {
    CHECK(to_json_line(every_attempt_field()) ==
          R"({"event":"attempt","request_id":"req-7f3a","route":"openai","model":"gpt-4o-mini","attempt":3,)"
          R"("status":429,"class":"rate_limit","code":"rate_limited","timeout_source":"first_byte",)"
          R"("rule":"http-429","decision":"retry","delay_ms":1500,"remaining_ms":298500,)"
          R"("digest":"sha256:0123abcd","candidate":2,"resume_offset":1234})"
          "\n");
}

TEST_CASE("a turn record with every field set is pinned byte for byte", "[records]") {
    CHECK(to_json_line(every_turn_field()) ==
          R"({"event":"turn","request_id":"req-7f3a","route":"anthropic","model":"claude","attempts":4,)"
          R"("provider_retries":3,"outcome":"exhausted","class":"server","code":"upstream_5xx",)"
          R"("bound":"attempts","status":502,"stream":true,"published":true,"fallback_from":"openai",)"
          R"("duration_ms":4321,"ttft_ms":87,"resumed":2})"
          "\n");
}

TEST_CASE("outside strings are escaped as JSON, and bytes that are not UTF-8 replaced", "[records]") {
    // Quote, backslash, named and \u00XX control escapes (DEL too); UTF-8
    // written as it came; an invalid UTF-8 byte written as U+FFFD.
    TurnRecord r;
    r.request_id = "a\"b\\c\n\t\x01\x1f\x7f caf\xc3\xa9 \xff";
    r.route = "r/1";
    r.model = std::string_view("nul\0end", 7);
    r.fallback_from = "\b\f\r";
    CHECK(to_json_line(r) ==
          "{\"event\":\"turn\",\"request_id\":\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\\u007f caf\xc3\xa9 \xef\xbf\xbd\","
          "\"route\":\"r/1\",\"model\":\"nul\\u0000end\",\"attempts\":0,\"provider_retries\":0,"
          "\"outcome\":null,\"class\":null,\"code\":null,\"bound\":null,\"status\":null,\"stream\":false,"
          "\"published\":false,\"fallback_from\":\"\\b\\f\\r\",\"duration_ms\":0,\"ttft_ms\":null,\"resumed\":0}\n");
}

TEST_CASE("a record string is valid UTF-8 JSON whatever bytes it came as", "[records]") {
    // One row per kind of ill-formed sequence (Unicode table 3-7), and the
    // well-formed ones around them.
    auto [bytes, written] = GENERATE(table<std::string, std::string>({
        {"\xff", "\xef\xbf\xbd"},                       // never a UTF-8 byte
        {"\x80", "\xef\xbf\xbd"},                       // a lone continuation byte
        {"\xc0\x80", "\xef\xbf\xbd\xef\xbf\xbd"},       // overlong NUL
        {"\xc1\xbf", "\xef\xbf\xbd\xef\xbf\xbd"},       // overlong
        {"\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  // overlong '/'
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  // a surrogate, U+D800
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  // above U+10FFFF
        {"\xf5\x80", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd"},       // cut short at the end
        {"\xe2\x82x", "\xef\xbf\xbd\xef\xbf\xbdx"},     // cut short before ASCII
        {"\xe2\x82\xac", "\xe2\x82\xac"},               // U+20AC
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},       // U+1F600
        {"\xed\x9f\xbf", "\xed\x9f\xbf"},               // U+D7FF
        {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},       // U+10FFFF
        {"\xc2\xa0", "\xc2\xa0"},                       // U+00A0
        {"\xc2\x85", "\\u0085"},                        // a C1 control, U+0085
        {"\xc2\x9f", "\\u009f"},
        {"\x7f", "\\u007f"},
    }));
    INFO(bytes);
    TurnRecord r;
    r.request_id = bytes;
    const std::string line = to_json_line(r);
    CHECK(line.substr(0, line.find(",\"route\"")) == "{\"event\":\"turn\",\"request_id\":\"" + written + "\"");
    boost::json::error_code ec;
    (void)boost::json::parse(line, ec);  // refuses invalid UTF-8
    CHECK_FALSE(ec);
}

TEST_CASE("every byte at every place of an id is written as valid JSON", "[records]") {
    // Ids shorter and longer than the 8 bytes the plain check reads at once,
    // with the odd byte at each position (also in the overlapping last word):
    // what Boost.JSON writes for ASCII other than DEL; DEL as \u007f; a byte
    // from 0x80 alone is not UTF-8, so U+FFFD.
    const auto expected_id = [](const std::string& id) {
        std::string text = boost::json::serialize(id);
        std::string out;
        for (const char c : text) {
            if (c == '\x7f') out += "\\u007f";
            else if (static_cast<unsigned char>(c) >= 0x80) out += "\xef\xbf\xbd";
            else out += c;
        }
        return out;
    };
    std::vector<std::string> wrong;
    for (std::size_t size : {1u, 7u, 8u, 19u}) {
        for (std::size_t at = 0; at < size; ++at) {
            for (int byte = 0; byte < 256; ++byte) {
                std::string id(size, 'k');
                id[at] = static_cast<char>(byte);
                TurnRecord r;
                r.request_id = id;
                const std::string line = to_json_line(r);
                const std::string expected = R"({"event":"turn","request_id":)" + expected_id(id) + R"(,"route":null,)";
                if (line.compare(0, expected.size(), expected) != 0) wrong.push_back(line);
                boost::json::error_code ec;
                (void)boost::json::parse(line, ec);
                if (ec) wrong.push_back(line);
            }
        }
    }
    CHECK(wrong == std::vector<std::string>{});
}

TEST_CASE("long ids that escape to twice and six times their size fit the line", "[records]") {
    const std::string quotes(200, '"');
    const std::string controls(200, '\x01');
    AttemptRecord r;
    r.request_id = quotes;
    r.route = controls;
    r.model = quotes;
    r.decision = "ok";
    CHECK(to_json_line(r) == R"({"event":"attempt","request_id":")" + repeat(R"(\")", 200) +
                                 R"(","route":")" + repeat(R"(\u0001)", 200) + R"(","model":")" +
                                 repeat(R"(\")", 200) +
                                 R"(","attempt":1,"status":null,"class":null,"code":null,)"
                                 R"("timeout_source":null,"rule":null,"decision":"ok","delay_ms":0,)"
                                 R"("remaining_ms":0,"digest":null,"candidate":0,"resume_offset":null})"
                                 "\n");
}

TEST_CASE("numbers at the int64 limits are written in full", "[records]") {
    AttemptRecord a;
    a.attempt = std::numeric_limits<int>::min();
    a.status = std::numeric_limits<int>::max();
    a.decision = "ok";
    a.delay_ms = kMin;
    a.remaining_ms = kMax;
    CHECK(to_json_line(a) ==
          R"({"event":"attempt","request_id":null,"route":null,"model":null,"attempt":-2147483648,)"
          R"("status":2147483647,"class":null,"code":null,"timeout_source":null,"rule":null,)"
          R"("decision":"ok","delay_ms":-9223372036854775808,"remaining_ms":9223372036854775807,)"
          R"("digest":null,"candidate":0,"resume_offset":null})"
          "\n");

    TurnRecord t;
    t.outcome = "ok";
    t.attempts = std::numeric_limits<int>::max();
    t.duration_ms = kMin;
    t.ttft_ms = kMax;
    CHECK(to_json_line(t) ==
          R"({"event":"turn","request_id":null,"route":null,"model":null,"attempts":2147483647,)"
          R"("provider_retries":2147483646,"outcome":"ok","class":null,"code":null,"bound":null,)"
          R"("status":null,"stream":false,"published":false,"fallback_from":null,)"
          R"("duration_ms":-9223372036854775808,"ttft_ms":9223372036854775807,"resumed":0})"
          "\n");
}

TEST_CASE("the log writes the same lines, through a buffer that grows and is reused", "[records]") {
    char path[] = "/tmp/modelproxy-records-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);

    AttemptRecord small = every_attempt_field();
    TurnRecord turn = every_turn_field();
    const std::string controls(300, '\x1f');
    AttemptRecord large = every_attempt_field();
    large.request_id = controls;
    TurnRecord large_turn = every_turn_field();
    large_turn.request_id = controls;
    large_turn.fallback_from = controls;
    {
        RecordLog log;
        REQUIRE_FALSE(log.open(path));
        log.write(small);
        log.write(large, large_turn);
        log.write(turn);
        log.write(small, turn);
    }
    const std::string expected = to_json_line(small) + to_json_line(large) + to_json_line(large_turn) +
                                 to_json_line(turn) + to_json_line(small) + to_json_line(turn);
    CHECK(read_all(path) == expected);
    CHECK(to_json_line(large).find(repeat(R"(\u001f)", 300)) != std::string::npos);
    std::remove(path);
}

TEST_CASE("a breaker record is one line with its route, model, states, reason and open time", "[records]") {
    BreakerRecord r;
    r.route = "azure-east";
    r.model = "gpt-4o";
    r.from = "closed";
    r.to = "open";
    r.reason = "consecutive";
    r.open_ms = 5000;
    CHECK(to_json_line(r) == R"({"event":"breaker","route":"azure-east","model":"gpt-4o","from":"closed",)"
                             R"("to":"open","reason":"consecutive","open_ms":5000})"
                             "\n");
}
