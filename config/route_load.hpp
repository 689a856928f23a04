// What `modelproxy doctor` prints of docs/behaviour.md section 14 for one
// route: its retry budget and its admission, merged from the catalogs and the
// route's overrides. Pure: a function of the loaded Route.
#pragma once

#include "config/config.hpp"

#include <string>
#include <vector>

namespace modelproxy::config {

// Two lines, after the route's retry envelope (each one line; wrapped here):
//   retry budget: budget_ratio 0.2, budget_min_concurrency 3 (replays in
//     flight to a candidate at most max(3, 0.2 x its turns in flight))
//   admission: off
// or, with both budget keys 0, "  retry budget: replays off (budget_ratio 0,
// budget_min_concurrency 0)", and with admission enabled
//   admission: on, initial_limit 64, min_limit 1, max_limit 1024, decrease
//     0.7, backpressure rate-limit 1 overload 3 server 0, queue_timeout_ms
//     5000, pacing on rate-limit headers yes
std::vector<std::string> render_route_load(const Route& route);

// "0.2": a decimal key's value as the file writes it.
std::string decimal_value(double value);

}  // namespace modelproxy::config
