// Retry-After parsing, docs/behaviour.md section 6: `retry-after-ms`, else `Retry-After`
// (delta-seconds or an HTTP-date; a past date is 0). Pure: "now" is an input,
// no locale, no TZ, no strptime.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::policy {

// `retry-after-ms`: a non-negative decimal number of milliseconds, fraction
// allowed ("1500", "1500.25"), surrounding spaces/tabs allowed. Rounded up
// (the wait is "at least" the value). Saturates instead of overflowing.
// Anything else (sign, exponent, empty, garbage) -> nullopt.
std::optional<std::int64_t> parse_retry_after_ms_value(std::string_view value);

// `Retry-After`: delta-seconds ("120"; a fraction such as "1.5" is accepted
// too, as the official SDKs do), or an HTTP-date in IMF-fixdate
// ("Sun, 06 Nov 1994 08:49:37 GMT"), obsolete RFC 850
// ("Sunday, 06-Nov-94 08:49:37 GMT") or asctime ("Sun Nov  6 08:49:37 1994")
// form. A date gives (date - now) in ms, 0 when not in the future.
// Unparseable -> nullopt.
std::optional<std::int64_t> parse_retry_after_value(std::string_view value,
                                                    std::int64_t now_unix_s);

// An HTTP-date (any of the three forms above) as seconds since the Unix epoch,
// UTC. Names are matched case-sensitively (RFC 9110 5.6.7); the weekday must
// be a weekday name but is not checked against the date. A two-digit RFC 850
// year more than 50 years after now's year means the century before.
std::optional<std::int64_t> parse_http_date(std::string_view value, std::int64_t now_unix_s);

// The header pair: `retry-after-ms` when it parses, else `Retry-After`; an
// unparseable value is ignored (as if absent). Whether the value applies at
// all (only on HTTP 429 and 503) is the decision's rule.
std::optional<std::int64_t> retry_after_ms(std::optional<std::string_view> retry_after_ms_header,
                                           std::optional<std::string_view> retry_after_header,
                                           std::int64_t now_unix_s);

}  // namespace modelproxy::policy
