#include "policy/quota_window.hpp"

#include <algorithm>

namespace modelproxy::policy {

std::int64_t QuotaWindow::ms_of(Time t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::int64_t QuotaWindow::second_of(Time t) {
    const std::int64_t ms = ms_of(t);
    return ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
}

void QuotaWindow::expire(std::int64_t second) {
    for (Bucket& b : buckets_)
        if (b.second >= 0 && b.second <= second - 61) b = Bucket{};
}

QuotaAnswer QuotaWindow::reserve(const QuotaAsk& ask, Time now) {
    const std::int64_t second = second_of(now);
    expire(second);
    std::int64_t tokens = std::max<std::int64_t>(ask.tokens, 0);
    if (ask.tokens_per_minute > 0) tokens = std::min(tokens, ask.tokens_per_minute);
    std::int64_t requests_in = 0, tokens_in = 0;
    for (const Bucket& b : buckets_) {
        if (b.second < 0) continue;
        requests_in += b.requests;
        tokens_in += b.tokens;
    }
    const auto fits = [&](std::int64_t r, std::int64_t t) {
        return (ask.requests_per_minute <= 0 || r + 1 <= ask.requests_per_minute) &&
               (ask.tokens_per_minute <= 0 || t + tokens <= ask.tokens_per_minute);
    };
    if (fits(requests_in, tokens_in)) {
        Bucket& b = buckets_[static_cast<std::size_t>(((second % 61) + 61) % 61)];
        if (b.second != second) b = Bucket{second, 0, 0};
        ++b.requests;
        b.tokens += tokens;
        return {true, second, tokens, 0};
    }
    // Drop the oldest buckets, in time order, until the reservation fits:
    // it fits once the last one dropped has left the window.
    std::array<Bucket, 61> sorted = buckets_;
    std::sort(sorted.begin(), sorted.end(), [](const Bucket& a, const Bucket& b) { return a.second < b.second; });
    for (const Bucket& b : sorted) {
        if (b.second < 0) continue;
        requests_in -= b.requests;
        tokens_in -= b.tokens;
        if (fits(requests_in, tokens_in)) {
            // Bucket b.second leaves the window when second b.second + 61 begins.
            const std::int64_t wait = (b.second + 61) * 1000 - ms_of(now);
            return {false, 0, 0, std::max<std::int64_t>(wait, 1)};
        }
    }
    return {false, 0, 0, 61000};  // cannot fit at all (tokens above the limit after the cap): a minute
}

void QuotaWindow::settle(std::int64_t second, std::int64_t delta, Time now) {
    expire(second_of(now));
    Bucket& b = buckets_[static_cast<std::size_t>(((second % 61) + 61) % 61)];
    if (b.second != second) return;
    b.tokens = std::max<std::int64_t>(b.tokens + delta, 0);
}

void QuotaWindow::cancel(std::int64_t second, std::int64_t tokens, Time now) {
    expire(second_of(now));
    Bucket& b = buckets_[static_cast<std::size_t>(((second % 61) + 61) % 61)];
    if (b.second != second) return;
    b.requests = std::max<std::int64_t>(b.requests - 1, 0);
    b.tokens = std::max<std::int64_t>(b.tokens - tokens, 0);
}

std::int64_t QuotaWindow::requests(Time now) {
    expire(second_of(now));
    std::int64_t n = 0;
    for (const Bucket& b : buckets_) n += b.second >= 0 ? b.requests : 0;
    return n;
}

std::int64_t QuotaWindow::tokens(Time now) {
    expire(second_of(now));
    std::int64_t n = 0;
    for (const Bucket& b : buckets_) n += b.second >= 0 ? b.tokens : 0;
    return n;
}

}  // namespace modelproxy::policy
