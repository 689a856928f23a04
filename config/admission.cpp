// The `admission` block of docs/behaviour.md section 14: the catalog and a
// route's override merged over it key by key (`backpressure` too), the order
// of the limits, and queue_timeout_ms held under each route's timeout_ms.
#include "config/loader.hpp"

namespace modelproxy::config::detail {
namespace {

constexpr std::string_view limits_rule = " (min_limit <= initial_limit <= max_limit)";

// queue_timeout_ms is 0 (the turn deadline) or at most the route's
// timeout_ms: a longer wait could never end in a slot. The problem goes where
// the value was written: the route's override, else the catalog (naming the
// route). The default is never judged: the deadline bounds the wait anyway.
void check_queue_timeout(const MapReader& route_reader, const MapReader* own, const Route& route,
                         const Catalogs& catalogs, Problems& problems) {
    const std::string timeout_path = route_reader.path_of("timeout_ms");
    const std::int64_t wait = route.admission.queue_timeout_ms;
    if (problems.has(timeout_path) || wait == 0 || wait <= route.timeout_ms) {
        return;
    }
    if (own != nullptr && own->has("queue_timeout_ms")) {
        const std::string path = own->path_of("queue_timeout_ms");
        if (!problems.has(path)) {  // a refused value is not judged again
            problems.add(*own->find("queue_timeout_ms"), path,
                         "must be <= timeout_ms (" + std::to_string(route.timeout_ms) + "), got " +
                             std::to_string(wait));
        }
        return;
    }
    if (catalogs.queue_timeout) {
        problems.add(*catalogs.queue_timeout, "admission.queue_timeout_ms",
                     "must be <= " + timeout_path + " (" + std::to_string(route.timeout_ms) + "), got " +
                         std::to_string(wait));
    }
}

}  // namespace

void read_admission(MapReader& reader, policy::AdmissionConfig& admission, Problems& problems) {
    reader.boolean("enabled", admission.enabled);
    reader.integer("initial_limit", admission.initial_limit);
    reader.integer("min_limit", admission.min_limit);
    reader.integer("max_limit", admission.max_limit);
    reader.decimal("decrease", admission.decrease);
    if (const YAML::Node* node = reader.find("backpressure")) {
        const std::string path = reader.path_of("backpressure");
        if (expect_map(*node, path, problems)) {
            MapReader units(*node, path, "admission.backpressure", problems);
            units.integer("rate-limit", admission.backpressure.rate_limit);
            units.integer("overload", admission.backpressure.overload);
            units.integer("server", admission.backpressure.server);
        }
    }
    reader.integer("queue_timeout_ms", admission.queue_timeout_ms);
    reader.boolean("honour_ratelimit_headers", admission.honour_ratelimit_headers);
}

void check_limits(const MapReader& reader, const policy::AdmissionConfig& admission, Problems& problems) {
    for (const char* key : {"min_limit", "initial_limit", "max_limit"}) {
        if (problems.has(reader.path_of(key)) || problems.has(join_key("admission", key))) {
            return;  // a refused value would only repeat as a second problem
        }
    }
    struct Pair {
        const char* low;
        int low_value;
        const char* high;
        int high_value;
    };
    const Pair pairs[] = {
        {"min_limit", admission.min_limit, "max_limit", admission.max_limit},
        {"min_limit", admission.min_limit, "initial_limit", admission.initial_limit},
        {"initial_limit", admission.initial_limit, "max_limit", admission.max_limit},
    };
    for (const Pair& pair : pairs) {
        const bool has_low = reader.has(pair.low);
        if ((!has_low && !reader.has(pair.high)) || pair.low_value <= pair.high_value) {
            continue;  // holds, or neither key is set here (the catalog was checked on its own)
        }
        if (has_low) {
            problems.add(*reader.find(pair.low), reader.path_of(pair.low),
                         "must be <= " + std::string(pair.high) + " (" + std::to_string(pair.high_value) +
                             "), got " + std::to_string(pair.low_value) + std::string(limits_rule));
        } else {
            problems.add(*reader.find(pair.high), reader.path_of(pair.high),
                         "must be >= " + std::string(pair.low) + " (" + std::to_string(pair.low_value) +
                             "), got " + std::to_string(pair.high_value) + std::string(limits_rule));
        }
        return;
    }
}

void read_route_admission(MapReader& route_reader, Route& route, const Catalogs& catalogs, Problems& problems) {
    route.admission = catalogs.admission;
    const YAML::Node* node = route_reader.find("admission");
    const std::string path = route_reader.path_of("admission");
    if (node == nullptr || !expect_map(*node, path, problems)) {
        check_queue_timeout(route_reader, nullptr, route, catalogs, problems);
        return;
    }
    MapReader reader(*node, path, "admission", problems);
    read_admission(reader, route.admission, problems);
    check_limits(reader, route.admission, problems);
    check_queue_timeout(route_reader, &reader, route, catalogs, problems);
}

}  // namespace modelproxy::config::detail
