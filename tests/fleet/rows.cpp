#include "fleet/rows.hpp"

#include <algorithm>

namespace modelproxy::fleet {

std::int64_t replica_share(std::int64_t requests_per_minute, int replicas) {
    return std::max<std::int64_t>(1, requests_per_minute / std::max(1, replicas));
}

std::string row_config(RowKind row, const RowSettings& s) {
    std::string y = "# the fleet simulation's row \"" + std::string(to_string(row)) + "\" (tests/fleet/rows.cpp)\n";
    y += "limits: { drain_ms: 2000 }\n";
    if (is_shared(row)) y += "fleet:\n  redis: " + s.redis_url + "\n";
    y += "routes:\n";
    y += "  - name: " + std::string(kRoute) + "\n";
    y += "    upstream: http://127.0.0.1:" + std::to_string(s.provider_port) + "/v1\n";
    y += "    timeout_ms: " + std::to_string(kTurnTimeoutMs) + "\n";
    y += "    models: [" + std::string(kModel) + "]\n";
    if (is_shared(row))
        y += "    quota: { requests_per_minute: " + std::to_string(s.requests_per_minute) +
             ", tokens_per_minute: " + std::to_string(s.tokens_per_minute) + " }\n";
    else
        y += "    quota: { requests_per_minute: " + std::to_string(replica_share(s.requests_per_minute, s.replicas)) +
             " }\n";
    return y;
}

}  // namespace modelproxy::fleet
