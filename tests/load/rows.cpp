#include "load/rows.hpp"

namespace modelproxy::load {

std::string row_config(RowKind row, const RowSettings& s) {
    std::string y = "# the load simulation's row \"" + std::string(to_string(row)) + "\" (tests/load/rows.cpp)\n";
    y += "limits: { drain_ms: 2000 }\n";
    if (s.budget_keys)
        y += row == RowKind::v1 ? "retry:\n  budget_min_concurrency: 10000\n"
                                : "retry:\n  budget_ratio: 0.2\n  budget_min_concurrency: 3\n";
    if (s.admission_keys) {
        y += "admission:\n";
        y += row == RowKind::v1 || row == RowKind::budget ? "  enabled: false\n" : "  enabled: true\n";
        if (row == RowKind::admission || row == RowKind::pacing)
            y += std::string("  honour_ratelimit_headers: ") + (row == RowKind::pacing ? "true" : "false") + "\n";
    }
    y += "routes:\n";
    y += "  - name: " + std::string(kRoute) + "\n";
    y += "    upstream: http://127.0.0.1:" + std::to_string(s.provider_port) + "/v1\n";
    y += "    timeout_ms: " + std::to_string(kTurnTimeoutMs) + "\n";
    y += "    models: [" + std::string(kModel) + "]\n";
    return y;
}

}  // namespace modelproxy::load
