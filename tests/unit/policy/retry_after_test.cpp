#include "policy/retry_after.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

using namespace modelproxy::policy;

namespace {

using Ms = std::optional<std::int64_t>;
constexpr auto none = std::nullopt;
constexpr std::int64_t max_i64 = std::numeric_limits<std::int64_t>::max();
// Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example date).
constexpr std::int64_t t1994 = 784111777;
// Sun, 01 Jun 2025 00:00:00 GMT
constexpr std::int64_t t2025 = 1748736000;

}  // namespace

TEST_CASE("retry-after-ms: a non-negative number of ms, rounded up", "[retry_after]") {
    auto [text, expected] = GENERATE(table<std::string, Ms>({
        {"1500", 1500},
        {"0", 0},
        {"1500.2", 1501},
        {"1500.0", 1500},
        {"0.5", 1},
        {"0.0000000001", 1},
        {"  250\t", 250},
        {"99999999999999999999999", max_i64},
        {"-1", none},
        {"+5", none},
        {"1e3", none},
        {"", none},
        {"   ", none},
        {"abc", none},
        {"12abc", none},
        {"1.", none},
        {".5", none},
        {"1.2.3", none},
        {"1 000", none},
    }));
    CAPTURE(text);
    CHECK(parse_retry_after_ms_value(text) == expected);
}

TEST_CASE("Retry-After: delta-seconds or an HTTP-date", "[retry_after]") {
    auto [text, now, expected] = GENERATE(table<std::string, std::int64_t, Ms>({
        {"120", t1994, 120000},
        {"0", t1994, 0},
        {"1.5", t1994, 1500},
        {"0.0001", t1994, 1},
        {" 7 ", t1994, 7000},
        {"-3", t1994, none},
        {"soon", t1994, none},
        {"", t1994, none},
        {"99999999999999999999", t1994, max_i64},
        // IMF-fixdate: future, same second, past.
        {"Sun, 06 Nov 1994 08:50:07 GMT", t1994, 30000},
        {"Sun, 06 Nov 1994 08:49:37 GMT", t1994, 0},
        {"Sun, 06 Nov 1994 08:49:36 GMT", t1994, 0},
        {"Sat, 01 Jan 1994 00:00:00 GMT", t1994, 0},
        {"Mon, 07 Nov 1994 08:49:37 GMT", t1994, 86400000},
        // Obsolete forms.
        {"Sunday, 06-Nov-94 08:50:37 GMT", t1994, 60000},
        {"Sun Nov  6 08:49:47 1994", t1994, 10000},
        // Broken dates are ignored.
        {"Sun, 06 Nov 1994 08:49:37 UTC", t1994, none},
        {"sun, 06 Nov 1994 08:49:37 GMT", t1994, none},
        {"Sun, 6 Nov 1994 08:49:37 GMT", t1994, none},
        {"Sun, 06 Nov 1994 24:00:00 GMT", t1994, none},
        {"Sun, 31 Nov 1994 08:49:37 GMT", t1994, none},
        {"Sun, 06 Nov 1994 08:49:37 GMT extra", t1994, none},
        {"Xyz, 06 Nov 1994 08:49:37 GMT", t1994, none},
    }));
    CAPTURE(text, now);
    CHECK(parse_retry_after_value(text, now) == expected);
}

TEST_CASE("HTTP-date forms to Unix seconds, no locale, no TZ", "[retry_after]") {
    auto [text, now, expected] = GENERATE(table<std::string, std::int64_t, Ms>({
        {"Sun, 06 Nov 1994 08:49:37 GMT", t2025, t1994},
        {"Sunday, 06-Nov-94 08:49:37 GMT", t1994, t1994},
        {"Sun Nov  6 08:49:37 1994", t2025, t1994},
        {"Thu, 01 Jan 1970 00:00:00 GMT", t2025, 0},
        {"Thu, 29 Feb 2024 12:00:00 GMT", t2025, 1709208000},
        {"Wed, 01 Mar 2000 00:00:00 GMT", t2025, 951868800},
        {"Mon, 01 Mar 2100 00:00:00 GMT", t2025, 4107542400},
        {"Fri, 31 Dec 9999 23:59:59 GMT", t2025, 253402300799},
        {"Sat, 30 Jun 2012 23:59:60 GMT", t2025, 1341100800},   // a leap second
        {"Thu Feb 29 12:00:00 2024", t2025, 1709208000},
        {"Thu Feb 29 12:00:00 2024 ", t2025, 1709208000},       // trailing OWS trimmed
        // RFC 850 two-digit years: more than 50 years ahead means the century before.
        {"Wednesday, 01-Jan-70 00:00:00 GMT", t2025, 3155760000},
        {"Thursday, 01-Jan-76 00:00:00 GMT", t2025, 189302400},
        // Invalid dates.
        {"Fri, 29 Feb 2023 12:00:00 GMT", t2025, none},
        {"Mon, 29 Feb 2100 00:00:00 GMT", t2025, none},
        {"Thu, 00 Jan 1970 00:00:00 GMT", t2025, none},
        {"Thu, 01 Jan 0000 00:00:00 GMT", t2025, none},
        {"Thu, 01 Foo 1970 00:00:00 GMT", t2025, none},
        {"Thu, 01 Jan 1970 00:60:00 GMT", t2025, none},
        {"Thu, 01 Jan 1970 00:00:61 GMT", t2025, none},
        {"Thu,01 Jan 1970 00:00:00 GMT", t2025, none},
        {"Sun Nov 6 08:49:37 1994", t2025, none},
        {"Sunday, 06-Nov-1994 08:49:37 GMT", t2025, none},
        {"Sunday, 06 Nov 1994 08:49:37 GMT", t2025, none},
        {"", t2025, none},
    }));
    CAPTURE(text, now);
    CHECK(parse_http_date(text, now) == expected);
}

TEST_CASE("retry-after-ms is preferred, an unparseable value is ignored", "[retry_after]") {
    using H = std::optional<std::string>;
    auto [ms_header, header, expected] = GENERATE(table<H, H, Ms>({
        {"250", "3", 250},
        {"250.5", "Sun, 06 Nov 1994 08:50:37 GMT", 251},
        {"garbage", "3", 3000},
        {"-1", "3", 3000},
        {std::nullopt, "3", 3000},
        {std::nullopt, "Sun, 06 Nov 1994 08:50:37 GMT", 60000},
        {std::nullopt, "Sun, 06 Nov 1994 08:00:00 GMT", 0},
        {"garbage", "garbage", none},
        {std::nullopt, "garbage", none},
        {"5", std::nullopt, 5},
        {std::nullopt, std::nullopt, none},
    }));
    auto view = [](const H& h) -> std::optional<std::string_view> {
        if (!h) return std::nullopt;
        return std::string_view(*h);
    };
    CAPTURE(ms_header.value_or("(absent)"), header.value_or("(absent)"));
    CHECK(retry_after_ms(view(ms_header), view(header), t1994) == expected);
}
