// The load simulation's timeline (docs/behaviour.md section 14): the fake
// provider is healthy but rate-limited for warm_ms, answers every request 503
// for outage_ms, then is healthy again for after_ms, while the callers run
// from t0 to the end. Every time of a run is in milliseconds since t0, on the
// outage simulation's clock (tests/outage/timeline.hpp).
#pragma once

#include "outage/timeline.hpp"

namespace modelproxy::load {

using outage::Clock;
using outage::ms_since;

struct Timeline {
    double warm_ms = 30000;    // healthy and rate-limited, from t0: the warm-up and adaptation
    double outage_ms = 20000;  // every request answered 503
    double after_ms = 40000;   // healthy again, to the end of the load
    double settle_ms = 10000;  // the pre-outage goodput is taken from here to the outage
    double tail_ms = 10000;    // the adapted 429 share: the last tail_ms before the outage and of the run

    double down_start() const { return warm_ms; }
    double down_end() const { return warm_ms + outage_ms; }
    double total() const { return down_end() + after_ms; }
    bool down(double ms) const { return ms >= down_start() && ms < down_end(); }

    // Every length multiplied by `scale` (a smoke run's shorter timeline).
    static Timeline scaled(double scale) {
        Timeline t;
        t.warm_ms *= scale;
        t.outage_ms *= scale;
        t.after_ms *= scale;
        t.settle_ms *= scale;
        t.tail_ms *= scale;
        return t;
    }
};

}  // namespace modelproxy::load
