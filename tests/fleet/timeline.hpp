// The fleet simulation's timeline (docs/behaviour.md section 15): the
// callers run from t0 for run_ms; in the row "shared, Redis killed" the
// driver kills redis-server at redis_down_start() and starts it again, on
// the same port and empty (nothing is persisted), at redis_down_end().
// Every time of a run is in milliseconds since t0, on the outage
// simulation's clock (tests/outage/timeline.hpp).
//
// The kill comes 10 s before the run's first minute ends, unscaled: offered
// 3 x the quota, a fleet that keeps it uses the minute's requests early and
// has room again only as the first minute's buckets leave its window, so the
// callers come back around 60 s, and the outage must span that turn to
// measure anything. A scaled run keeps it there and scales its length.
#pragma once

#include "outage/timeline.hpp"

#include <algorithm>
#include <cmath>

namespace modelproxy::fleet {

using outage::Clock;
using outage::ms_since;

struct Timeline {
    double run_ms = 120000;         // the callers send turns from t0 for this long
    double redis_down_at = 50000;   // the kill (not scaled)
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

    // The span the per-minute figures are taken over: the run's whole
    // minutes (at least one).
    double minutes_ms() const { return std::max(1.0, std::floor(run_ms / 60000)) * 60000; }

    // run_ms and redis_down_ms multiplied by `scale` (at 0.5 the outage
    // ends with the run).
    static Timeline scaled(double scale) {
        Timeline t;
        t.run_ms *= scale;
        t.redis_down_ms *= scale;
        return t;
    }
};

}  // namespace modelproxy::fleet
