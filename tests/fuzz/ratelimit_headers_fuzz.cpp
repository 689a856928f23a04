// libFuzzer target for policy/ratelimit_headers.hpp: whatever a provider
// sends as its rate-limit headers, the parsers never crash and keep their
// contract.
//
// Input: 8 bytes picking an instant t and a number n, then the header text.
// Checked (abort() on failure), against oracles written here:
//  - a Go duration that parses is >= 0; "<n>ms", "<n>s" and "<n>m<k>s" parse
//    to their milliseconds; a text with a character outside Go's duration
//    alphabet never parses;
//  - an RFC 3339 time that parses, printed back (UTC, milliseconds), parses
//    to the same instant; t printed that way parses to t;
//  - a hold is never <= 0 nor above max_delay_ms, and none without a
//    remaining count of exactly 0.
#include "check.hpp"

#include "policy/ratelimit_headers.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace {

using namespace modelproxy::policy;

std::uint64_t take_u64(const std::uint8_t*& bytes, std::size_t& size) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8 && size > 0; ++i, ++bytes, --size) v = v << 8 | *bytes;
    return v;
}

// Howard Hinnant's civil_from_days.
void civil(std::int64_t days, int& y, unsigned& m, unsigned& d) {
    days += 719468;
    const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const auto doe = static_cast<unsigned>(days - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<int>(yoe + era * 400 + (m <= 2));
}

std::string rfc3339(std::int64_t ms) {
    const std::int64_t s = ms / 1000;
    int y;
    unsigned mo, d;
    civil(s / 86400, y, mo, d);
    const std::int64_t sod = s % 86400;
    char out[64];
    std::snprintf(out, sizeof out, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", y, mo, d, static_cast<int>(sod / 3600),
                  static_cast<int>(sod / 60 % 60), static_cast<int>(sod % 60), static_cast<int>(ms % 1000));
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    const std::uint64_t pick = take_u64(bytes, size);
    const std::string_view value(reinterpret_cast<const char*>(bytes), size);

    // Go durations.
    const std::optional<std::int64_t> d = parse_go_duration_ms(value);
    if (d) MP_FUZZ_CHECK(*d >= 0);
    if (value.find_first_not_of("0123456789.hmsunµμ \t\xc2\xb5\xce\xbc") != std::string_view::npos)
        MP_FUZZ_CHECK_THAT(!d, "a duration with a character outside Go's alphabet parsed");
    const std::int64_t n = static_cast<std::int64_t>(pick % 100000000);
    MP_FUZZ_CHECK(parse_go_duration_ms(std::to_string(n) + "ms") == n);
    MP_FUZZ_CHECK(parse_go_duration_ms(std::to_string(n) + "s") == n * 1000);
    MP_FUZZ_CHECK(parse_go_duration_ms(std::to_string(n % 1000) + "m" + std::to_string(n % 60) + "s") ==
                  (n % 1000) * 60000 + (n % 60) * 1000);

    // RFC 3339 times: what parses prints back to the same instant; t round-trips.
    const std::optional<std::int64_t> at = parse_rfc3339_ms(value);
    if (at && *at >= 0 && *at < 253402300800000) MP_FUZZ_CHECK(parse_rfc3339_ms(rfc3339(*at)) == at);
    const std::int64_t t = static_cast<std::int64_t>(pick % 253402300800000);
    MP_FUZZ_CHECK_THAT(parse_rfc3339_ms(rfc3339(t)) == t, "an RFC 3339 time does not parse to its instant");

    // The hold.
    const std::int64_t max_delay = 1 + static_cast<std::int64_t>(pick % 100000);
    for (const std::string_view remaining : {std::string_view("0"), std::string_view("1"), value}) {
        RateLimitHeaders h;
        h.openai_remaining = remaining;
        h.openai_reset = value;
        h.anthropic_remaining = remaining;
        h.anthropic_reset = value;
        const std::optional<std::int64_t> hold = ratelimit_hold_ms(h, max_delay, t);
        if (hold) MP_FUZZ_CHECK(*hold > 0 && *hold <= max_delay);
        if (remaining == "1") MP_FUZZ_CHECK_THAT(!hold, "a remaining count of 1 held");
    }
    return 0;
}
