// The outage simulation's clock and the primary upstream's timeline: healthy,
// then down in three equal phases (answering 503, silent, resetting
// connections), then healthy again. Every time of a run is in milliseconds
// since the run's start (t0, when the load begins), as a double, so that a
// request, a turn and a proxy record can be placed on one axis.
#pragma once

#include <chrono>
#include <string_view>

namespace modelproxy::outage {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0, Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - t0).count();
}

enum class Phase {
    healthy,      // 200, the answer at once
    unavailable,  // 503 with an OpenAI error body
    silent,       // the request is read and never answered; held until the peer closes
    reset,        // the request is read, then the connection is reset (RST)
};

inline std::string_view to_string(Phase p) {
    switch (p) {
        case Phase::healthy: return "healthy";
        case Phase::unavailable: return "503";
        case Phase::silent: return "silent";
        case Phase::reset: return "reset";
    }
    return "?";
}

struct Timeline {
    double before_ms = 15000;  // healthy, from t0
    double phase_ms = 10000;   // each of the three down phases
    double after_ms = 15000;   // healthy again, to the end of the load

    double down_start() const { return before_ms; }
    double down_end() const { return before_ms + 3 * phase_ms; }
    double total() const { return down_end() + after_ms; }

    // The phase at `ms` since t0; healthy before t0 and after the outage.
    Phase at(double ms) const {
        if (ms < down_start() || ms >= down_end()) return Phase::healthy;
        const double into = ms - down_start();
        if (into < phase_ms) return Phase::unavailable;
        if (into < 2 * phase_ms) return Phase::silent;
        return Phase::reset;
    }

    // Every length multiplied by `scale` (a smoke run's shorter timeline).
    static Timeline scaled(double scale) {
        Timeline t;
        t.before_ms *= scale;
        t.phase_ms *= scale;
        t.after_ms *= scale;
        return t;
    }
};

}  // namespace modelproxy::outage
