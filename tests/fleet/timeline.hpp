// The fleet simulation's timeline (docs/behaviour.md section 15): the
// callers run from t0 for run_ms; in the row "shared, Redis killed" the
// driver kills redis-server at redis_down_start() and starts it again, on
// the same port and empty (nothing is persisted), at redis_down_end().
// Every time of a run is in milliseconds since t0, on the outage
// simulation's clock (tests/outage/timeline.hpp).
#pragma once

#include "outage/timeline.hpp"

namespace modelproxy::fleet {

using outage::Clock;
using outage::ms_since;

struct Timeline {
    double run_ms = 120000;         // the callers send turns from t0 for this long
    double redis_down_at = 50000;   // the kill, in the middle of the run
    double redis_down_ms = 20000;   // until the restart
    // The outage window the failed turns are counted in runs on past the
    // restart by this much: a replica shares again only after 3 s of good
    // pings (section 15), and the turns of that changeover count too. Not
    // scaled: it is the proxy's own time.
    double window_after_ms = 5000;

    double redis_down_start() const { return redis_down_at; }
    double redis_down_end() const { return redis_down_at + redis_down_ms; }
    // [window_start, window_end): where failed turns are counted (by when they ended).
    double window_start() const { return redis_down_start(); }
    double window_end() const { return redis_down_end() + window_after_ms; }

    // Every length but window_after_ms multiplied by `scale`.
    static Timeline scaled(double scale) {
        Timeline t;
        t.run_ms *= scale;
        t.redis_down_at *= scale;
        t.redis_down_ms *= scale;
        return t;
    }
};

}  // namespace modelproxy::fleet
