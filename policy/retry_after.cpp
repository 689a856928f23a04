#include "policy/retry_after.hpp"

#include "policy/decimal.hpp"

#include <array>

namespace modelproxy::policy {
namespace {

constexpr std::array<std::string_view, 12> month_names = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::array<std::string_view, 7> short_days = {"Mon", "Tue", "Wed", "Thu",
                                                        "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> long_days = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Leap years in [1, y).
std::int64_t leaps_before(std::int64_t y) { return (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400; }

// Days from 1970-01-01 to January 1st of year y (y >= 1).
std::int64_t days_to_year(std::int64_t y) {
    return (y - 1970) * 365 + leaps_before(y) - leaps_before(1970);
}

int days_in_month(std::int64_t y, int m) {
    constexpr std::array<int, 12> days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[static_cast<std::size_t>(m - 1)];
}

std::int64_t year_of(std::int64_t unix_s) {
    if (unix_s < 0) return 1970;
    const std::int64_t days = unix_s / 86400;
    std::int64_t y = 1970 + days / 366;  // never past the answer
    while (days_to_year(y + 1) <= days) ++y;
    return y;
}

// A left-to-right reader over one header value; every step fails closed.
class Cursor {
public:
    explicit Cursor(std::string_view s) : rest_(s) {}

    bool literal(std::string_view lit) {
        if (rest_.substr(0, lit.size()) != lit) return false;
        rest_.remove_prefix(lit.size());
        return true;
    }

    // Exactly n digits.
    std::optional<int> fixed_digits(std::size_t n) {
        if (rest_.size() < n) return std::nullopt;
        int v = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const char c = rest_[i];
            if (c < '0' || c > '9') return std::nullopt;
            v = v * 10 + (c - '0');
        }
        rest_.remove_prefix(n);
        return v;
    }

    // One of names; returns its index. Longest names first is not needed:
    // no name in one list is a prefix of another.
    template <std::size_t N>
    std::optional<int> one_of(const std::array<std::string_view, N>& names) {
        for (std::size_t i = 0; i < N; ++i) {
            if (literal(names[i])) return static_cast<int>(i);
        }
        return std::nullopt;
    }

    bool done() const { return rest_.empty(); }
    char peek() const { return rest_.empty() ? '\0' : rest_.front(); }

private:
    std::string_view rest_;
};

struct Civil {
    std::int64_t year = 0;
    int month = 0;  // 1..12
    int day = 0;
    int hour = 0;
    int minute = 0;
    int second = 0;
};

bool time_of_day(Cursor& c, Civil& t) {
    auto h = c.fixed_digits(2);
    if (!h || !c.literal(":")) return false;
    auto m = c.fixed_digits(2);
    if (!m || !c.literal(":")) return false;
    auto s = c.fixed_digits(2);
    if (!s) return false;
    t.hour = *h;
    t.minute = *m;
    t.second = *s;
    return true;
}

bool month(Cursor& c, Civil& t) {
    auto m = c.one_of(month_names);
    if (!m) return false;
    t.month = *m + 1;
    return true;
}

// IMF-fixdate, after "Sun, ": "06 Nov 1994 08:49:37 GMT"
bool imf_fixdate(Cursor& c, Civil& t) {
    auto d = c.fixed_digits(2);
    if (!d || !c.literal(" ") || !month(c, t) || !c.literal(" ")) return false;
    auto y = c.fixed_digits(4);
    if (!y || !c.literal(" ") || !time_of_day(c, t) || !c.literal(" GMT")) return false;
    t.day = *d;
    t.year = *y;
    return c.done();
}

// RFC 850, after "Sunday, ": "06-Nov-94 08:49:37 GMT"
bool rfc850_date(Cursor& c, Civil& t, std::int64_t now_unix_s) {
    auto d = c.fixed_digits(2);
    if (!d || !c.literal("-") || !month(c, t) || !c.literal("-")) return false;
    auto yy = c.fixed_digits(2);
    if (!yy || !c.literal(" ") || !time_of_day(c, t) || !c.literal(" GMT")) return false;
    // RFC 9110 5.6.7: a two-digit year that appears more than 50 years in
    // the future is the most recent past year with those digits.
    const std::int64_t now_year = year_of(now_unix_s);
    std::int64_t y = now_year - now_year % 100 + *yy;
    if (y > now_year + 50) y -= 100;
    t.day = *d;
    t.year = y;
    return c.done();
}

// asctime, after "Sun ": "Nov  6 08:49:37 1994"
bool asctime_date(Cursor& c, Civil& t) {
    if (!month(c, t) || !c.literal(" ")) return false;
    std::optional<int> d;
    if (c.peek() == ' ') {
        c.literal(" ");
        d = c.fixed_digits(1);
    } else {
        d = c.fixed_digits(2);
    }
    if (!d || !c.literal(" ") || !time_of_day(c, t) || !c.literal(" ")) return false;
    auto y = c.fixed_digits(4);
    if (!y) return false;
    t.day = *d;
    t.year = *y;
    return c.done();
}

std::optional<std::int64_t> to_unix_s(const Civil& t) {
    if (t.year < 1 || t.month < 1 || t.month > 12) return std::nullopt;
    if (t.day < 1 || t.day > days_in_month(t.year, t.month)) return std::nullopt;
    if (t.hour > 23 || t.minute > 59 || t.second > 60) return std::nullopt;  // 60: leap second
    std::int64_t days = days_to_year(t.year);
    for (int m = 1; m < t.month; ++m) days += days_in_month(t.year, m);
    days += t.day - 1;
    return days * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
}

}  // namespace

std::optional<std::int64_t> parse_http_date(std::string_view value, std::int64_t now_unix_s) {
    const std::string_view s = trim_ows(value);
    Civil t;
    {
        Cursor c(s);
        if (c.one_of(long_days) && c.literal(", ") && rfc850_date(c, t, now_unix_s)) {
            return to_unix_s(t);
        }
    }
    Cursor c(s);
    if (!c.one_of(short_days)) return std::nullopt;
    if (c.literal(", ")) return imf_fixdate(c, t) ? to_unix_s(t) : std::nullopt;
    if (c.literal(" ")) return asctime_date(c, t) ? to_unix_s(t) : std::nullopt;
    return std::nullopt;
}

std::optional<std::int64_t> parse_retry_after_ms_value(std::string_view value) {
    return parse_decimal_scaled(value, 1, Rounding::up);
}

std::optional<std::int64_t> parse_retry_after_value(std::string_view value,
                                                    std::int64_t now_unix_s) {
    if (auto seconds = parse_decimal_scaled(value, 1000, Rounding::up)) return seconds;
    auto date = parse_http_date(value, now_unix_s);
    if (!date) return std::nullopt;
    if (*date <= now_unix_s) return 0;
    return (*date - now_unix_s) * 1000;
}

std::optional<std::int64_t> retry_after_ms(std::optional<std::string_view> retry_after_ms_header,
                                           std::optional<std::string_view> retry_after_header,
                                           std::int64_t now_unix_s) {
    if (retry_after_ms_header) {
        if (auto ms = parse_retry_after_ms_value(*retry_after_ms_header)) return ms;
    }
    if (retry_after_header) return parse_retry_after_value(*retry_after_header, now_unix_s);
    return std::nullopt;
}

}  // namespace modelproxy::policy
