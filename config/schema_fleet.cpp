// The schema rows of docs/behaviour.md section 15: the `fleet` block (the
// Redis server replicas share state through) and a route's `quota`.
#include "config/schema.hpp"

#include "config/config.hpp"

namespace modelproxy::config::detail {
namespace {

// A call slower than timeout_ms counts as failed; five seconds is far past
// any loopback or in-zone round trip, and 1 ms lets tests make Redis slow.
constexpr IntRange redis_timeout{1, 5000, Unit::ms};
constexpr IntRange requests_per_minute{1, 100000000, Unit::count};
constexpr IntRange tokens_per_minute{1, 10000000000, Unit::count};

// A quota key: absent means no limit on that dimension, and 0 is not accepted.
KeySpec quota_key(std::string path, IntRange range, std::string description) {
    KeySpec spec = integer_key(std::move(path), 0, range, std::move(description));
    spec.default_value = "(unset: no limit)";
    return spec;
}

}  // namespace

std::vector<KeySpec> fleet_specs() {
    const Fleet fleet;
    return {
        other_key("fleet.redis", "(unset: per replica)",
                  "redis:// or rediss:// URL, HOST[:PORT][/DB]: port 1..65535 (6379), database 0..15 (0); no user "
                  "or password",
                  "the Redis 6+ or Valkey server the replicas share quotas and breakers through; unset: each "
                  "replica keeps its own"),
        other_key("fleet.password_env", "(unset: no AUTH)", "environment variable name (`[A-Za-z_][A-Za-z0-9_]*`)",
                  "variable holding the Redis password; when named, it must be set and non-empty at startup"),
        other_key("fleet.tls.ca_file", "\"\" (system trust store)", "file path; rediss:// only",
                  "trust roots for the Redis server's certificate"),
        other_key("fleet.key_prefix", "`" + fleet.key_prefix + "`",
                  "letters, digits, `:`, `.`, `_`, `-`; 1..64 characters",
                  "prefix of every Redis key the proxy writes; replicas that share state use the same"),
        integer_key("fleet.timeout_ms", fleet.timeout_ms, redis_timeout,
                    "a Redis call slower than this counts as failed; after 3 failed or slow calls in a row the "
                    "replica uses its own state until Redis answers well for 3 s"),
    };
}

std::vector<KeySpec> quota_specs() {
    return {
        quota_key("routes[].quota.requests_per_minute", requests_per_minute,
                  "the provider key's requests per minute: each attempt reserves 1 in a sliding minute"),
        quota_key("routes[].quota.tokens_per_minute", tokens_per_minute,
                  "the provider key's tokens per minute: each attempt reserves the turn's estimate, settled by the "
                  "answer's usage"),
    };
}

}  // namespace modelproxy::config::detail
