// Ranges, types, unknown keys and the reporting of every problem at once.
#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <set>

namespace mc = modelproxy::config;

namespace {

// A valid document with one route, plus `settings` placed by schema path:
// "workers", "limits.drain_ms", "routes[].timeout_ms", "routes[].retry.max_attempts",
// "routes[].breaker.probes", "models[].balance" (a models entry for m).
// A routes[] key given here replaces the route's default one.
std::string yaml_with(const std::vector<std::pair<std::string, std::string>>& settings) {
    std::string top;
    std::map<std::string, std::string> sections;
    std::map<std::string, std::string> route = {
        {"name", "r"}, {"upstream", "https://example.com/v1"}, {"models", "[m]"}};
    std::string route_retry;
    std::string route_breaker;
    std::string model_entry;
    for (const auto& [path, value] : settings) {
        const std::string route_prefix = "routes[].";
        const std::string models_prefix = "models[].";
        if (path.rfind(route_prefix + "retry.", 0) == 0) {
            route_retry += "      " + path.substr(route_prefix.size() + 6) + ": " + value + "\n";
        } else if (path.rfind(route_prefix + "breaker.", 0) == 0) {
            route_breaker += "      " + path.substr(route_prefix.size() + 8) + ": " + value + "\n";
        } else if (path.rfind(models_prefix, 0) == 0) {
            model_entry += "    " + path.substr(models_prefix.size()) + ": " + value + "\n";
        } else if (path.rfind(route_prefix, 0) == 0) {
            route[path.substr(route_prefix.size())] = value;
        } else if (const auto dot = path.find('.'); dot != std::string::npos) {
            sections[path.substr(0, dot)] += "  " + path.substr(dot + 1) + ": " + value + "\n";
        } else {
            top += path + ": " + value + "\n";
        }
    }
    std::string yaml = top;
    for (const auto& [name, body] : sections) {
        yaml += name + ":\n" + body;
    }
    yaml += "routes:\n  - name: " + route["name"] + "\n";
    for (const auto& [key, value] : route) {
        if (key != "name") {
            yaml += "    " + key + ": " + value + "\n";
        }
    }
    if (!route_retry.empty()) {
        yaml += "    retry:\n" + route_retry;
    }
    if (!route_breaker.empty()) {
        yaml += "    breaker:\n" + route_breaker;
    }
    if (!model_entry.empty()) {
        yaml += "models:\n  - name: m\n" + model_entry;
    }
    return yaml;
}

std::vector<std::string> problem_lines(std::string_view yaml) {
    std::vector<std::string> lines;
    for (const mc::Problem& problem : mc::load_config(yaml).problems) {
        lines.push_back(problem.line());
    }
    return lines;
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("the test document itself is valid") {
    CHECK(problem_lines(yaml_with({})).empty());
}

TEST_CASE("integers outside their range are refused, one row per key and end") {
    auto [path, value, expected] = GENERATE(table<std::string, std::string, std::string>({
        {"workers", "-1", "workers: must be 0..256, got -1"},
        {"workers", "257", "workers: must be 0..256, got 257"},
        {"limits.max_request_body_bytes", "1023",
         "limits.max_request_body_bytes: must be 1024..4294967296 (1 KiB..4 GiB), got 1023"},
        {"limits.max_request_body_bytes", "4294967297",
         "limits.max_request_body_bytes: must be 1024..4294967296 (1 KiB..4 GiB), got 4294967297"},
        {"limits.max_header_bytes", "1023", "limits.max_header_bytes: must be 1024..1048576 (1 KiB..1 MiB), got 1023"},
        {"limits.max_header_bytes", "1048577",
         "limits.max_header_bytes: must be 1024..1048576 (1 KiB..1 MiB), got 1048577"},
        {"limits.max_response_body_bytes", "1023",
         "limits.max_response_body_bytes: must be 1024..4294967296 (1 KiB..4 GiB), got 1023"},
        {"limits.max_response_body_bytes", "4294967297",
         "limits.max_response_body_bytes: must be 1024..4294967296 (1 KiB..4 GiB), got 4294967297"},
        {"limits.max_event_bytes", "1023",
         "limits.max_event_bytes: must be 1024..67108864 (1 KiB..64 MiB), got 1023"},
        {"limits.max_event_bytes", "67108865",
         "limits.max_event_bytes: must be 1024..67108864 (1 KiB..64 MiB), got 67108865"},
        {"limits.header_timeout_ms", "9", "limits.header_timeout_ms: must be 10..86400000 (10 ms..24 h), got 9"},
        {"limits.header_timeout_ms", "86400001",
         "limits.header_timeout_ms: must be 10..86400000 (10 ms..24 h), got 86400001"},
        {"limits.idle_timeout_ms", "9", "limits.idle_timeout_ms: must be 10..86400000 (10 ms..24 h), got 9"},
        {"limits.idle_timeout_ms", "86400001",
         "limits.idle_timeout_ms: must be 10..86400000 (10 ms..24 h), got 86400001"},
        {"limits.max_connections", "0", "limits.max_connections: must be 1..1000000, got 0"},
        {"limits.max_connections", "1000001", "limits.max_connections: must be 1..1000000, got 1000001"},
        {"limits.drain_ms", "9", "limits.drain_ms: must be 10..86400000 (10 ms..24 h), got 9"},
        {"limits.drain_ms", "86400001", "limits.drain_ms: must be 10..86400000 (10 ms..24 h), got 86400001"},
        {"retry.max_attempts", "0", "retry.max_attempts: must be 1..16, got 0"},
        {"retry.max_attempts", "17", "retry.max_attempts: must be 1..16, got 17"},
        {"retry.base_delay_ms", "0", "retry.base_delay_ms: must be 1..3600000 (1 ms..1 h), got 0"},
        {"retry.base_delay_ms", "3600001", "retry.base_delay_ms: must be 1..3600000 (1 ms..1 h), got 3600001"},
        {"retry.max_delay_ms", "0", "retry.max_delay_ms: must be 1..3600000 (1 ms..1 h), got 0"},
        {"retry.max_delay_ms", "3600001", "retry.max_delay_ms: must be 1..3600000 (1 ms..1 h), got 3600001"},
        {"retry.max_total_delay_ms", "0", "retry.max_total_delay_ms: must be 1..86400000 (1 ms..24 h), got 0"},
        {"retry.max_total_delay_ms", "86400001",
         "retry.max_total_delay_ms: must be 1..86400000 (1 ms..24 h), got 86400001"},
        {"retry.throttled_max_attempts", "0", "retry.throttled_max_attempts: must be 1..64, got 0"},
        {"retry.throttled_max_attempts", "65", "retry.throttled_max_attempts: must be 1..64, got 65"},
        {"retry.throttled_max_total_delay_ms", "0",
         "retry.throttled_max_total_delay_ms: must be 1..86400000 (1 ms..24 h), got 0"},
        {"retry.throttled_max_total_delay_ms", "86400001",
         "retry.throttled_max_total_delay_ms: must be 1..86400000 (1 ms..24 h), got 86400001"},
        {"retry.min_attempt_ms", "0", "retry.min_attempt_ms: must be 1..3600000 (1 ms..1 h), got 0"},
        {"retry.min_attempt_ms", "3600001", "retry.min_attempt_ms: must be 1..3600000 (1 ms..1 h), got 3600001"},
        {"routes[].connect_timeout_ms", "9",
         "routes[0].connect_timeout_ms: must be 10..86400000 (10 ms..24 h), got 9"},
        {"routes[].connect_timeout_ms", "86400001",
         "routes[0].connect_timeout_ms: must be 10..86400000 (10 ms..24 h), got 86400001"},
        {"routes[].timeout_ms", "9", "routes[0].timeout_ms: must be 10..86400000 (10 ms..24 h), got 9"},
        {"routes[].timeout_ms", "86400001", "routes[0].timeout_ms: must be 10..86400000 (10 ms..24 h), got 86400001"},
        {"routes[].stream_idle_timeout_ms", "9",
         "routes[0].stream_idle_timeout_ms: must be 10..86400000 (10 ms..24 h), got 9"},
        {"routes[].stream_idle_timeout_ms", "86400001",
         "routes[0].stream_idle_timeout_ms: must be 10..86400000 (10 ms..24 h), got 86400001"},
        {"routes[].stream_head_hold_ms", "9",
         "routes[0].stream_head_hold_ms: must be 10..86400000 (10 ms..24 h), got 9"},
        {"routes[].stream_head_hold_ms", "86400001",
         "routes[0].stream_head_hold_ms: must be 10..86400000 (10 ms..24 h), got 86400001"},
        {"routes[].max_stream_ms", "9", "routes[0].max_stream_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got 9"},
        {"routes[].max_stream_ms", "86400001",
         "routes[0].max_stream_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got 86400001"},
        {"routes[].max_stream_ms", "-1",
         "routes[0].max_stream_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got -1"},
        {"routes[].weight", "0", "routes[0].weight: must be 1..1000, got 0"},
        {"routes[].weight", "1001", "routes[0].weight: must be 1..1000, got 1001"},
        {"routes[].first_byte_timeout_ms", "9",
         "routes[0].first_byte_timeout_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got 9"},
        {"routes[].first_byte_timeout_ms", "86400001",
         "routes[0].first_byte_timeout_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got 86400001"},
        {"routes[].first_token_timeout_ms", "9",
         "routes[0].first_token_timeout_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got 9"},
        {"routes[].first_token_timeout_ms", "86400001",
         "routes[0].first_token_timeout_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got 86400001"},
        {"routes[].breaker.consecutive_failures", "0", "routes[0].breaker.consecutive_failures: must be 1..1000, got 0"},
        {"routes[].breaker.consecutive_failures", "1001",
         "routes[0].breaker.consecutive_failures: must be 1..1000, got 1001"},
        {"routes[].breaker.failure_ratio", "0.009", "routes[0].breaker.failure_ratio: must be 0.01..1, got 0.009"},
        {"routes[].breaker.failure_ratio", "1.01", "routes[0].breaker.failure_ratio: must be 0.01..1, got 1.01"},
        {"routes[].breaker.min_attempts", "0", "routes[0].breaker.min_attempts: must be 1..100000, got 0"},
        {"routes[].breaker.min_attempts", "100001", "routes[0].breaker.min_attempts: must be 1..100000, got 100001"},
        {"routes[].breaker.window_ms", "99", "routes[0].breaker.window_ms: must be 100..600000 (100 ms..10 min), got 99"},
        {"routes[].breaker.window_ms", "600001",
         "routes[0].breaker.window_ms: must be 100..600000 (100 ms..10 min), got 600001"},
        {"routes[].breaker.open_ms", "9", "routes[0].breaker.open_ms: must be 10..600000 (10 ms..10 min), got 9"},
        {"routes[].breaker.open_ms", "600001",
         "routes[0].breaker.open_ms: must be 10..600000 (10 ms..10 min), got 600001"},
        {"routes[].breaker.max_open_ms", "9", "routes[0].breaker.max_open_ms: must be 10..3600000 (10 ms..1 h), got 9"},
        {"routes[].breaker.max_open_ms", "3600001",
         "routes[0].breaker.max_open_ms: must be 10..3600000 (10 ms..1 h), got 3600001"},
        {"routes[].breaker.probes", "0", "routes[0].breaker.probes: must be 1..100, got 0"},
        {"routes[].breaker.probes", "101", "routes[0].breaker.probes: must be 1..100, got 101"},
        {"models[].attempts_per_candidate", "0", "models[0].attempts_per_candidate: must be 1..16, got 0"},
        {"models[].attempts_per_candidate", "17", "models[0].attempts_per_candidate: must be 1..16, got 17"},
        {"routes[].retry.max_attempts", "40", "routes[0].retry.max_attempts: must be 1..16, got 40"},
        {"routes[].retry.throttled_max_attempts", "0", "routes[0].retry.throttled_max_attempts: must be 1..64, got 0"},
        {"retry.max_attempts", "99999999999999999999999",
         "retry.max_attempts: must be 1..16, got 99999999999999999999999"},
    }));
    CAPTURE(path, value);
    CHECK(problem_lines(yaml_with({{path, value}})) == Lines{expected});
}

TEST_CASE("every integer key of the schema has a range row above") {
    // Mirrors the table above, admission_test.cpp's for section 14,
    // fleet_test.cpp's for section 15 and resume_test.cpp's for section 16:
    // a new integer key must get its rows there.
    const std::set<std::string> covered = {
        "workers", "limits.max_request_body_bytes", "limits.max_header_bytes", "limits.max_response_body_bytes",
        "limits.max_event_bytes", "limits.header_timeout_ms", "limits.idle_timeout_ms", "limits.max_connections", "limits.drain_ms",
        "retry.max_attempts", "retry.base_delay_ms", "retry.max_delay_ms", "retry.max_total_delay_ms",
        "retry.throttled_max_attempts", "retry.throttled_max_total_delay_ms", "retry.min_attempt_ms",
        "routes[].connect_timeout_ms", "routes[].timeout_ms", "routes[].stream_idle_timeout_ms",
        "routes[].stream_head_hold_ms", "routes[].max_stream_ms", "routes[].weight",
        "routes[].first_byte_timeout_ms", "routes[].first_token_timeout_ms",
        "routes[].breaker.consecutive_failures", "routes[].breaker.failure_ratio",  // a decimal
        "routes[].breaker.min_attempts", "routes[].breaker.window_ms", "routes[].breaker.open_ms",
        "routes[].breaker.max_open_ms", "routes[].breaker.probes", "models[].attempts_per_candidate",
        "retry.budget_ratio", "retry.budget_min_concurrency",  // section 14, in admission_test.cpp
        "admission.initial_limit", "admission.min_limit", "admission.max_limit", "admission.decrease",
        "admission.backpressure.rate-limit", "admission.backpressure.overload", "admission.backpressure.server",
        "admission.queue_timeout_ms",
        "fleet.timeout_ms", "routes[].quota.requests_per_minute",  // section 15, in fleet_test.cpp
        "routes[].quota.tokens_per_minute",
        "routes[].resume.max_resumes", "routes[].resume.max_offset"};  // section 16, in resume_test.cpp
    std::set<std::string> integers;
    for (const mc::KeyInfo& key : mc::schema_keys()) {
        if (!key.range.empty() && key.range[0] >= '0' && key.range[0] <= '9') {
            integers.insert(key.path);
        }
    }
    CHECK(integers == covered);
}

TEST_CASE("both ends of every range are accepted") {
    using Settings = std::vector<std::pair<std::string, std::string>>;
    auto [settings] = GENERATE(table<Settings>({
        {Settings{{"workers", "0"}}},
        {Settings{{"workers", "256"}}},
        {Settings{{"limits.max_request_body_bytes", "1024"}, {"limits.max_response_body_bytes", "1024"}}},
        {Settings{{"limits.max_request_body_bytes", "4294967296"}, {"limits.max_response_body_bytes", "4294967296"}}},
        {Settings{{"limits.max_header_bytes", "1024"}}},
        {Settings{{"limits.max_header_bytes", "1048576"}}},
        {Settings{{"limits.max_event_bytes", "1024"}}},
        {Settings{{"limits.max_event_bytes", "67108864"}}},
        {Settings{{"limits.header_timeout_ms", "10"}, {"limits.idle_timeout_ms", "10"}, {"limits.drain_ms", "10"}}},
        {Settings{{"limits.header_timeout_ms", "86400000"},
                  {"limits.idle_timeout_ms", "86400000"},
                  {"limits.drain_ms", "86400000"}}},
        {Settings{{"limits.max_connections", "1"}}},
        {Settings{{"limits.max_connections", "1000000"}}},
        {Settings{{"retry.max_attempts", "1"}, {"retry.throttled_max_attempts", "1"}}},
        {Settings{{"retry.max_attempts", "16"}, {"retry.throttled_max_attempts", "64"}}},
        {Settings{{"retry.base_delay_ms", "1"},
                  {"retry.max_delay_ms", "1"},
                  {"retry.max_total_delay_ms", "1"},
                  {"retry.throttled_max_total_delay_ms", "1"},
                  {"retry.min_attempt_ms", "1"}}},
        {Settings{{"retry.base_delay_ms", "3600000"},
                  {"retry.max_delay_ms", "3600000"},
                  {"retry.max_total_delay_ms", "86400000"},
                  {"retry.throttled_max_total_delay_ms", "86400000"},
                  {"retry.min_attempt_ms", "3600000"},
                  {"routes[].timeout_ms", "3600001"}}},
        {Settings{{"routes[].connect_timeout_ms", "10"},
                  {"routes[].timeout_ms", "10"},
                  {"routes[].stream_idle_timeout_ms", "10"},
                  {"routes[].stream_head_hold_ms", "10"},
                  {"routes[].max_stream_ms", "10"},
                  {"retry.min_attempt_ms", "9"}}},
        {Settings{{"routes[].connect_timeout_ms", "86400000"},
                  {"routes[].timeout_ms", "86400000"},
                  {"routes[].stream_idle_timeout_ms", "86400000"},
                  {"routes[].stream_head_hold_ms", "86400000"},
                  {"routes[].max_stream_ms", "86400000"}}},
        {Settings{{"routes[].max_stream_ms", "0"}}},
        {Settings{{"routes[].weight", "1"},
                  {"routes[].first_byte_timeout_ms", "10"},
                  {"routes[].first_token_timeout_ms", "10"},
                  {"routes[].breaker.consecutive_failures", "1"},
                  {"routes[].breaker.failure_ratio", "0.01"},
                  {"routes[].breaker.min_attempts", "1"},
                  {"routes[].breaker.window_ms", "100"},
                  {"routes[].breaker.open_ms", "10"},
                  {"routes[].breaker.max_open_ms", "10"},
                  {"routes[].breaker.probes", "1"},
                  {"models[].attempts_per_candidate", "1"}}},
        {Settings{{"routes[].weight", "1000"},
                  {"routes[].timeout_ms", "86400000"},
                  {"routes[].first_byte_timeout_ms", "86400000"},
                  {"routes[].first_token_timeout_ms", "86400000"},
                  {"routes[].breaker.consecutive_failures", "1000"},
                  {"routes[].breaker.failure_ratio", "1"},
                  {"routes[].breaker.min_attempts", "100000"},
                  {"routes[].breaker.window_ms", "600000"},
                  {"routes[].breaker.open_ms", "600000"},
                  {"routes[].breaker.max_open_ms", "3600000"},
                  {"routes[].breaker.probes", "100"},
                  {"models[].attempts_per_candidate", "16"}}},
        {Settings{{"routes[].first_byte_timeout_ms", "0"}, {"routes[].first_token_timeout_ms", "0"}}},
        {Settings{{"workers", "+4"}}},
    }));
    CAPTURE(yaml_with(settings));
    CHECK(problem_lines(yaml_with(settings)).empty());
}

TEST_CASE("wrong types are refused with the expected type") {
    auto [path, value, expected] = GENERATE(table<std::string, std::string, std::string>({
        {"workers", "abc", "workers: must be an integer"},
        {"workers", "\"4\"", "workers: must be an integer"},
        {"workers", "1.5", "workers: must be an integer"},
        {"workers", "0x10", "workers: must be an integer"},
        {"workers", "1e3", "workers: must be an integer"},
        {"workers", "[4]", "workers: must be an integer"},
        {"workers", "", "workers: must be an integer"},
        {"retry.max_attempts", "~", "retry.max_attempts: must be an integer"},
        {"routes[].timeout_ms", "{a: 1}", "routes[0].timeout_ms: must be an integer"},
        {"clients.allow_unauthenticated", "yes", "clients.allow_unauthenticated: must be true or false"},
        {"clients.allow_unauthenticated", "1", "clients.allow_unauthenticated: must be true or false"},
        {"clients.allow_unauthenticated", "\"true\"", "clients.allow_unauthenticated: must be true or false"},
        {"boundary.default_patterns", "on", "boundary.default_patterns: must be true or false"},
        {"routes[].api_key_required", "[true]", "routes[0].api_key_required: must be true or false"},
        {"listen", "[a]", "listen: must be a string"},
        {"listen", "8080", "listen: must be HOST:PORT with a port 0..65535 (IPv6 as [::1]:8080), got \"8080\""},
        {"listen", "\"::1:8080\"",
         "listen: must be HOST:PORT with a port 0..65535 (IPv6 as [::1]:8080), got \"::1:8080\""},
        {"retry.jitter", "[none]", "retry.jitter: must be a string"},
        {"retry.jitter", "some", "retry.jitter: must be none or full, got \"some\""},
        {"clients.tokens_env", "{a: b}", "clients.tokens_env: must be a string"},
        {"boundary.secret_patterns", "abc", "boundary.secret_patterns: must be a list of strings"},
        {"boundary.secret_patterns", "[[a]]", "boundary.secret_patterns[0]: must be a string"},
        {"boundary.secret_patterns", "[a, \"\"]",
         "boundary.secret_patterns[1]: must not be empty: it would match every body"},
        {"routes[].name", "[a]", "routes[0].name: must be a string"},
        {"routes[].upstream", "{a: b}", "routes[0].upstream: must be a string"},
        {"routes[].dialect", "openai2", "routes[0].dialect: must be openai, anthropic or generic, got \"openai2\""},
        {"routes[].headers", "[a]", "routes[0].headers: must be a map"},
        {"routes[].headers", "{x-a: [b]}", "routes[0].headers.x-a: must be a string"},
        {"routes[].query", "a=b", "routes[0].query: must be a map"},
        {"routes[].tls", "on", "routes[0].tls: must be a map"},
        {"routes[].tls", "{ca_file: [a]}", "routes[0].tls.ca_file: must be a string"},
        {"routes[].retry", "3", "routes[0].retry: must be a map"},
        {"routes[].models", "m", "routes[0].models: must be a list"},
        {"routes[].models", "[[m]]",
         "routes[0].models[0]: must be a model name or a map with name, upstream_model and accept"},
        {"routes[].models", "[{name: m, accept: x}]", "routes[0].models[0].accept: must be a list of strings"},
        {"routes[].models", "[{name: m, upstream_model: [x]}]", "routes[0].models[0].upstream_model: must be a string"},
        {"routes[].weight", "1.5", "routes[0].weight: must be an integer"},
        {"routes[].breaker", "on", "routes[0].breaker: must be a map"},
        {"routes[].breaker.enabled", "yes", "routes[0].breaker.enabled: must be true or false"},
        {"routes[].breaker.failure_ratio", "half", "routes[0].breaker.failure_ratio: must be a decimal number, as 0.5"},
        {"routes[].breaker.failure_ratio", "\"0.5\"",
         "routes[0].breaker.failure_ratio: must be a decimal number, as 0.5"},
        {"models[].balance", "[ordered]", "models[0].balance: must be a string"},
        {"models[].fallbacks", "[[n]]", "models[0].fallbacks[0]: must be a string"},
        {"models[].fallback_on", "[{a: b}]", "models[0].fallback_on[0]: must be a string"},
    }));
    CAPTURE(path, value);
    CHECK(problem_lines(yaml_with({{path, value}})) == Lines{expected});
}

TEST_CASE("sections that must be maps or lists") {
    CHECK(problem_lines("limits: 5\nroutes: [{name: r, upstream: 'http://h', models: [m]}]\n") ==
          Lines{"limits: must be a map"});
    CHECK(problem_lines("retry: [1]\nroutes: [{name: r, upstream: 'http://h', models: [m]}]\n") ==
          Lines{"retry: must be a map"});
    CHECK(problem_lines("clients: x\nboundary: y\nroutes: [{name: r, upstream: 'http://h', models: [m]}]\n") ==
          Lines{"clients: must be a map", "boundary: must be a map"});
    CHECK(problem_lines("routes: {name: r}\n") == Lines{"routes: must be a list"});
    CHECK(problem_lines("routes: [x]\n") == Lines{"routes[0]: must be a map"});
}

TEST_CASE("unknown keys are refused wherever they are") {
    auto [path, value, expected] = GENERATE(table<std::string, std::string, std::string>({
        {"listne", "127.0.0.1:1", "listne: unknown key (did you mean listen?)"},
        {"colour", "blue", "colour: unknown key"},
        {"limits.max_conections", "5", "limits.max_conections: unknown key (did you mean max_connections?)"},
        {"limits.max_streams", "5", "limits.max_streams: unknown key"},
        {"clients.token_env", "X", "clients.token_env: unknown key (did you mean tokens_env?)"},
        {"clients.tokens", "[a]", "clients.tokens: unknown key"},
        {"retry.budget", "0.2", "retry.budget: unknown key"},
        {"boundary.patterns", "[]", "boundary.patterns: unknown key"},
        {"routes[].timeout", "5", "routes[0].timeout: unknown key"},
        {"routes[].breakers", "{}", "routes[0].breakers: unknown key (did you mean breaker?)"},
        {"routes[].breaker.probe", "1", "routes[0].breaker.probe: unknown key (did you mean probes?)"},
        {"models[].balanse", "ordered", "models[0].balanse: unknown key (did you mean balance?)"},
        {"models[].upstream", "x", "models[0].upstream: unknown key"},
        {"routes[].api_key", "sk-live", "routes[0].api_key: unknown key"},
        {"routes[].retry.max_atempts", "3", "routes[0].retry.max_atempts: unknown key (did you mean max_attempts?)"},
        {"routes[].tls", "{ca: x}", "routes[0].tls.ca: unknown key"},
        {"routes[].models", "[{name: m, acept: [m]}]", "routes[0].models[0].acept: unknown key (did you mean accept?)"},
        {"routes[].models", "[{name: m, fallbacks: [n]}]", "routes[0].models[0].fallbacks: unknown key"},
    }));
    CAPTURE(path, value);
    CHECK(problem_lines(yaml_with({{path, value}})) == Lines{expected});
}

TEST_CASE("a key written twice in one map is refused at its second occurrence") {
    CHECK(problem_lines("workers: 1\nworkers: 2\nroutes: [{name: r, upstream: 'http://h', models: [m]}]\n") ==
          Lines{"workers: duplicate key"});
    CHECK(problem_lines(yaml_with({{"routes[].headers", "{x-a: b, x-a: c}"}})) ==
          Lines{"routes[0].headers.x-a: duplicate key"});
}

TEST_CASE("every problem is reported, in file order, with exact paths") {
    const std::string yaml = R"(workers: 999
limits:
  max_header_bytes: 10
retry:
  max_attempts: 0
routes:
  - name: a
    upstream: https://example.com/v1
    models: [m]
  - name: b
    upstream: https://example.com/v1
    models: [n]
    retry: {max_attempts: 40}
)";
    CHECK(problem_lines(yaml) == Lines{
                                     "workers: must be 0..256, got 999",
                                     "limits.max_header_bytes: must be 1024..1048576 (1 KiB..1 MiB), got 10",
                                     "retry.max_attempts: must be 1..16, got 0",
                                     "routes[1].retry.max_attempts: must be 1..16, got 40",
                                 });
}

TEST_CASE("three bad keys give three lines and no config") {
    const mc::LoadResult result = mc::load_config(
        yaml_with({{"workers", "x"}, {"limits.drain_ms", "1"}, {"routes[].dialect", "gpt"}}));
    CHECK_FALSE(result.config.has_value());
    REQUIRE(result.problems.size() == 3);
    CHECK(result.problems[0].path == "workers");
    CHECK(result.problems[0].why == "must be an integer");
    CHECK(result.problems[1].path == "limits.drain_ms");
    CHECK(result.problems[2].path == "routes[0].dialect");
}

TEST_CASE("documents that are not a map of settings") {
    CHECK(problem_lines("") == Lines{"routes: is required (list at least one route)"});
    CHECK(problem_lines("# only a comment\n") == Lines{"routes: is required (list at least one route)"});
    CHECK(problem_lines("- a\n- b\n") == Lines{"the document must be a map of settings"});
    CHECK(problem_lines("just text") == Lines{"the document must be a map of settings"});
    CHECK(problem_lines("routes: []\n---\nroutes: []\n") == Lines{"must hold one YAML document, found 2"});
}

TEST_CASE("a YAML syntax error is one problem with its line and column") {
    const mc::LoadResult result = mc::load_config("workers: 1\nroutes: [\n  {name: a\n");
    REQUIRE(result.problems.size() == 1);
    CHECK(result.problems[0].path.empty());
    CHECK(result.problems[0].why.rfind("YAML syntax error at line ", 0) == 0);
    CHECK_FALSE(result.config.has_value());

    CHECK(problem_lines("a: [1,\nb: 2") == Lines{"YAML syntax error at line 2, column 1: end of sequence flow not found"});
}

TEST_CASE("odd documents never throw") {
    const std::string deep(20000, '[');
    for (const std::string& text :
         {deep, std::string("a: &x [1]\nb: *x\n"), std::string("? [a, b]\n: c\n"), std::string("!!binary x"),
          std::string("routes: *nope\n"), std::string("\t\x01\xff")}) {
        CAPTURE(text.substr(0, 40));
        mc::LoadResult result;
        REQUIRE_NOTHROW(result = mc::load_config(text));
        CHECK_FALSE(result.problems.empty());
        CHECK_FALSE(result.config.has_value());
    }
}
