#include "policy/decimal.hpp"

#include "policy/ascii.hpp"

#include <limits>

namespace modelproxy::policy {
namespace {

constexpr std::int64_t max_i64 = std::numeric_limits<std::int64_t>::max();

std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
    if (a != 0 && b > max_i64 / a) return max_i64;
    return a * b;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    return a > max_i64 - b ? max_i64 : a + b;
}

// Parses 1*DIGIT, saturating; leaves the rest of s.
std::optional<std::int64_t> digits(std::string_view& s) {
    std::int64_t v = 0;
    std::size_t i = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
        v = saturating_add(saturating_mul(v, 10), s[i] - '0');
    }
    if (i == 0) return std::nullopt;
    s.remove_prefix(i);
    return v;
}

}  // namespace

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::optional<std::int64_t> parse_unsigned_integer(std::string_view text) {
    std::string_view s = trim_ows(text);
    auto v = digits(s);
    if (!v || !s.empty()) return std::nullopt;
    return v;
}

std::optional<std::int64_t> parse_decimal_scaled(std::string_view text, std::int64_t scale,
                                                 Rounding rounding) {
    if (scale < 1 || scale > 1000000) return std::nullopt;
    std::string_view s = trim_ows(text);
    auto whole = digits(s);
    if (!whole) return std::nullopt;
    std::int64_t result = saturating_mul(*whole, scale);
    if (s.empty()) return result;
    if (s.front() != '.') return std::nullopt;
    s.remove_prefix(1);
    if (s.empty()) return std::nullopt;

    // Keep 9 fraction digits exactly (numerator * scale stays far below
    // INT64_MAX); later digits only matter to round up.
    std::int64_t numerator = 0;
    std::int64_t denominator = 1;
    bool dropped_nonzero = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (!is_digit(s[i])) return std::nullopt;
        if (i < 9) {
            numerator = numerator * 10 + (s[i] - '0');
            denominator *= 10;
        } else if (s[i] != '0') {
            dropped_nonzero = true;
        }
    }
    const std::int64_t scaled = numerator * scale;
    std::int64_t fraction = scaled / denominator;
    if (rounding == Rounding::up && (scaled % denominator != 0 || dropped_nonzero)) ++fraction;
    return saturating_add(result, fraction);
}

}  // namespace modelproxy::policy
