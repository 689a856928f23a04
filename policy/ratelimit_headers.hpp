// Pacing on a provider's rate-limit headers (docs/behaviour.md section 14,
// `honour_ratelimit_headers`): an answer that says no requests remain holds
// new attempts to its candidate until the reset it gives. Pure: "now" is an
// input; no locale, no TZ, no strptime, no timegm.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::policy {

// A duration in Go's time.ParseDuration syntax, as OpenAI's
// `x-ratelimit-reset-requests` sends it: one or more decimal numbers, each
// with an optional fraction and a unit (ns, us, µs with U+00B5 or U+03BC,
// ms, s, m, h): "1s", "6m0s", "120ms", "2.5s", "1h2m3.5s"; a lone "0". As in
// Go, a number may lack its whole or its fraction part (".5s", "1.s") but not
// both. Milliseconds, rounded up (a hold is "at least" the value), fraction
// digits past the 18th only rounding up; saturates at INT64_MAX. A sign, an
// empty value, a number without a unit (other than "0"), an unknown unit or
// a space inside -> nullopt; spaces and tabs around the value are ignored.
std::optional<std::int64_t> parse_go_duration_ms(std::string_view value);

// An RFC 3339 date-time, as Anthropic's `anthropic-ratelimit-requests-reset`
// sends it: "2026-12-02T17:20:00Z", with an optional fraction of a second
// ("...T17:20:00.123Z") and an offset "Z" or "+HH:MM"/"-HH:MM"; "t" and "z"
// may be lower case; second 60 (a leap second) is accepted as RFC 3339
// allows. Milliseconds since the Unix epoch, UTC, the fraction truncated to
// milliseconds. A date that does not exist (month 13, February 30, hour 24),
// a missing part or anything trailing -> nullopt; spaces and tabs around the
// value are ignored.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view value);

// The answer's rate-limit headers; absent ones are nullopt.
struct RateLimitHeaders {
    std::optional<std::string_view> openai_remaining;     // x-ratelimit-remaining-requests
    std::optional<std::string_view> openai_reset;         // x-ratelimit-reset-requests
    std::optional<std::string_view> anthropic_remaining;  // anthropic-ratelimit-requests-remaining
    std::optional<std::string_view> anthropic_reset;      // anthropic-ratelimit-requests-reset
    std::optional<std::string_view> date;                 // Date
};

// How long to hold new attempts to the candidate, in ms, or nullopt to hold
// nothing. A family holds only when its remaining value is the integer 0
// (digits only, "0" or "00", spaces and tabs around allowed) and its reset
// lies in the future: OpenAI's reset is a Go duration from now; Anthropic's
// is an RFC 3339 time measured against the answer's Date (an HTTP-date,
// parse_http_date), or against now_unix_ms when Date is missing or does not
// parse. Both families holding: the longer hold. At most max_delay_ms. A
// missing, unparseable or past reset, a remaining value other than 0, or a
// hold that comes to 0 ms -> nullopt.
std::optional<std::int64_t> ratelimit_hold_ms(const RateLimitHeaders& headers,
                                              std::int64_t max_delay_ms,
                                              std::int64_t now_unix_ms);

}  // namespace modelproxy::policy
