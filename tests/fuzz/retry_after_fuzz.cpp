// libFuzzer target for policy/retry_after.hpp and the number syntax under it
// (policy/decimal.hpp): whatever a provider sends as `retry-after-ms` or
// `Retry-After`, the parsers never crash and keep their contract.
//
// Input: 8 bytes picking "now", 8 bytes picking a timestamp t, then the
// header value. "now" is in [1970, 9999]: the clock the proxy passes (and
// the range an HTTP-date's four-digit year can name).
//
// Checked (abort() on failure), against oracles written here from the
// headers' text, sharing no code with policy/:
//  - the value parses as a number exactly when it is 1*DIGIT ["." 1*DIGIT]
//    between spaces/tabs, and then to value * scale rounded up, saturating;
//  - `Retry-After` prefers that number (seconds) to a date; a date gives
//    (date - now) in ms, 0 when not in the future; results are never negative;
//  - an HTTP-date that parses re-parses to the same instant when printed back
//    as an IMF-fixdate;
//  - t printed as IMF-fixdate, asctime and (when its two-digit year names
//    t's year) RFC 850 parses to t; integers printed in decimal parse to themselves.
#include "check.hpp"

#include "policy/decimal.hpp"
#include "policy/retry_after.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace {

using namespace modelproxy::policy;

constexpr std::int64_t max_i64 = std::numeric_limits<std::int64_t>::max();

// After Howard Hinnant's civil_from_days (proleptic Gregorian calendar).
struct Civil {
    std::int64_t year;
    unsigned month, day, hour, minute, second, weekday;  // weekday 0 = Sunday
};

Civil civil_from_unix(std::int64_t t) {
    std::int64_t z = t >= 0 ? t / 86400 : (t - 86399) / 86400;
    const std::int64_t secs = t - z * 86400;
    const unsigned weekday = static_cast<unsigned>(z >= -4 ? (z + 4) % 7 : (z + 5) % 7 + 6);
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2);
    return {y, m, d, static_cast<unsigned>(secs / 3600), static_cast<unsigned>(secs / 60 % 60),
            static_cast<unsigned>(secs % 60), weekday};
}

constexpr std::array<const char*, 12> months = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::array<const char*, 7> short_days = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<const char*, 7> long_days = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                  "Thursday", "Friday", "Saturday"};

std::string imf_fixdate(const Civil& c) {
    char out[64];
    std::snprintf(out, sizeof out, "%s, %02u %s %04lld %02u:%02u:%02u GMT", short_days[c.weekday], c.day,
                  months[c.month - 1], static_cast<long long>(c.year), c.hour, c.minute, c.second);
    return out;
}

std::string asctime_date(const Civil& c) {
    char out[64];
    std::snprintf(out, sizeof out, "%s %s %2u %02u:%02u:%02u %04lld", short_days[c.weekday], months[c.month - 1],
                  c.day, c.hour, c.minute, c.second, static_cast<long long>(c.year));
    return out;
}

std::string rfc850_date(const Civil& c) {
    char out[64];
    std::snprintf(out, sizeof out, "%s, %02u-%s-%02lld %02u:%02u:%02u GMT", long_days[c.weekday], c.day,
                  months[c.month - 1], static_cast<long long>(c.year % 100), c.hour, c.minute, c.second);
    return out;
}

// 1*DIGIT [ "." 1*DIGIT ] between spaces and tabs; value * 10^scale_digits
// rounded up, saturating. nullopt when the text does not have that syntax.
std::optional<std::int64_t> oracle_decimal(std::string_view text, int scale_digits) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    const std::size_t point = text.find('.');
    const std::string_view whole = text.substr(0, point);
    const std::string_view fraction = point == std::string_view::npos ? std::string_view() : text.substr(point + 1);
    auto all_digits = [](std::string_view s) {
        if (s.empty()) return false;
        for (char c : s)
            if (c < '0' || c > '9') return false;
        return true;
    };
    if (!all_digits(whole)) return std::nullopt;
    if (point != std::string_view::npos && !all_digits(fraction)) return std::nullopt;

    // whole digits followed by the first scale_digits fraction digits (zero
    // padded), as one integer; any later non-zero digit rounds up.
    __int128 value = 0;
    bool saturated = false;
    auto push = [&](char c) {
        if (saturated) return;
        value = value * 10 + (c - '0');
        if (value > max_i64) saturated = true;
    };
    for (char c : whole) push(c);
    for (int i = 0; i < scale_digits; ++i) push(static_cast<std::size_t>(i) < fraction.size() ? fraction[i] : '0');
    bool round_up = false;
    for (std::size_t i = static_cast<std::size_t>(scale_digits); i < fraction.size(); ++i)
        if (fraction[i] != '0') round_up = true;
    if (saturated) return max_i64;
    if (round_up) value += 1;
    return value > max_i64 ? max_i64 : static_cast<std::int64_t>(value);
}

std::uint64_t take_u64(const std::uint8_t*& bytes, std::size_t& size) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v <<= 8;
        if (size) {
            v |= *bytes++;
            --size;
        }
    }
    return v;
}

// [0001-01-01, 9999-12-31 23:59:59] and [1970-01-01, same end] in Unix seconds.
constexpr std::int64_t year_1 = -62135596800;
constexpr std::int64_t year_10000 = 253402300800;

void check_date_round_trips(std::int64_t t, std::int64_t now) {
    const Civil c = civil_from_unix(t);
    MP_FUZZ_CHECK(c.year >= 1 && c.year <= 9999);
    MP_FUZZ_CHECK_THAT(parse_http_date(imf_fixdate(c), now) == t, "an IMF-fixdate does not parse to its instant");
    MP_FUZZ_CHECK_THAT(parse_http_date(asctime_date(c), now) == t, "an asctime date does not parse to its instant");
    // RFC 9110 5.6.7: an RFC 850 year is now's century plus its two digits,
    // less 100 when that is more than 50 years in the future.
    const std::int64_t now_year = civil_from_unix(now).year;
    std::int64_t two_digit_year = now_year - now_year % 100 + c.year % 100;
    if (two_digit_year > now_year + 50) two_digit_year -= 100;
    if (two_digit_year == c.year)
        MP_FUZZ_CHECK_THAT(parse_http_date(rfc850_date(c), now) == t, "an RFC 850 date does not parse to its instant");
    const std::optional<std::int64_t> wait = parse_retry_after_value(imf_fixdate(c), now);
    MP_FUZZ_CHECK(wait == (t > now ? (t - now) * 1000 : 0));
    // A date is no number: retry-after-ms ignores it and falls back.
    MP_FUZZ_CHECK(retry_after_ms(imf_fixdate(c), std::string_view("7"), now) == 7000);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    const std::int64_t now = static_cast<std::int64_t>(take_u64(bytes, size) % static_cast<std::uint64_t>(year_10000));
    const std::uint64_t pick = take_u64(bytes, size);
    const std::string_view value(reinterpret_cast<const char*>(bytes), size);

    // The number syntax, as seconds (scale 1000) and as milliseconds.
    const std::optional<std::int64_t> as_ms = parse_retry_after_ms_value(value);
    MP_FUZZ_CHECK_THAT(as_ms == oracle_decimal(value, 0), "retry-after-ms differs from the decimal oracle");
    const std::optional<std::int64_t> seconds_ms = oracle_decimal(value, 3);
    MP_FUZZ_CHECK(parse_decimal_scaled(value, 1000, Rounding::up) == seconds_ms);
    if (seconds_ms) {
        const std::optional<std::int64_t> down = parse_decimal_scaled(value, 1000, Rounding::down);
        MP_FUZZ_CHECK(down && *down <= *seconds_ms && *seconds_ms - *down <= 1);
    }

    const std::optional<std::int64_t> date = parse_http_date(value, now);
    const std::optional<std::int64_t> wait = parse_retry_after_value(value, now);
    if (seconds_ms) {
        MP_FUZZ_CHECK_THAT(wait == seconds_ms, "Retry-After delta-seconds is not value * 1000 rounded up");
    } else if (date) {
        MP_FUZZ_CHECK(wait == (*date > now ? (*date - now) * 1000 : 0));
    } else {
        MP_FUZZ_CHECK_THAT(!wait, "Retry-After parsed something that is neither a number nor a date");
    }
    if (wait) MP_FUZZ_CHECK(*wait >= 0);
    if (as_ms) MP_FUZZ_CHECK(*as_ms >= 0);

    if (date) {
        // Four-digit years, and RFC 850 years within 50 of now.
        MP_FUZZ_CHECK(*date >= year_1 && *date < year_10000 + 51 * 366 * 86400LL);
        if (*date < year_10000)
            MP_FUZZ_CHECK_THAT(parse_http_date(imf_fixdate(civil_from_unix(*date)), now) == date,
                               "a parsed date printed as IMF-fixdate parses to another instant");
    }

    // The header pair: retry-after-ms when it parses, else Retry-After.
    MP_FUZZ_CHECK(retry_after_ms(value, std::string_view("2"), now) == (as_ms ? as_ms : std::optional<std::int64_t>(2000)));
    MP_FUZZ_CHECK(retry_after_ms(std::nullopt, value, now) == wait);
    MP_FUZZ_CHECK(retry_after_ms(std::nullopt, std::nullopt, now) == std::nullopt);

    // Round trips from the picked numbers.
    const std::int64_t t = static_cast<std::int64_t>(pick % static_cast<std::uint64_t>(year_10000 - year_1)) + year_1;
    check_date_round_trips(t, now);
    const auto n = static_cast<std::int64_t>(pick % 1000000000000000ull);  // 15 digits: n * 1000 fits
    const std::string digits = std::to_string(n);
    MP_FUZZ_CHECK(parse_retry_after_ms_value(digits) == n);
    MP_FUZZ_CHECK(parse_retry_after_ms_value(" \t" + digits + ".000\t ") == n);
    MP_FUZZ_CHECK(parse_retry_after_ms_value(digits + ".0001") == n + 1);
    MP_FUZZ_CHECK(parse_retry_after_value(digits, now) == n * 1000);
    MP_FUZZ_CHECK(parse_unsigned_integer(digits) == n);
    MP_FUZZ_CHECK(!parse_retry_after_ms_value("-" + digits) && !parse_retry_after_ms_value("+" + digits));
    return 0;
}
