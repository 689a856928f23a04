// The simulation's rows: one proxy config each, written in the YAML of
// docs/behaviour.md sections 3 and 13. Every row has the same route timers
// and retry catalog, scaled with the timeline, so they differ only in what
// section 13 adds: "v1" is one route to the primary (no models block, no
// fallback, breaker off); "fallback only" adds the fallback route, the
// models block naming it, and the first-byte timer, breaker still off;
// "fallback and breaker" turns the breaker on with one probe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::outage {

enum class RowKind { v1, fallback, breaker };

struct RowSettings {
    double scale = 1;                // times the timeline and every proxy time below
    std::uint16_t primary_port = 0;
    std::uint16_t fallback_port = 0;
    bool breaker_key = true;         // false: leave routes[].breaker out (a binary without section 13)
};

// The proxy times the rows share, at scale 1 (milliseconds).
struct RowTimes {
    static constexpr double connect_timeout = 1000;
    static constexpr double turn_timeout = 10000;      // routes[].timeout_ms
    static constexpr double stream_idle = 5000;
    static constexpr double first_byte = 1000;         // rows with a fallback
    static constexpr double base_delay = 250;
    static constexpr double max_delay = 2000;
    static constexpr double min_attempt = 500;
    static constexpr double breaker_window = 10000;
    static constexpr double open = 1000;
    static constexpr double max_open = 5000;
};
inline constexpr int kMaxAttempts = 4;
inline constexpr int kAttemptsPerCandidate = 2;
inline constexpr int kConsecutiveFailures = 5;
inline constexpr int kProbes = 1;

inline std::string_view to_string(RowKind r) {
    switch (r) {
        case RowKind::v1: return "v1";
        case RowKind::fallback: return "fallback only";
        case RowKind::breaker: return "fallback and breaker";
    }
    return "?";
}

// A scaled time in whole milliseconds, at least 10 (the config's floor for timers).
long scaled_ms(double ms, double scale);

std::string row_config(RowKind row, const RowSettings& settings);

// The client model every turn asks for, and its fallback.
inline constexpr std::string_view kModel = "gpt-4o";
inline constexpr std::string_view kFallbackModel = "gpt-4o-mini";

}  // namespace modelproxy::outage
