// The one number syntax policy/ reads from headers: 1*DIGIT [ "." 1*DIGIT ],
// optionally surrounded by spaces or tabs. Pure; no locale, no strtod.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::policy {

enum class Rounding { down, up };

// value * scale as an integer, rounded as asked, saturating at INT64_MAX.
// No sign, no exponent, no empty part around the point -> nullopt.
// Example: parse_decimal_scaled("1.5", 1000, Rounding::down) == 1500.
std::optional<std::int64_t> parse_decimal_scaled(std::string_view text, std::int64_t scale,
                                                 Rounding rounding);

// text without leading and trailing spaces and tabs (HTTP's OWS).
std::string_view trim_ows(std::string_view text);

// Only DIGITs, no point (surrounding spaces or tabs allowed), saturating.
std::optional<std::int64_t> parse_unsigned_integer(std::string_view text);

}  // namespace modelproxy::policy
