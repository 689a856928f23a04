#include "load/rate_window.hpp"

#include <cmath>

namespace modelproxy::load {

void RateWindow::roll(double now_ms) {
    const auto index = static_cast<std::int64_t>(std::floor(now_ms / window_ms_));
    if (index != window_) {
        window_ = index;
        used_ = 0;
    }
}

RateWindow::State RateWindow::take(double now_ms) {
    roll(now_ms);
    State s = peek(now_ms);
    if (used_ < per_window_) {
        ++used_;
        s.admitted = true;
        s.remaining = per_window_ - used_;
    }
    return s;
}

RateWindow::State RateWindow::peek(double now_ms) {
    roll(now_ms);
    State s;
    s.limit = per_window_;
    s.remaining = per_window_ - used_;
    s.reset_ms = static_cast<double>(window_ + 1) * window_ms_ - now_ms;
    return s;
}

std::string go_duration(double ms) {
    auto total = static_cast<long long>(std::ceil(ms));
    if (total <= 0) return "0s";
    if (total < 1000) return std::to_string(total) + "ms";
    std::string out;
    const long long hours = total / 3600000, minutes = total / 60000 % 60;
    if (hours) out += std::to_string(hours) + "h";
    if (hours || minutes) out += std::to_string(minutes) + "m";
    const long long seconds = total / 1000 % 60, millis = total % 1000;
    out += std::to_string(seconds);
    if (millis) {
        std::string frac = std::to_string(1000 + millis).substr(1);  // three digits
        while (frac.back() == '0') frac.pop_back();
        out += "." + frac;
    }
    return out + "s";
}

}  // namespace modelproxy::load
