// What `modelproxy doctor` prints of docs/behaviour.md sections 14, 15 and
// 16: each route's retry budget and admission, merged from the catalogs and
// the route's overrides, its quota, its resume, and the fleet. Pure:
// functions of the loaded config.
#pragma once

#include "config/config.hpp"

#include <optional>
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

// The line after those two for a route with a quota (none without):
//   quota: requests_per_minute 10000, tokens_per_minute 2000000, shared by the fleet
// "no limit" for a dimension the quota leaves out, and "each replica its
// own" in place of "shared by the fleet" when `shared` is false (no
// fleet.redis).
std::optional<std::string> render_route_quota(const Route& route, bool shared);

// The line after the quota's for a route with resume enabled (none while it
// is off, the default):
//   resume: up to 1 per turn, max_offset 4096 code points, only deterministic requests
// "any request" in place of "only deterministic requests" with
// only_deterministic false.
std::optional<std::string> render_route_resume(const Route& route);

// One line, after the routes and models:
//   fleet: redis redis://127.0.0.1:6379/0, key_prefix modelproxy:, timeout_ms 50, password from VAR
// (", no password" without password_env; "rediss://" and ", tls.ca_file F"
// with TLS), or "fleet: per replica (no fleet.redis)". The URL is rebuilt
// from its parsed parts, so it can hold no password.
std::string render_fleet(const Config& config);

// The fleet's URL from its parts: scheme://HOST:PORT/DB, IPv6 in brackets.
std::string fleet_url(const Fleet& fleet);

// "0.2": a decimal key's value as the file writes it.
std::string decimal_value(double value);

}  // namespace modelproxy::config
