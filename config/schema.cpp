#include "config/schema.hpp"

#include "config/config.hpp"

#include <cstdio>
#include <cstdlib>
#include <set>

namespace modelproxy::config::detail {
namespace {

constexpr std::int64_t kib = 1024;
constexpr std::int64_t mib = 1024 * kib;
constexpr std::int64_t gib = 1024 * mib;
constexpr std::int64_t second = 1000;
constexpr std::int64_t minute = 60 * second;
constexpr std::int64_t hour = 60 * minute;

// The ranges of docs/behaviour.md section 3: wide enough for tests at the low end (delays
// from 1 ms, timeouts from 10 ms, byte limits from 1 KiB, connections from 1),
// and an upper end that catches a misplaced digit.
constexpr IntRange delay{1, hour, Unit::ms};
constexpr IntRange summed_delay{1, 24 * hour, Unit::ms};
constexpr IntRange timeout{10, 24 * hour, Unit::ms};
constexpr IntRange body_bytes{kib, 4 * gib, Unit::bytes};
constexpr IntRange header_bytes{kib, mib, Unit::bytes};
constexpr IntRange event_bytes{kib, 64 * mib, Unit::bytes};
constexpr IntRange connections{1, 1000000, Unit::count};
constexpr IntRange worker_count{0, 256, Unit::count};
constexpr IntRange attempts{1, 16, Unit::count};
constexpr IntRange throttled_attempts{1, 64, Unit::count};
constexpr IntRange min_attempt{1, hour, Unit::ms};  // below the largest timeout_ms, which it must stay under
constexpr IntRange stream_cap{10, 24 * hour, Unit::ms, true};

// 33554432 bytes -> "32 MiB", 300000 ms -> "5 min"; "" when no unit divides it.
std::string in_units(std::int64_t value, Unit unit) {
    struct Step { std::int64_t size; const char* name; };
    static constexpr Step byte_steps[] = {{gib, "GiB"}, {mib, "MiB"}, {kib, "KiB"}};
    static constexpr Step ms_steps[] = {{hour, "h"}, {minute, "min"}, {second, "s"}, {1, "ms"}};
    if (unit == Unit::count || value == 0) {
        return "";
    }
    if (unit == Unit::bytes) {
        for (const Step& step : byte_steps) {
            if (value % step.size == 0) {
                return std::to_string(value / step.size) + " " + step.name;
            }
        }
        return std::to_string(value) + " bytes";
    }
    for (const Step& step : ms_steps) {
        if (value % step.size == 0) {
            return std::to_string(value / step.size) + " " + step.name;
        }
    }
    return "";
}

std::string shown_default(std::int64_t value, Unit unit, const char* zero_meaning = nullptr) {
    std::string text = std::to_string(value);
    if (value == 0 && zero_meaning != nullptr) {
        return text + " (" + zero_meaning + ")";
    }
    const std::string human = in_units(value, unit);
    if (!human.empty() && unit == Unit::bytes) {
        text += " (" + human + ")";
    } else if (!human.empty() && value >= second) {
        text += " (" + human + ")";
    }
    return text;
}

KeySpec integer_key(std::string path, std::int64_t default_value, IntRange range,
                    std::string description, const char* zero_meaning = nullptr) {
    return KeySpec{std::move(path), shown_default(default_value, range.unit, zero_meaning), range,
                   describe_range(range), std::move(description)};
}

KeySpec other_key(std::string path, std::string default_value, std::string range,
                  std::string description) {
    return KeySpec{std::move(path), std::move(default_value), std::nullopt, std::move(range),
                   std::move(description)};
}

// Defaults come from the default-constructed structs of config.hpp and
// policy/retry_config.hpp, so the table shows what the loader really leaves.
std::vector<KeySpec> build_specs() {
    const Config config;
    const Limits& limits = config.limits;
    const policy::RetryConfig retry;
    const Route route;
    const char* const env_name = "environment variable name (`[A-Za-z_][A-Za-z0-9_]*`)";
    return {
        other_key("listen", config.listen_host + ":" + std::to_string(config.listen_port),
                  "HOST:PORT, IPv6 as [::1]:8080; port 0..65535 (0: any free port)",
                  "address the proxy listens on; `--listen` overrides it"),
        integer_key("workers", config.workers, worker_count,
                    "event loops; `--workers` overrides it", "one per core"),
        integer_key("limits.max_request_body_bytes", limits.max_request_body_bytes, body_bytes,
                    "larger request bodies get 413"),
        integer_key("limits.max_header_bytes", limits.max_header_bytes, header_bytes,
                    "larger request heads get 431"),
        integer_key("limits.max_response_body_bytes", limits.max_response_body_bytes, body_bytes,
                    "a buffered upstream body or held stream bytes beyond it get 502"),
        integer_key("limits.max_event_bytes", limits.max_event_bytes, event_bytes,
                    "one SSE line longer than it (decoded bytes, after gzip or deflate) is refused: response_too_large"),
        integer_key("limits.header_timeout_ms", limits.header_timeout_ms, timeout,
                    "request head not complete by then: 408 and close"),
        integer_key("limits.idle_timeout_ms", limits.idle_timeout_ms, timeout,
                    "an idle keep-alive client connection is closed after it"),
        integer_key("limits.max_connections", limits.max_connections, connections,
                    "client connections beyond it get 503"),
        integer_key("limits.drain_ms", limits.drain_ms, timeout,
                    "how long SIGTERM lets in-flight turns finish"),
        other_key("clients.tokens_env", "(unset)", env_name,
                  "variable holding comma-separated tokens clients must present (section 12)"),
        other_key("clients.allow_unauthenticated", config.clients.allow_unauthenticated ? "true" : "false",
                  "true or false",
                  "true: serve a non-loopback address with an injected key and no client tokens"),
        integer_key("retry.max_attempts", retry.max_attempts, attempts,
                    "general bound: attempts per turn"),
        integer_key("retry.base_delay_ms", retry.base_delay_ms, delay,
                    "first wait; must be <= max_delay_ms"),
        integer_key("retry.max_delay_ms", retry.max_delay_ms, delay, "cap on one wait"),
        integer_key("retry.max_total_delay_ms", retry.max_total_delay_ms, summed_delay,
                    "summed waits per turn, general bound"),
        integer_key("retry.throttled_max_attempts", retry.throttled_max_attempts, throttled_attempts,
                    "bound when the failure decided is HTTP 429"),
        integer_key("retry.throttled_max_total_delay_ms", retry.throttled_max_total_delay_ms,
                    summed_delay, "summed waits per turn when the failure decided is HTTP 429"),
        other_key("retry.jitter", retry.jitter == policy::Jitter::none ? "none" : "full",
                  "none or full", "full: each wait is uniform in `[0, interval]`"),
        integer_key("retry.min_attempt_ms", retry.min_attempt_ms, min_attempt,
                    "no retry starts with less time than this left; must be < each route's timeout_ms"),
        other_key("boundary.secret_patterns", "`[]`", "list of non-empty regular expressions",
                  "extra secret shapes refused in 200 bodies (compiled at startup)"),
        other_key("boundary.default_patterns", config.boundary.default_patterns ? "true" : "false",
                  "true or false", "false: scan only for the configured keys and secret_patterns"),
        other_key("routes", "(required)", "list of at least one route", "where models are served"),
        other_key("routes[].name", "(required)", "letters, digits, `.`, `_`, `-`; unique",
                  "the route's name in records, metrics and messages"),
        other_key("routes[].upstream", "(required)",
                  "http:// or https:// URL with a host; no user info, query or fragment",
                  "the provider's base URL; its path is the base path"),
        other_key("routes[].api_key_env", "(unset)", env_name,
                  "variable whose value is sent upstream in place of client credentials"),
        other_key("routes[].api_key_header", route.api_key_header,
                  "HTTP header name (stored lower-case)", "header carrying the key upstream"),
        other_key("routes[].api_key_prefix", "\"Bearer \" for authorization, else \"\"",
                  "string without control characters", "written before the key in that header"),
        other_key("routes[].api_key_required", route.api_key_required ? "true" : "false",
                  "true or false; true needs api_key_env",
                  "true: an unset api_key_env fails startup instead of passing client credentials"),
        other_key("routes[].headers", "{}",
                  "map of header name to value; no hop-by-hop header, Host, Content-Length or Expect",
                  "static headers added upstream, in file order"),
        other_key("routes[].query", "{}", "map of non-empty name to value",
                  "static query parameters added upstream, in file order"),
        other_key("routes[].tls.ca_file", "\"\" (system trust store)", "file path; https upstreams only",
                  "trust roots for the upstream's certificate"),
        other_key("routes[].tls.cert_file", "\"\" (no client certificate)",
                  "file path; needs key_file; https upstreams only", "client certificate"),
        other_key("routes[].tls.key_file", "\"\"", "file path; needs cert_file; https upstreams only",
                  "client certificate's private key"),
        other_key("routes[].dialect", "openai", "openai, anthropic or generic",
                  "error and credential shapes of the upstream; generic turns off identity and end-marker rules"),
        integer_key("routes[].connect_timeout_ms", route.connect_timeout_ms, timeout,
                    "TCP connect plus TLS handshake"),
        integer_key("routes[].timeout_ms", route.timeout_ms, timeout, "turn deadline (section 6)"),
        integer_key("routes[].stream_idle_timeout_ms", route.stream_idle_timeout_ms, timeout,
                    "no upstream byte for this long: timeout"),
        integer_key("routes[].stream_head_hold_ms", route.stream_head_hold_ms, timeout,
                    "a stream turn that published nothing by then publishes its head (section 7)"),
        integer_key("routes[].max_stream_ms", route.max_stream_ms, stream_cap,
                    "cap on one published stream's length", "off"),
        other_key("routes[].models", "(required)",
                  "non-empty list of model names (shorthand) or maps; `\"*\"` as a name, in one route only",
                  "models the route serves; `\"*\"` serves every model no route names"),
        other_key("routes[].models[].name", "(required)",
                  "non-empty, no `*`, no control characters; unique across routes",
                  "what clients send in \"model\""),
        other_key("routes[].models[].upstream_model", "the name", "non-empty, no `*`",
                  "rewritten into the upstream request body"),
        other_key("routes[].models[].accept",
                  "upstream_model and its dated snapshots (`-YYYY-MM-DD`, `-YYYYMMDD`, `-MMDD`; as `\"*\"` accepts)",
                  "non-empty list of globs (`*`)",
                  "response identities accepted, replacing the default; globs match the whole string, case-sensitively"),
        other_key("routes[].retry", "{} (the catalog)", "map with any key of `retry`",
                  "per-route override, merged over the catalog"),
    };
}

std::string_view first_segment(std::string_view rest) {
    const std::size_t end = rest.find_first_of(".[");
    return rest.substr(0, end);
}

}  // namespace

const std::vector<KeySpec>& key_specs() {
    static const std::vector<KeySpec> specs = build_specs();
    return specs;
}

const IntRange& integer_range(std::string_view path) {
    for (const KeySpec& spec : key_specs()) {
        if (spec.path == path && spec.integer) {
            return *spec.integer;
        }
    }
    std::fprintf(stderr, "modelproxy: config schema has no integer key %.*s\n",
                 static_cast<int>(path.size()), path.data());
    std::abort();
}

std::vector<std::string> schema_children(std::string_view prefix) {
    std::vector<std::string> children;
    std::set<std::string_view> seen;
    for (const KeySpec& spec : key_specs()) {
        std::string_view rest = spec.path;
        if (!prefix.empty()) {
            if (rest.size() <= prefix.size() + 1 || rest.substr(0, prefix.size()) != prefix ||
                rest[prefix.size()] != '.') {
                continue;
            }
            rest.remove_prefix(prefix.size() + 1);
        }
        const std::string_view child = first_segment(rest);
        if (seen.insert(child).second) {
            children.emplace_back(child);
        }
    }
    return children;
}

bool is_schema_child(std::string_view prefix, std::string_view key) {
    for (const std::string& child : schema_children(prefix)) {
        if (child == key) {
            return true;
        }
    }
    return false;
}

std::string describe_range(const IntRange& range) {
    std::string text = std::to_string(range.min) + ".." + std::to_string(range.max);
    if (range.unit != Unit::count) {
        text += " (" + in_units(range.min, range.unit) + ".." + in_units(range.max, range.unit) + ")";
    }
    if (range.zero_is_off) {
        text = "0 (off) or " + text;
    }
    return text;
}

std::string range_violation(const IntRange& range, std::string_view got) {
    return "must be " + describe_range(range) + ", got " + std::string(got);
}

}  // namespace modelproxy::config::detail

namespace modelproxy::config {

const std::vector<KeyInfo>& schema_keys() {
    static const std::vector<KeyInfo> keys = [] {
        std::vector<KeyInfo> out;
        for (const detail::KeySpec& spec : detail::key_specs()) {
            out.push_back(KeyInfo{spec.path, spec.default_value, spec.range, spec.description});
        }
        return out;
    }();
    return keys;
}

std::string schema_reference_table() {
    std::string table = "| key | default | range | meaning |\n| --- | --- | --- | --- |\n";
    for (const KeyInfo& key : schema_keys()) {
        table += "| `" + key.path + "` | " + key.default_value + " | " + key.range + " | " +
                 key.description + " |\n";
    }
    return table;
}

}  // namespace modelproxy::config
