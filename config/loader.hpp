// The pieces of load_config shared between load.cpp (the document, limits,
// clients, the retry catalog, boundary), routes.cpp (routes and their
// models), route_outage.cpp (a route's section 13 keys) and models_block.cpp
// (the top-level `models` block). Internal to config/.
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

// A route's weight, first-byte and first-token timers (0 or at most its
// timeout_ms, read before) and breaker (docs/behaviour.md section 13).
void read_route_outage(MapReader& reader, Route& route, Problems& problems);

// Every client model name the `routes:` node lists by name (not "*"), as
// written, whether or not the rest of its entry is valid: the models block
// is judged against these.
std::vector<std::string> listed_model_names(const YAML::Node& routes);

// The top-level `models:` list (docs/behaviour.md section 13). `listed`: the
// names routes list by name; nullptr when the routes could not be read, and
// then names are not judged against them.
std::vector<ModelPolicy> read_models_block(const YAML::Node& list, const std::vector<std::string>* listed,
                                           Problems& problems);

}  // namespace modelproxy::config::detail
