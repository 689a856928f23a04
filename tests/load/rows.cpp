#include "load/rows.hpp"

namespace modelproxy::load {

std::string row_config(RowKind row, const RowSettings& s) {
    std::string y = "# the load simulation's row \"" + std::string(to_string(row)) + "\" (tests/load/rows.cpp)\n";
    y += "limits: { drain_ms: 2000 }\n";
    if (s.section14_keys) {
        if (row == RowKind::v1) {
            y += "retry:\n  budget_min_concurrency: 10000\n";
            y += "admission:\n  enabled: false\n";
        } else {
            y += "retry:\n  budget_ratio: 0.2\n  budget_min_concurrency: 3\n";
            y += "admission:\n";
            y += row == RowKind::budget ? "  enabled: false\n" : "  enabled: true\n";
            if (row != RowKind::budget)
                y += std::string("  honour_ratelimit_headers: ") + (row == RowKind::pacing ? "true" : "false") + "\n";
        }
    }
    y += "routes:\n";
    y += "  - name: " + std::string(kRoute) + "\n";
    y += "    upstream: http://127.0.0.1:" + std::to_string(s.provider_port) + "/v1\n";
    y += "    timeout_ms: " + std::to_string(kTurnTimeoutMs) + "\n";
    y += "    models: [" + std::string(kModel) + "]\n";
    return y;
}

}  // namespace modelproxy::load
