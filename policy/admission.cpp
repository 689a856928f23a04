#include "policy/admission.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace modelproxy::policy {
namespace {

// A product or sum of binary fractions can land just below the integer it
// means (0.29 x 100 is 28.999999999999996; ten times 10 + 0.1 is
// 10.999999999999996): floors are taken with this margin.
constexpr double kFloorMargin = 1e-9;

int floor_int(double x) {
    const double f = std::floor(x + kFloorMargin);
    if (!(f > 0)) return 0;  // also NaN
    if (f >= static_cast<double>(std::numeric_limits<int>::max())) return std::numeric_limits<int>::max();
    return static_cast<int>(f);
}

}  // namespace

int replay_budget(int turns_in_flight, const RetryConfig& retry) {
    const double ratio = std::max(0.0, retry.budget_ratio);
    const int by_ratio = floor_int(ratio * static_cast<double>(std::max(0, turns_in_flight)));
    return std::max(std::max(0, retry.budget_min_concurrency), by_ratio);
}

bool replay_within_budget(int replays_in_flight, int turns_in_flight, const RetryConfig& retry) {
    return std::max(1, replays_in_flight) <= replay_budget(turns_in_flight, retry);
}

int backpressure_units(const BackpressureFacts& failure, const Backpressure& weights) {
    if (failure.http_status == 429) return weights.rate_limit;
    if (failure.http_status == 529 || failure.overloaded) return weights.overload;
    if (failure.cls == ErrorClass::server) return weights.server;
    return 0;
}

AdmissionLimit::AdmissionLimit(const AdmissionConfig& config, Time now)
    : config_(config), value_(config.initial_limit), quiet_start_(now) {
    clamp();
}

void AdmissionLimit::clamp() {
    // min_limit wins over a max_limit below it: the limit never reaches 0.
    const double lo = std::max(1, config_.min_limit);
    const double hi = std::max(lo, static_cast<double>(config_.max_limit));
    if (!(value_ >= lo)) value_ = lo;  // also NaN
    if (value_ > hi) value_ = hi;
}

int AdmissionLimit::floor_limit() const { return std::max(std::max(1, config_.min_limit), floor_int(value_)); }

void AdmissionLimit::credit_quiet(Time now) {
    if (now <= quiet_start_) return;
    const auto whole_s = std::chrono::duration_cast<std::chrono::seconds>(now - quiet_start_).count();
    if (whole_s <= quiet_credited_s_) return;
    value_ += static_cast<double>(whole_s - quiet_credited_s_);
    quiet_credited_s_ = whole_s;
    clamp();
}

int AdmissionLimit::limit(Time now) {
    credit_quiet(now);
    return floor_limit();
}

double AdmissionLimit::value(Time now) {
    credit_quiet(now);
    return value_;
}

bool AdmissionLimit::on_backpressure(int units, Time now) {
    if (units <= 0) return false;
    // The quiet seconds before this failure were quiet: they count first.
    credit_quiet(now);
    if (now > quiet_start_) {
        quiet_start_ = now;
        quiet_credited_s_ = 0;
    }
    if (last_decrease_ && now - *last_decrease_ < std::chrono::seconds(1)) return false;
    value_ *= std::pow(config_.decrease, units);
    clamp();
    last_decrease_ = now;
    return true;
}

void AdmissionLimit::on_success(Time now) {
    credit_quiet(now);
    value_ += 1.0 / static_cast<double>(floor_limit());
    clamp();
}

void AdmissionLimit::reconfigure(const AdmissionConfig& config) {
    config_ = config;
    clamp();
}

}  // namespace modelproxy::policy
