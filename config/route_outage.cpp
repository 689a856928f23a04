// A route's keys of docs/behaviour.md section 13: its weight among a model's
// deployments, the first-byte and first-token timers, and its breaker.
#include "config/loader.hpp"

namespace modelproxy::config::detail {
namespace {

// A timer of section 13 is off (0) or at most the route's turn deadline: a
// longer one could never fire. The problem goes on the timer, the key that
// set the value; a refused value or a refused timeout_ms is not judged again.
void check_timer(MapReader& reader, std::string_view key, std::int64_t value, const Route& route,
                 const Problems& problems) {
    if (!reader.has(key) || value == 0 || problems.has(reader.path_of(key)) ||
        problems.has(reader.path_of("timeout_ms"))) {
        return;
    }
    if (value > route.timeout_ms) {
        reader.problem(key, "must be <= timeout_ms (" + std::to_string(route.timeout_ms) + "), got " +
                                std::to_string(value));
    }
}

void read_breaker(MapReader& route_reader, policy::BreakerConfig& breaker, Problems& problems) {
    const YAML::Node* node = route_reader.find("breaker");
    const std::string path = route_reader.path_of("breaker");
    if (node == nullptr || !expect_map(*node, path, problems)) {
        return;
    }
    MapReader reader(*node, path, "routes[].breaker", problems);
    reader.boolean("enabled", breaker.enabled);
    reader.integer("consecutive_failures", breaker.consecutive_failures);
    reader.decimal("failure_ratio", breaker.failure_ratio);
    reader.integer("min_attempts", breaker.min_attempts);
    reader.integer("window_ms", breaker.window_ms);
    const bool open_ok = reader.integer("open_ms", breaker.open_ms) || !reader.has("open_ms");
    const bool max_ok = reader.integer("max_open_ms", breaker.max_open_ms) || !reader.has("max_open_ms");
    reader.integer("probes", breaker.probes);
    reader.boolean("fail_fast", breaker.fail_fast);
    // open_ms <= max_open_ms: on max_open_ms when this map sets it (its range
    // starts at open_ms), else on open_ms.
    if (!open_ok || !max_ok || breaker.open_ms <= breaker.max_open_ms) {
        return;
    }
    if (reader.has("max_open_ms")) {
        reader.problem("max_open_ms", "must be >= open_ms (" + std::to_string(breaker.open_ms) + "), got " +
                                          std::to_string(breaker.max_open_ms));
    } else {
        reader.problem("open_ms", "must be <= max_open_ms (" + std::to_string(breaker.max_open_ms) + "), got " +
                                      std::to_string(breaker.open_ms));
    }
}

}  // namespace

void read_route_outage(MapReader& reader, Route& route, Problems& problems) {
    reader.integer("weight", route.weight);
    reader.integer("first_byte_timeout_ms", route.first_byte_timeout_ms);
    reader.integer("first_token_timeout_ms", route.first_token_timeout_ms);
    check_timer(reader, "first_byte_timeout_ms", route.first_byte_timeout_ms, route, problems);
    check_timer(reader, "first_token_timeout_ms", route.first_token_timeout_ms, route, problems);
    read_breaker(reader, route.breaker, problems);
}

}  // namespace modelproxy::config::detail
