// The pieces of load_config shared between load.cpp (the document, limits,
// clients, the retry catalog, boundary) and routes.cpp (routes and models).
// Internal to config/.
#pragma once

#include "config/config.hpp"
#include "config/yaml_reader.hpp"

#include <vector>

namespace modelproxy::config::detail {

// Reads the keys of a `retry:` map (the catalog or a route's override) over
// the values already in `retry`, so an override merges with the catalog.
void read_retry(MapReader& reader, policy::RetryConfig& retry);

// base_delay_ms <= max_delay_ms. `reader` is the map that set them; the
// problem goes on whichever of the two keys it holds (base_delay_ms first).
// Skipped when either value was refused already.
void check_delays(const MapReader& reader, const policy::RetryConfig& retry, Problems& problems);

// The `routes:` list, with every per-route and cross-route rule of docs/behaviour.md
// section 3. `catalog` is the top-level retry, merged into each route.
std::vector<Route> read_routes(const YAML::Node& list, const policy::RetryConfig& catalog, Problems& problems);

}  // namespace modelproxy::config::detail
