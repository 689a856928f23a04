// The fleet simulation's rows: one proxy config each, the same for every
// replica of the row (each is started with --listen 127.0.0.1:0 and
// --workers 1, so only its port differs), written in the YAML of
// docs/behaviour.md sections 3 and 15. Every row has the same one route to
// the fake provider with timeout_ms 60000 and section 14's defaults (the
// budget on, admission off: no retry or admission key is written), so the
// rows differ only in what section 15 adds:
//   "per replica": the route's quota is the replica's share, requests_per_minute
//       Q / replicas (rounded down, at least 1), and there is no fleet block;
//   "shared": fleet.redis names the driver's redis-server, and the route's
//       quota is the provider's, requests_per_minute Q and tokens_per_minute T;
//   "shared, Redis killed": the same config; the driver kills redis-server
//       for a while in the middle of the run (timeline.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace modelproxy::fleet {

enum class RowKind { per_replica, shared, killed };

struct RowSettings {
    std::uint16_t provider_port = 0;
    std::string redis_url;              // the shared rows' fleet.redis
    std::int64_t requests_per_minute = 6000;   // Q, the provider's
    std::int64_t tokens_per_minute = 1200000;  // T, the shared rows' (generous: 200 per request)
    int replicas = 50;
};

inline constexpr long kTurnTimeoutMs = 60000;  // routes[].timeout_ms
inline constexpr std::string_view kModel = "gpt-4o";
inline constexpr std::string_view kRoute = "provider";

inline std::string_view to_string(RowKind r) {
    switch (r) {
        case RowKind::per_replica: return "per replica";
        case RowKind::shared: return "shared";
        case RowKind::killed: return "shared, Redis killed";
    }
    return "?";
}

// The name --rows takes and the row's files are named by.
inline std::string_view slug(RowKind r) {
    switch (r) {
        case RowKind::per_replica: return "per-replica";
        case RowKind::shared: return "shared";
        case RowKind::killed: return "killed";
    }
    return "row";
}

inline bool is_shared(RowKind r) { return r != RowKind::per_replica; }

// The replica's requests per minute in the row "per replica".
std::int64_t replica_share(std::int64_t requests_per_minute, int replicas);

std::string row_config(RowKind row, const RowSettings& settings);

}  // namespace modelproxy::fleet
