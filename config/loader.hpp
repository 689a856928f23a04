// The pieces of load_config shared between load.cpp (the document, limits,
// clients, the retry catalog, boundary), routes.cpp (routes and their
// models), route_outage.cpp (a route's section 13 keys), admission.cpp (the
// `admission` catalog and a route's override, section 14) and
// models_block.cpp (the top-level `models` block), fleet.cpp (the
// `fleet` block and a route's `quota`, section 15) and route_resume.cpp (a
// route's `resume`, section 16). Internal to config/.
#pragma once

#include "config/config.hpp"
#include "config/yaml_reader.hpp"

#include <optional>
#include <vector>

namespace modelproxy::config::detail {

// Reads the keys of a `retry:` map (the catalog or a route's override) over
// the values already in `retry`, so an override merges with the catalog.
void read_retry(MapReader& reader, policy::RetryConfig& retry);

// base_delay_ms <= max_delay_ms. `reader` is the map that set them; the
// problem goes on whichever of the two keys it holds (base_delay_ms first).
// Skipped when either value was refused already.
void check_delays(const MapReader& reader, const policy::RetryConfig& retry, Problems& problems);

// budget_min_concurrency >= 1 while budget_ratio > 0 (docs/behaviour.md
// section 14), on the values merged into `retry`. As check_delays: the
// problem goes on whichever of the two keys `reader` holds
// (budget_min_concurrency first); skipped when it holds neither or either
// value was refused.
void check_budget(const MapReader& reader, const policy::RetryConfig& retry, Problems& problems);

// The top-level catalogs each route starts from.
struct Catalogs {
    policy::RetryConfig retry;
    policy::AdmissionConfig admission;
    // The admission catalog's queue_timeout_ms node, when it wrote a valid
    // one: a route that does not override it is judged against it there.
    std::optional<YAML::Node> queue_timeout;
};

// The `routes:` list, with every per-route and cross-route rule of docs/behaviour.md
// section 3. Each route starts from the catalogs and merges its overrides.
std::vector<Route> read_routes(const YAML::Node& list, const Catalogs& catalogs, Problems& problems);

// Reads the keys of an `admission:` map (the catalog or a route's override)
// over the values already in `admission`; `backpressure` key by key.
void read_admission(MapReader& reader, policy::AdmissionConfig& admission, Problems& problems);

// min_limit <= initial_limit <= max_limit on the values merged into
// `admission`. One problem at most, for the first broken pair (min/max,
// min/initial, initial/max) of which `reader` holds a key, on the lower key
// when it holds it, else on the higher; skipped when a value was refused.
void check_limits(const MapReader& reader, const policy::AdmissionConfig& admission, Problems& problems);

// A route's `admission`: the catalog merged with its override, the limits'
// order, and queue_timeout_ms (0, or at most the route's timeout_ms, read
// before) judged where it was written.
void read_route_admission(MapReader& route_reader, Route& route, const Catalogs& catalogs, Problems& problems);

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

// The top-level `fleet:` map (docs/behaviour.md section 15), every key
// checked; set only when it names a valid `redis` URL.
std::optional<Fleet> read_fleet(const YAML::Node& node, Problems& problems);

// A route's `quota` (section 15): at least one of its keys when present.
void read_route_quota(MapReader& route_reader, Route& route, Problems& problems);

// A route's `resume` (section 16): each key over the defaults of
// config::Resume; an absent block leaves them, and so leaves resume off.
void read_route_resume(MapReader& route_reader, Route& route, Problems& problems);

}  // namespace modelproxy::config::detail
