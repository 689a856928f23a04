#include "fleet/minute_window.hpp"

#include <cmath>

namespace modelproxy::fleet {

namespace {

std::int64_t second_of(double ms) { return static_cast<std::int64_t>(std::floor(ms / 1000)); }

std::size_t slot_of(std::int64_t second) { return static_cast<std::size_t>(((second % 60) + 60) % 60); }

}  // namespace

MinuteWindow::State MinuteWindow::peek(double now_ms) const {
    const std::int64_t now = second_of(now_ms);
    State s;
    s.limit = per_minute_;
    std::int64_t used = 0, oldest = INT64_MAX;
    for (const Bucket& b : buckets_) {
        if (b.count == 0 || b.second < now - 59 || b.second > now) continue;
        used += b.count;
        if (b.second < oldest) oldest = b.second;
    }
    s.remaining = used < per_minute_ ? per_minute_ - used : 0;
    s.reset_ms = used == 0 ? 0 : static_cast<double>(oldest + 60) * 1000 - now_ms;
    return s;
}

MinuteWindow::State MinuteWindow::take(double now_ms) {
    State s = peek(now_ms);
    if (s.remaining == 0) return s;
    const std::int64_t now = second_of(now_ms);
    Bucket& b = buckets_[slot_of(now)];
    if (b.second != now) b = Bucket{now, 0};
    ++b.count;
    s.admitted = true;
    --s.remaining;
    if (s.reset_ms == 0) s.reset_ms = static_cast<double>(now + 60) * 1000 - now_ms;
    return s;
}

}  // namespace modelproxy::fleet
