// policy/ratelimit_headers.hpp: Go durations, RFC 3339 times and the hold a
// provider's rate-limit headers ask for (docs/behaviour.md section 14).
#include "policy/ratelimit_headers.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

using namespace modelproxy::policy;

namespace {

using Ms = std::optional<std::int64_t>;
using Text = std::optional<std::string>;
constexpr auto none = std::nullopt;
constexpr std::int64_t max_i64 = std::numeric_limits<std::int64_t>::max();

// 2026-12-02T17:20:00Z, a Wednesday.
constexpr std::int64_t t1720 = 1796232000000;
constexpr std::int64_t t1719 = t1720 - 60000;

std::optional<std::string_view> view(const Text& t) {
    if (!t) return std::nullopt;
    return std::string_view(*t);
}

}  // namespace

TEST_CASE("parse_go_duration_ms: Go's duration syntax, in ms rounded up", "[ratelimit]") {
    auto [text, expected] = GENERATE(table<std::string, Ms>({
        {"1s", 1000},
        {"6m0s", 360000},
        {"120ms", 120},
        {"2.5s", 2500},
        {"1h2m3.5s", 3723500},
        {"1.5h", 5400000},
        {"1m30s", 90000},
        {"0", 0},
        {"0s", 0},
        {"0.000ms", 0},
        {"300us", 1},
        {"300\xC2\xB5s", 1},  // U+00B5
        {"300\xCE\xBCs", 1},  // U+03BC
        {"1500us", 2},
        {"1ns", 1},
        {"0.1ns", 1},
        {"1000000ns", 1},
        {"1000001ns", 2},
        {"0.0001s", 1},
        {"59.999s", 59999},
        {"0.3ms0.7ms", 1},  // the sum is exact: 1 ms, not 2
        {"1s1s", 2000},
        {".5s", 500},
        {"1.s", 1000},
        {"0.1234567890123456789ms", 1},
        {"1.0000000000000000000001s", 1001},  // a digit past the 18th only rounds up
        {" 1s\t", 1000},
        {"2562047788015h", 9223372036854000000},
        {"2562047788016h", max_i64},
        {"9999999999999h", max_i64},
        {"99999999999999999999999999999999999999s", max_i64},
        {"9999999999999h9999999999999h", max_i64},
        {"-1s", none},
        {"+1s", none},
        {"-0", none},
        {"1", none},
        {"00", none},
        {"1.5", none},
        {"s", none},
        {"ms1", none},
        {"1x", none},
        {"1S", none},
        {"1sec", none},
        {"1e3s", none},
        {"1,5s", none},
        {"1 s", none},
        {"1s 2m", none},
        {"1h-2m", none},
        {".s", none},
        {".", none},
        {"\xC2\xB5s", none},
        {"", none},
        {"  ", none},
    }));
    CAPTURE(text);
    CHECK(parse_go_duration_ms(text) == expected);
}

TEST_CASE("parse_rfc3339_ms: ms since the epoch, UTC", "[ratelimit]") {
    auto [text, expected] = GENERATE(table<std::string, Ms>({
        {"1970-01-01T00:00:00Z", 0},
        {"2026-12-02T17:20:00Z", t1720},
        {"2026-12-02T17:20:00.123Z", t1720 + 123},
        {"2026-12-02T17:20:00.1Z", t1720 + 100},
        {"2026-12-02T17:20:00.123999Z", t1720 + 123},
        {"2026-12-02T17:20:00.000000001Z", t1720},
        {"2026-12-02T17:20:00+01:00", t1720 - 3600000},
        {"2026-12-02T17:20:00-05:30", t1720 + 19800000},
        {"2026-12-02T17:20:00.5+00:00", t1720 + 500},
        {"2026-12-02T17:20:00-00:00", t1720},
        {"2026-12-02t17:20:00z", t1720},
        {" 2026-12-02T17:20:00Z\t", t1720},
        {"2000-02-29T00:00:00Z", 951782400000},
        {"2026-06-30T23:59:60Z", 1782864000000},  // a leap second: the next minute's first
        {"1969-12-31T23:59:59Z", -1000},
        {"0001-01-01T00:00:00Z", -62135596800000},
        {"9999-12-31T23:59:59.999Z", 253402300799999},
        {"2026-13-02T17:20:00Z", none},
        {"2026-00-02T17:20:00Z", none},
        {"2026-12-00T17:20:00Z", none},
        {"2026-12-32T17:20:00Z", none},
        {"2026-02-29T00:00:00Z", none},
        {"1900-02-29T00:00:00Z", none},
        {"2026-02-30T00:00:00Z", none},
        {"2026-04-31T00:00:00Z", none},
        {"2026-12-02T24:00:00Z", none},
        {"2026-12-02T17:60:00Z", none},
        {"2026-12-02T17:20:61Z", none},
        {"2026-12-02T17:20:00", none},
        {"2026-12-02T17:20:00.Z", none},
        {"2026-12-02T17:20:00.123", none},
        {"2026-12-02T17:20:00+0100", none},
        {"2026-12-02T17:20:00+01", none},
        {"2026-12-02T17:20:00+24:00", none},
        {"2026-12-02T17:20:00+01:60", none},
        {"2026-12-02T17:20:00Zjunk", none},
        {"2026-12-02 17:20:00Z", none},
        {"2026-12-02T17:20Z", none},
        {"2026-12-02", none},
        {"26-12-02T17:20:00Z", none},
        {"2026-12-2T17:20:00Z", none},
        {"+2026-12-02T17:20:00Z", none},
        {"Wed, 02 Dec 2026 17:20:00 GMT", none},
        {"1796232000", none},
        {"", none},
    }));
    CAPTURE(text);
    CHECK(parse_rfc3339_ms(text) == expected);
}

TEST_CASE("ratelimit_hold_ms: remaining 0 holds until the reset, at most max_delay_ms", "[ratelimit]") {
    auto [what, oai_remaining, oai_reset, ant_remaining, ant_reset, date, max_delay, expected] =
        GENERATE(table<std::string, Text, Text, Text, Text, Text, std::int64_t, Ms>({
            {"no headers", none, none, none, none, none, 120000, none},
            // OpenAI: a Go duration from now.
            {"openai 0 / 1s", "0", "1s", none, none, none, 120000, 1000},
            {"openai 0 / 2.5s", "0", "2.5s", none, none, none, 120000, 2500},
            {"openai 0 with spaces", " 0\t", "6m0s", none, none, none, 600000, 360000},
            {"openai 00 is the integer 0", "00", "1s", none, none, none, 120000, 1000},
            {"openai capped at max_delay_ms", "0", "6m0s", none, none, none, 20000, 20000},
            {"openai remaining 1", "1", "1s", none, none, none, 120000, none},
            {"openai remaining 0.0", "0.0", "1s", none, none, none, 120000, none},
            {"openai remaining -0", "-0", "1s", none, none, none, 120000, none},
            {"openai remaining empty", "", "1s", none, none, none, 120000, none},
            {"openai remaining missing", none, "1s", none, none, none, 120000, none},
            {"openai reset missing", "0", none, none, none, none, 120000, none},
            {"openai reset unparseable", "0", "soon", none, none, none, 120000, none},
            {"openai reset 0s", "0", "0s", none, none, none, 120000, none},
            {"openai reset a bare number", "0", "30", none, none, none, 120000, none},
            // Anthropic: an RFC 3339 time against the answer's Date.
            {"anthropic against Date", none, none, "0", "2026-12-02T17:20:00Z",
             "Wed, 02 Dec 2026 17:19:50 GMT", 120000, 10000},
            {"anthropic with a fraction", none, none, "0", "2026-12-02T17:20:00.500Z",
             "Wed, 02 Dec 2026 17:19:59 GMT", 120000, 1500},
            {"anthropic with an offset", none, none, "0", "2026-12-02T18:20:00+01:00",
             "Wed, 02 Dec 2026 17:19:50 GMT", 120000, 10000},
            {"anthropic Date missing: against now", none, none, "0", "2026-12-02T17:20:00Z", none,
             120000, 60000},
            {"anthropic Date unparseable: against now", none, none, "0", "2026-12-02T17:20:00Z",
             "yesterday", 120000, 60000},
            {"anthropic reset past by Date, though ahead of now", none, none, "0",
             "2026-12-02T17:20:00Z", "Wed, 02 Dec 2026 17:21:00 GMT", 120000, none},
            {"anthropic reset equal to Date", none, none, "0", "2026-12-02T17:20:00Z",
             "Wed, 02 Dec 2026 17:20:00 GMT", 120000, none},
            {"anthropic reset past by now", none, none, "0", "2026-12-02T17:18:00Z", none, 120000, none},
            {"anthropic capped at max_delay_ms", none, none, "0", "2026-12-02T17:20:00Z", none, 5000,
             5000},
            {"anthropic remaining 1", none, none, "1", "2026-12-02T17:20:00Z", none, 120000, none},
            {"anthropic remaining missing", none, none, none, "2026-12-02T17:20:00Z", none, 120000,
             none},
            {"anthropic reset missing", none, none, "0", none, "Wed, 02 Dec 2026 17:19:50 GMT", 120000,
             none},
            {"anthropic reset unparseable", none, none, "0", "2026-12-02T17:20:00", none, 120000, none},
            {"anthropic reset a Go duration", none, none, "0", "1s", none, 120000, none},
            // Both families: the longer hold.
            {"both: anthropic longer", "0", "30s", "0", "2026-12-02T17:20:00Z", none, 120000, 60000},
            {"both: openai longer", "0", "90s", "0", "2026-12-02T17:20:00Z", none, 120000, 90000},
            {"both: openai not at 0", "5", "90s", "0", "2026-12-02T17:20:00Z", none, 120000, 60000},
            {"both: anthropic past", "0", "2s", "0", "2026-12-02T17:00:00Z", none, 120000, 2000},
            {"both: openai unparseable", "0", "later", "0", "2026-12-02T17:20:00Z", none, 120000,
             60000},
            {"both: capped", "0", "90s", "0", "2026-12-02T17:20:00Z", none, 30000, 30000},
            {"both: neither holds", "1", "90s", "2", "2026-12-02T17:20:00Z", none, 120000, none},
            {"max_delay_ms 0: nothing", "0", "90s", none, none, none, 0, none},
        }));
    CAPTURE(what);
    const RateLimitHeaders headers{view(oai_remaining), view(oai_reset), view(ant_remaining),
                                   view(ant_reset), view(date)};
    CHECK(ratelimit_hold_ms(headers, max_delay, t1719) == expected);
}
