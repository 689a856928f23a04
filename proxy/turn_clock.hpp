// Where a turn reads the time and draws its jitter from (docs/behaviour.md
// section 6): the server's, the real steady clock and a per-thread random
// generator unless a test sets others. The turn passes what they give to the
// pure decisions (policy/turn_replays.hpp) as values, so those are tested
// with pinned times and draws, without sockets or sleeps.
#pragma once

#include <chrono>

namespace modelproxy::proxy {

// Uniform in [0, 1), from a per-thread generator seeded once.
double uniform_draw();

// Plain function pointers: a call per decision, no allocation, no virtual call.
struct TurnClock {
    std::chrono::steady_clock::time_point (*now)() = &std::chrono::steady_clock::now;
    double (*draw)() = &uniform_draw;
};

}  // namespace modelproxy::proxy
