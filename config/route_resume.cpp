// A route's `resume` block (docs/behaviour.md section 16): whether and how far
// a stream cut after publication is continued. The block holds no rule across
// its keys: any combination in range is a valid policy.
#include "config/loader.hpp"

namespace modelproxy::config::detail {

void read_route_resume(MapReader& route_reader, Route& route, Problems& problems) {
    const YAML::Node* node = route_reader.find("resume");
    const std::string path = route_reader.path_of("resume");
    if (node == nullptr || !expect_map(*node, path, problems)) {
        return;
    }
    // `resume: {}` is accepted and leaves resume off, as an absent block does:
    // unlike an empty quota it cannot be mistaken for a limit.
    MapReader reader(*node, path, "routes[].resume", problems);
    reader.boolean("enabled", route.resume.enabled);
    reader.integer("max_resumes", route.resume.max_resumes);
    reader.integer("max_offset", route.resume.max_offset);
    reader.boolean("only_deterministic", route.resume.only_deterministic);
}

}  // namespace modelproxy::config::detail
