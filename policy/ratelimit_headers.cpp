#include "policy/ratelimit_headers.hpp"

#include "policy/ascii.hpp"
#include "policy/decimal.hpp"
#include "policy/retry_after.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace modelproxy::policy {
namespace {

constexpr std::int64_t max_i64 = std::numeric_limits<std::int64_t>::max();

// A Go duration's sum is kept exactly in 128 bits: whole nanoseconds, and
// the part below a nanosecond in units of 1e-18 ns.
__extension__ typedef __int128 i128;

constexpr i128 pow10(int n) {
    i128 v = 1;
    for (int i = 0; i < n; ++i) v *= 10;
    return v;
}

constexpr int kFractionDigits = 18;
constexpr i128 kSubUnit = pow10(kFractionDigits);  // 1 ns in the sub-nanosecond part
constexpr i128 kNsPerMs = 1000000;
// Above INT64_MAX ms in ns, and with room for one more term: a sum at this
// cap saturates the result, and no term overflows on top of it.
constexpr i128 kNsCap = pow10(27);
constexpr i128 kWholeCap = pow10(25);  // a number's whole part saturates here (x 3.6e12 ns still fits)

struct GoUnit {
    std::string_view name;
    std::int64_t ns;
};

constexpr std::array<GoUnit, 8> go_units = {{
    {"ns", 1},
    {"us", 1000},
    {"\xC2\xB5s", 1000},  // U+00B5 MICRO SIGN
    {"\xCE\xBCs", 1000},  // U+03BC GREEK SMALL LETTER MU
    {"ms", 1000000},
    {"s", 1000000000},
    {"m", 60LL * 1000000000},
    {"h", 3600LL * 1000000000},
}};

bool is_number_char(char c) { return c == '.' || is_digit(c); }

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian), for any
// year of RFC 3339's range; m and d already checked.
std::int64_t days_from_civil(std::int64_t y, int m, int d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const std::int64_t yoe = y - era * 400;                                   // [0, 399]
    const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;  // [0, 365]
    const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           // [0, 146096]
    return era * 146097 + doe - 719468;
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(std::int64_t y, int m) {
    constexpr std::array<int, 12> days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[static_cast<std::size_t>(m - 1)];
}

// A left-to-right reader over one value; every step fails closed.
class Reader {
public:
    explicit Reader(std::string_view s) : rest_(s) {}

    // Exactly n digits.
    std::optional<int> digits(std::size_t n) {
        if (rest_.size() < n) return std::nullopt;
        int v = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (!is_digit(rest_[i])) return std::nullopt;
            v = v * 10 + (rest_[i] - '0');
        }
        rest_.remove_prefix(n);
        return v;
    }

    // One of the characters of `set`; returns it, or '\0'.
    char one_of(std::string_view set) {
        if (rest_.empty() || set.find(rest_.front()) == std::string_view::npos) return '\0';
        const char c = rest_.front();
        rest_.remove_prefix(1);
        return c;
    }

    // The first up to three digits of a run of digits, as milliseconds; the
    // rest of the run is read and dropped (truncation). At least one digit.
    std::optional<int> fraction_ms() {
        int ms = 0;
        std::size_t i = 0;
        for (; i < rest_.size() && is_digit(rest_[i]); ++i) {
            if (i < 3) ms = ms * 10 + (rest_[i] - '0');
        }
        if (i == 0) return std::nullopt;
        for (std::size_t j = i; j < 3; ++j) ms *= 10;
        rest_.remove_prefix(i);
        return ms;
    }

    bool done() const { return rest_.empty(); }

private:
    std::string_view rest_;
};

}  // namespace

std::optional<std::int64_t> parse_go_duration_ms(std::string_view value) {
    std::string_view s = trim_ows(value);
    if (s.empty()) return std::nullopt;
    if (s == "0") return 0;
    i128 ns = 0;   // whole nanoseconds, at most kNsCap
    i128 sub = 0;  // below a nanosecond, in 1e-18 ns, below kSubUnit
    while (!s.empty()) {
        if (!is_number_char(s.front())) return std::nullopt;  // a sign, a space, a unit first
        // The whole part, saturating.
        i128 whole = 0;
        std::size_t i = 0;
        for (; i < s.size() && is_digit(s[i]); ++i) whole = std::min(kWholeCap, whole * 10 + (s[i] - '0'));
        const bool has_whole = i > 0;
        s.remove_prefix(i);
        // The fraction: 18 digits kept exactly, a non-zero digit past them rounds up.
        i128 fraction = 0;
        int kept = 0;
        bool has_fraction = false;
        bool dropped = false;
        if (!s.empty() && s.front() == '.') {
            s.remove_prefix(1);
            for (i = 0; i < s.size() && is_digit(s[i]); ++i) {
                if (kept < kFractionDigits) {
                    fraction = fraction * 10 + (s[i] - '0');
                    ++kept;
                } else if (s[i] != '0') {
                    dropped = true;
                }
            }
            has_fraction = i > 0;
            s.remove_prefix(i);
        }
        if (!has_whole && !has_fraction) return std::nullopt;  // "." alone
        if (dropped) ++fraction;
        // The unit: everything up to the next number.
        std::size_t u = 0;
        while (u < s.size() && !is_number_char(s[u])) ++u;
        const std::string_view unit_name = s.substr(0, u);
        s.remove_prefix(u);
        const auto unit = std::find_if(go_units.begin(), go_units.end(),
                                       [&](const GoUnit& g) { return g.name == unit_name; });
        if (unit == go_units.end()) return std::nullopt;  // none, or not Go's
        ns += whole * unit->ns;
        const i128 scaled = fraction * unit->ns;  // below 1e18 x 3.6e12
        const i128 denominator = pow10(kept);
        ns += scaled / denominator;
        sub += scaled % denominator * pow10(kFractionDigits - kept);
        ns += sub / kSubUnit;
        sub %= kSubUnit;
        ns = std::min(ns, kNsCap);
    }
    if (sub > 0) ++ns;
    const i128 ms = (ns + kNsPerMs - 1) / kNsPerMs;
    return ms > max_i64 ? max_i64 : static_cast<std::int64_t>(ms);
}

std::optional<std::int64_t> parse_rfc3339_ms(std::string_view value) {
    Reader r(trim_ows(value));
    const auto year = r.digits(4);
    if (!year || !r.one_of("-")) return std::nullopt;
    const auto month = r.digits(2);
    if (!month || !r.one_of("-")) return std::nullopt;
    const auto day = r.digits(2);
    if (!day || !r.one_of("Tt")) return std::nullopt;
    const auto hour = r.digits(2);
    if (!hour || !r.one_of(":")) return std::nullopt;
    const auto minute = r.digits(2);
    if (!minute || !r.one_of(":")) return std::nullopt;
    const auto second = r.digits(2);
    if (!second) return std::nullopt;
    int ms = 0;
    char zone = r.one_of(".Zz+-");
    if (zone == '.') {
        const auto fraction = r.fraction_ms();
        if (!fraction) return std::nullopt;
        ms = *fraction;
        zone = r.one_of("Zz+-");
    }
    std::int64_t offset_s = 0;
    if (zone == '+' || zone == '-') {
        const auto oh = r.digits(2);
        if (!oh || !r.one_of(":")) return std::nullopt;
        const auto om = r.digits(2);
        if (!om || *oh > 23 || *om > 59) return std::nullopt;
        offset_s = (zone == '+' ? 1 : -1) * (*oh * 3600 + *om * 60);
    } else if (zone == '\0') {
        return std::nullopt;
    }
    if (!r.done()) return std::nullopt;
    if (*month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month)) return std::nullopt;
    if (*hour > 23 || *minute > 59 || *second > 60) return std::nullopt;  // 60: a leap second
    const std::int64_t local_s =
        days_from_civil(*year, *month, *day) * 86400 + *hour * 3600 + *minute * 60 + *second;
    return (local_s - offset_s) * 1000 + ms;
}

std::optional<std::int64_t> ratelimit_hold_ms(const RateLimitHeaders& headers,
                                              std::int64_t max_delay_ms,
                                              std::int64_t now_unix_ms) {
    auto none_left = [](const std::optional<std::string_view>& remaining) {
        if (!remaining) return false;
        const auto n = parse_unsigned_integer(*remaining);
        return n && *n == 0;
    };
    std::int64_t hold = 0;
    if (none_left(headers.openai_remaining) && headers.openai_reset) {
        if (const auto ms = parse_go_duration_ms(*headers.openai_reset)) hold = std::max(hold, *ms);
    }
    if (none_left(headers.anthropic_remaining) && headers.anthropic_reset) {
        if (const auto reset = parse_rfc3339_ms(*headers.anthropic_reset)) {
            std::int64_t reference = now_unix_ms;
            if (headers.date) {
                // Floor division: parse_http_date reads the century of a
                // two-digit year from now.
                const std::int64_t now_s = now_unix_ms / 1000 - (now_unix_ms % 1000 < 0 ? 1 : 0);
                if (const auto date_s = parse_http_date(*headers.date, now_s)) reference = *date_s * 1000;
            }
            const i128 ahead = static_cast<i128>(*reset) - reference;  // no overflow, whatever now is
            if (ahead > hold) hold = ahead > max_i64 ? max_i64 : static_cast<std::int64_t>(ahead);
        }
    }
    hold = std::min(hold, max_delay_ms);
    if (hold <= 0) return std::nullopt;
    return hold;
}

}  // namespace modelproxy::policy
