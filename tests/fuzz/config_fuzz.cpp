// libFuzzer target for the config loader (config/config.hpp): the whole input
// is a YAML document given to load_config, then to resolve_environment with
// a fixed environment.
//
// Checked (abort() on failure; an exception escaping is a crash too, since
// loading "never throws"):
//  - a Config exactly when there is no problem;
//  - every problem line, environment error and notice is non-empty and has no
//    CR or LF: `modelproxy check` prints one line per problem (docs/behaviour.md section 2)
//    and a value from the file must not be able to forge a second one;
//  - a loaded Config keeps docs/behaviour.md section 3's rules: at least one route, every
//    integer in its schema range, base_delay_ms <= max_delay_ms,
//    min_attempt_ms < timeout_ms, a model name once per route, at most one
//    "*" route, find_model() finds every listed model at its first
//    deployment, a parsed upstream with a host and a port;
//  - and section 13's: the first-byte and first-token timers 0 or at most
//    timeout_ms, open_ms <= max_open_ms, failure_ratio in 0.01..1, and a
//    models block whose names and fallbacks some route lists, each once,
//    never a model's own.
#include "check.hpp"

#include "config/config.hpp"
#include "config/schema.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <string_view>

namespace {

using namespace modelproxy::config;

void check_line(std::string_view line) {
    MP_FUZZ_CHECK_THAT(!line.empty(), "an empty problem line");
    MP_FUZZ_CHECK_THAT(line.find('\n') == std::string_view::npos && line.find('\r') == std::string_view::npos,
                       "a problem line holds a line break");
}

void check_range(std::string_view schema_path, std::int64_t value) {
    const detail::IntRange& range = detail::integer_range(schema_path);
    const bool off = range.zero_is_off && value == 0;
    MP_FUZZ_CHECK_THAT(off || (value >= range.min && value <= range.max), "a loaded integer is outside its range");
}

void check_retry(const modelproxy::policy::RetryConfig& r, std::string_view prefix) {
    const std::string p(prefix);
    check_range(p + "max_attempts", r.max_attempts);
    check_range(p + "base_delay_ms", r.base_delay_ms);
    check_range(p + "max_delay_ms", r.max_delay_ms);
    check_range(p + "max_total_delay_ms", r.max_total_delay_ms);
    check_range(p + "throttled_max_attempts", r.throttled_max_attempts);
    check_range(p + "throttled_max_total_delay_ms", r.throttled_max_total_delay_ms);
    check_range(p + "min_attempt_ms", r.min_attempt_ms);
    MP_FUZZ_CHECK(r.base_delay_ms <= r.max_delay_ms);
}

void check_config(const Config& c) {
    MP_FUZZ_CHECK(!c.listen_host.empty());
    check_range("workers", c.workers);
    check_range("limits.max_request_body_bytes", c.limits.max_request_body_bytes);
    check_range("limits.max_header_bytes", c.limits.max_header_bytes);
    check_range("limits.max_response_body_bytes", c.limits.max_response_body_bytes);
    check_range("limits.header_timeout_ms", c.limits.header_timeout_ms);
    check_range("limits.idle_timeout_ms", c.limits.idle_timeout_ms);
    check_range("limits.max_connections", c.limits.max_connections);
    check_range("limits.drain_ms", c.limits.drain_ms);
    check_retry(c.retry, "retry.");

    MP_FUZZ_CHECK_THAT(!c.routes.empty(), "a Config without routes");
    std::set<std::string> route_names;
    std::set<std::string> model_names;  // listed by name, in any route
    int wildcards = 0;
    for (const Route& route : c.routes) {
        MP_FUZZ_CHECK(!route.name.empty() && route_names.insert(route.name).second);
        MP_FUZZ_CHECK(!route.upstream.host.empty() && route.upstream.port != 0);
        std::string scheme = route.upstream_url.substr(0, 8);
        for (char& ch : scheme) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
        MP_FUZZ_CHECK(route.upstream.https == (scheme == "https://"));
        MP_FUZZ_CHECK(route.upstream.base_path.empty() || route.upstream.base_path.front() == '/');
        check_range("routes[].connect_timeout_ms", route.connect_timeout_ms);
        check_range("routes[].timeout_ms", route.timeout_ms);
        check_range("routes[].stream_idle_timeout_ms", route.stream_idle_timeout_ms);
        check_range("routes[].stream_head_hold_ms", route.stream_head_hold_ms);
        check_range("routes[].max_stream_ms", route.max_stream_ms);
        check_range("routes[].weight", route.weight);
        check_range("routes[].first_byte_timeout_ms", route.first_byte_timeout_ms);
        check_range("routes[].first_token_timeout_ms", route.first_token_timeout_ms);
        MP_FUZZ_CHECK(route.first_byte_timeout_ms <= route.timeout_ms);
        MP_FUZZ_CHECK(route.first_token_timeout_ms <= route.timeout_ms);
        const auto& b = route.breaker;
        check_range("routes[].breaker.consecutive_failures", b.consecutive_failures);
        check_range("routes[].breaker.min_attempts", b.min_attempts);
        check_range("routes[].breaker.window_ms", b.window_ms);
        check_range("routes[].breaker.open_ms", b.open_ms);
        check_range("routes[].breaker.max_open_ms", b.max_open_ms);
        check_range("routes[].breaker.probes", b.probes);
        MP_FUZZ_CHECK(b.open_ms <= b.max_open_ms);
        MP_FUZZ_CHECK(b.failure_ratio >= 0.01 && b.failure_ratio <= 1.0);
        check_retry(route.retry, "retry.");
        MP_FUZZ_CHECK_THAT(route.retry.min_attempt_ms < route.timeout_ms, "min_attempt_ms >= timeout_ms passed");
        MP_FUZZ_CHECK(!route.api_key_header.empty());
        if (route.wildcard) ++wildcards;
        MP_FUZZ_CHECK(route.wildcard || !route.models.empty());
        std::set<std::string> in_route;
        for (const Model& model : route.models) {
            MP_FUZZ_CHECK(!model.name.empty() && model.name != "*");
            MP_FUZZ_CHECK_THAT(in_route.insert(model.name).second, "a model name twice in one route");
            // An empty accept is the default rule (the upstream model and its
            // dated snapshots); `accept: []` itself is refused.
            MP_FUZZ_CHECK(!model.upstream_model.empty());
            const ModelMatch match = find_model(c, model.name);
            const std::vector<Deployment> deployments = deployments_of(c, model.name);
            MP_FUZZ_CHECK(!deployments.empty());
            MP_FUZZ_CHECK(match.route == &c.routes[deployments.front().route] &&
                          match.model == &match.route->models[deployments.front().model]);
            if (model_names.insert(model.name).second) {
                MP_FUZZ_CHECK_THAT(match.route == &route && match.model == &model, "not found at its first route");
            }
        }
    }
    MP_FUZZ_CHECK_THAT(wildcards <= 1, "two \"*\" routes");
    MP_FUZZ_CHECK((wildcard_route(c) != nullptr) == (wildcards == 1));
    std::set<std::string> entries;
    for (const ModelPolicy& entry : c.models) {
        MP_FUZZ_CHECK_THAT(model_names.count(entry.name) == 1, "a models entry no route lists");
        MP_FUZZ_CHECK_THAT(entries.insert(entry.name).second, "a model named twice in models");
        MP_FUZZ_CHECK(&model_policy(c, entry.name) == &entry);
        check_range("models[].attempts_per_candidate", entry.attempts_per_candidate);
        std::set<std::string> fallbacks;
        for (const std::string& fallback : entry.fallbacks) {
            MP_FUZZ_CHECK_THAT(model_names.count(fallback) == 1, "a fallback no route lists");
            MP_FUZZ_CHECK_THAT(fallback != entry.name, "a model its own fallback");
            MP_FUZZ_CHECK_THAT(fallbacks.insert(fallback).second, "a fallback twice");
        }
        for (const std::string& code : entry.fallback_on.codes) MP_FUZZ_CHECK(!code.empty());
    }
}

// Every variable set, to a value that is fine in a header, except names
// ending in _BAD (a control character) and _EMPTY ("").
const char* fake_getenv(const char* name) {
    const std::string_view n(name);
    if (n.ends_with("_BAD")) return "line\nbreak";
    if (n.ends_with("_EMPTY")) return "";
    if (n.ends_with("_UNSET")) return nullptr;
    return "tok-1, tok-2";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(bytes), size);
    LoadResult loaded = load_config(text);
    MP_FUZZ_CHECK_THAT(loaded.config.has_value() == loaded.problems.empty(),
                       "a Config and problems together, or neither");
    for (const Problem& p : loaded.problems) check_line(p.line());
    if (!loaded.config) return 0;

    Config& config = *loaded.config;
    check_config(config);
    const EnvResult env = resolve_environment(config, fake_getenv);
    for (const Problem& p : env.errors) check_line(p.line());
    for (const std::string& notice : env.notices) check_line(notice);
    for (const Route& route : config.routes)
        if (route.api_key) MP_FUZZ_CHECK(std::strchr(route.api_key->c_str(), '\n') == nullptr);
    return 0;
}
