// The `fleet` block and a route's `quota` (docs/behaviour.md section 15):
// the Redis server replicas share state through, and the provider key's own
// limits per minute.
#include "config/loader.hpp"
#include "config/syntax.hpp"

#include <algorithm>

namespace modelproxy::config::detail {
namespace {

bool is_key_prefix_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' || c == '.' ||
           c == '_' || c == '-';
}

constexpr std::size_t max_key_prefix = 64;

// fleet.tls: only a rediss:// server is spoken to over TLS. Read whatever
// the URL, so that its keys are checked; refused unless the URL is rediss://.
void read_fleet_tls(MapReader& fleet_reader, Fleet& fleet, bool redis_ok, Problems& problems) {
    const YAML::Node* node = fleet_reader.find("tls");
    const std::string path = fleet_reader.path_of("tls");
    if (node == nullptr || !expect_map(*node, path, problems)) {
        return;
    }
    // A file path only: the file is loaded when the runtime is built, by
    // serving and `check` alike (a file that cannot be read is refused there).
    MapReader reader(*node, path, "fleet.tls", problems);
    if (!reader.string("ca_file", fleet.ca_file) || fleet.ca_file.empty()) {
        return;
    }
    if (fleet.redis_url.empty() && !problems.has(fleet_reader.path_of("redis"))) {
        reader.problem("ca_file", "applies only to a rediss:// fleet.redis, and fleet.redis is not set");
    } else if (redis_ok && !fleet.tls) {
        reader.problem("ca_file", "applies only to rediss:// (TLS); fleet.redis is redis://");
    }
}

}  // namespace

std::optional<Fleet> read_fleet(const YAML::Node& node, Problems& problems) {
    if (!expect_map(node, "fleet", problems)) {
        return std::nullopt;
    }
    MapReader reader(node, "fleet", "fleet", problems);
    Fleet fleet;
    bool redis_ok = false;
    // "" is unset, so templated deployments can leave it empty.
    if (reader.string("redis", fleet.redis_url) && !fleet.redis_url.empty()) {
        auto parsed = parse_redis_url(fleet.redis_url);
        if (const auto* why = std::get_if<std::string>(&parsed)) {
            reader.problem("redis", *why);
        } else {
            const RedisUrl& url = std::get<RedisUrl>(parsed);
            fleet.tls = url.tls;
            fleet.host = url.host;
            fleet.port = url.port;
            fleet.db = url.db;
            redis_ok = true;
        }
    }
    std::string env;
    if (reader.string("password_env", env)) {
        if (!env.empty() && !is_env_name(env)) {
            // Never echo the value: a password pasted here by mistake must not reach a log.
            reader.problem("password_env", "must be the name of an environment variable, not its value");
        } else {
            fleet.password_env = env;
        }
    }
    read_fleet_tls(reader, fleet, redis_ok, problems);
    std::string prefix;
    if (reader.string("key_prefix", prefix)) {
        if (prefix.empty() || prefix.size() > max_key_prefix ||
            !std::all_of(prefix.begin(), prefix.end(), is_key_prefix_char)) {
            reader.problem("key_prefix", "must be 1..64 characters of letters, digits, ':', '.', '_' or '-'");
        } else {
            fleet.key_prefix = prefix;
        }
    }
    reader.integer("timeout_ms", fleet.timeout_ms);
    if (!redis_ok) {
        return std::nullopt;  // unset or refused: state stays per replica
    }
    return fleet;
}

void read_route_quota(MapReader& route_reader, Route& route, Problems& problems) {
    const YAML::Node* node = route_reader.find("quota");
    const std::string path = route_reader.path_of("quota");
    if (node == nullptr || !expect_map(*node, path, problems)) {
        return;
    }
    MapReader reader(*node, path, "routes[].quota", problems);
    if (!reader.has("requests_per_minute") && !reader.has("tokens_per_minute")) {
        // An empty quota limits nothing: most likely its keys were misspelt.
        if (node->size() == 0) {
            problems.add(*node, path, "must set requests_per_minute, tokens_per_minute or both");
        }
        return;
    }
    Quota quota;
    reader.integer("requests_per_minute", quota.requests_per_minute);
    reader.integer("tokens_per_minute", quota.tokens_per_minute);
    route.quota = quota;
}

}  // namespace modelproxy::config::detail
