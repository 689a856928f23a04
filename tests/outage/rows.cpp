#include "outage/rows.hpp"

#include <algorithm>
#include <cmath>

namespace modelproxy::outage {

long scaled_ms(double ms, double scale) { return std::max(10L, std::lround(ms * scale)); }

namespace {

std::string route(std::string_view name, std::uint16_t port, std::string_view model, RowKind row,
                  const RowSettings& s) {
    const auto ms = [&](double v) { return std::to_string(scaled_ms(v, s.scale)); };
    std::string y;
    y += "  - name: " + std::string(name) + "\n";
    y += "    upstream: http://127.0.0.1:" + std::to_string(port) + "/v1\n";
    y += "    connect_timeout_ms: " + ms(RowTimes::connect_timeout) + "\n";
    y += "    timeout_ms: " + ms(RowTimes::turn_timeout) + "\n";
    y += "    stream_idle_timeout_ms: " + ms(RowTimes::stream_idle) + "\n";
    if (row != RowKind::v1) y += "    first_byte_timeout_ms: " + ms(RowTimes::first_byte) + "\n";
    if (s.breaker_key) {
        if (row == RowKind::breaker) {
            y += "    breaker:\n";
            y += "      enabled: true\n";
            y += "      consecutive_failures: " + std::to_string(kConsecutiveFailures) + "\n";
            y += "      failure_ratio: 0.5\n";
            y += "      min_attempts: 20\n";
            y += "      window_ms: " + ms(RowTimes::breaker_window) + "\n";
            y += "      open_ms: " + ms(RowTimes::open) + "\n";
            y += "      max_open_ms: " + ms(RowTimes::max_open) + "\n";
            y += "      probes: " + std::to_string(kProbes) + "\n";
        } else {
            y += "    breaker: { enabled: false }\n";
        }
    }
    y += "    models: [" + std::string(model) + "]\n";
    return y;
}

}  // namespace

std::string row_config(RowKind row, const RowSettings& s) {
    const auto ms = [&](double v) { return std::to_string(scaled_ms(v, s.scale)); };
    std::string y = "# the outage simulation's row \"" + std::string(to_string(row)) + "\" (tests/outage/rows.cpp)\n";
    y += "limits: { drain_ms: 2000 }\n";
    y += "retry:\n";
    y += "  max_attempts: " + std::to_string(kMaxAttempts) + "\n";
    y += "  base_delay_ms: " + ms(RowTimes::base_delay) + "\n";
    y += "  max_delay_ms: " + ms(RowTimes::max_delay) + "\n";
    y += "  min_attempt_ms: " + ms(RowTimes::min_attempt) + "\n";
    y += "routes:\n";
    y += route("primary", s.primary_port, kModel, row, s);
    if (row == RowKind::v1) return y;
    y += route("fallback", s.fallback_port, kFallbackModel, row, s);
    y += "models:\n";
    y += "  - name: " + std::string(kModel) + "\n";
    y += "    attempts_per_candidate: " + std::to_string(kAttemptsPerCandidate) + "\n";
    y += "    fallbacks: [" + std::string(kFallbackModel) + "]\n";
    return y;
}

}  // namespace modelproxy::outage
