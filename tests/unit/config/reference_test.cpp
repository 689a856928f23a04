// The schema table and docs/configuration.md, which is generated from it and
// the prose of config/reference.cpp (`modelproxy reference` prints it).
#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace mc = modelproxy::config;

namespace {

std::string read_reference() {
    const auto path = std::filesystem::path(MODELPROXY_SOURCE_DIR) / "docs" / "configuration.md";
    std::ifstream file(path);
    INFO("reading " << path.string());
    REQUIRE(file.good());
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

const mc::KeyInfo* key(std::string_view path) {
    for (const mc::KeyInfo& info : mc::schema_keys()) {
        if (info.path == path) {
            return &info;
        }
    }
    return nullptr;
}

}  // namespace

TEST_CASE("docs/configuration.md names every schema key") {
    const std::string reference = read_reference();
    for (const mc::KeyInfo& info : mc::schema_keys()) {
        CAPTURE(info.path);
        CHECK(reference.find("`" + info.path + "`") != std::string::npos);
    }
}

TEST_CASE("docs/configuration.md is what reference_document() generates, unchanged") {
    // When this fails: build/modelproxy reference > docs/configuration.md
    const std::string generated = mc::reference_document();
    CHECK(generated.find(mc::schema_reference_table()) != std::string::npos);
    CHECK(read_reference() == generated);
}

TEST_CASE("schema paths are unique and cover docs/behaviour.md section 3") {
    std::set<std::string> paths;
    for (const mc::KeyInfo& info : mc::schema_keys()) {
        CHECK(paths.insert(info.path).second);
        CHECK_FALSE(info.default_value.empty());
        CHECK_FALSE(info.range.empty());
        CHECK_FALSE(info.description.empty());
        CHECK(info.description.find('|') == std::string::npos);  // would break the table
        CHECK(info.range.find('|') == std::string::npos);
    }
    for (const char* path :
         {"listen", "workers", "limits.max_request_body_bytes", "limits.max_event_bytes", "limits.drain_ms",
          "clients.tokens_env",
          "clients.allow_unauthenticated", "retry.max_attempts", "retry.jitter", "retry.min_attempt_ms",
          "boundary.secret_patterns", "boundary.default_patterns", "routes", "routes[].name", "routes[].upstream",
          "routes[].api_key_env", "routes[].api_key_header", "routes[].api_key_prefix", "routes[].api_key_required",
          "routes[].headers", "routes[].query", "routes[].tls.ca_file", "routes[].tls.cert_file",
          "routes[].tls.key_file", "routes[].dialect", "routes[].connect_timeout_ms", "routes[].timeout_ms",
          "routes[].stream_idle_timeout_ms", "routes[].stream_head_hold_ms", "routes[].max_stream_ms",
          "routes[].models", "routes[].models[].name", "routes[].models[].upstream_model",
          "routes[].models[].accept", "routes[].retry", "routes[].weight", "routes[].first_byte_timeout_ms",
          "routes[].first_token_timeout_ms", "routes[].breaker.enabled", "routes[].breaker.consecutive_failures",
          "routes[].breaker.failure_ratio", "routes[].breaker.min_attempts", "routes[].breaker.window_ms",
          "routes[].breaker.open_ms", "routes[].breaker.max_open_ms", "routes[].breaker.probes",
          "routes[].breaker.fail_fast", "models", "models[].name", "models[].balance",
          "models[].attempts_per_candidate", "models[].fallbacks", "models[].fallback_on",
          "retry.budget_ratio", "retry.budget_min_concurrency", "admission.enabled", "admission.initial_limit",
          "admission.min_limit", "admission.max_limit", "admission.decrease", "admission.backpressure.rate-limit",
          "admission.backpressure.overload", "admission.backpressure.server", "admission.queue_timeout_ms",
          "admission.honour_ratelimit_headers", "routes[].admission", "fleet.redis", "fleet.password_env",
          "fleet.tls.ca_file", "fleet.key_prefix", "fleet.timeout_ms", "routes[].quota.requests_per_minute",
          "routes[].quota.tokens_per_minute", "routes[].resume.enabled", "routes[].resume.max_resumes",
          "routes[].resume.max_offset", "routes[].resume.only_deterministic"}) {
        CAPTURE(path);
        CHECK(key(path) != nullptr);
    }
    CHECK(mc::schema_keys().size() == 87);
}

TEST_CASE("schema rows show the defaults and ranges the loader applies") {
    auto [path, default_value, range] = GENERATE(table<std::string, std::string, std::string>({
        {"listen", "127.0.0.1:8080", "HOST:PORT, IPv6 as [::1]:8080; port 0..65535 (0: any free port)"},
        {"workers", "0 (one per core)", "0..256"},
        {"limits.max_request_body_bytes", "33554432 (32 MiB)", "1024..4294967296 (1 KiB..4 GiB)"},
        {"limits.max_header_bytes", "16384 (16 KiB)", "1024..1048576 (1 KiB..1 MiB)"},
        {"limits.idle_timeout_ms", "75000 (75 s)", "10..86400000 (10 ms..24 h)"},
        {"limits.max_connections", "10000", "1..1000000"},
        {"retry.max_attempts", "8", "1..16"},
        {"retry.base_delay_ms", "500", "1..3600000 (1 ms..1 h)"},
        {"retry.throttled_max_attempts", "24", "1..64"},
        {"retry.throttled_max_total_delay_ms", "380000 (380 s)", "1..86400000 (1 ms..24 h)"},
        {"retry.jitter", "none", "none or full"},
        {"routes[].timeout_ms", "300000 (5 min)", "10..86400000 (10 ms..24 h)"},
        {"routes[].max_stream_ms", "0 (off)", "0 (off) or 10..86400000 (10 ms..24 h)"},
        {"routes[].api_key_header", "authorization", "HTTP header name (stored lower-case)"},
        {"boundary.default_patterns", "true", "true or false"},
        {"routes[].weight", "1", "1..1000"},
        {"routes[].first_byte_timeout_ms", "0 (off)",
         "0 (off) or 10..86400000 (10 ms..24 h), at most the route's timeout_ms"},
        {"routes[].first_token_timeout_ms", "0 (off)",
         "0 (off) or 10..86400000 (10 ms..24 h), at most the route's timeout_ms"},
        {"routes[].breaker.enabled", "true", "true or false"},
        {"routes[].breaker.consecutive_failures", "5", "1..1000"},
        {"routes[].breaker.failure_ratio", "0.5", "0.01..1 (a decimal)"},
        {"routes[].breaker.min_attempts", "20", "1..100000"},
        {"routes[].breaker.window_ms", "10000 (10 s)", "100..600000 (100 ms..10 min)"},
        {"routes[].breaker.open_ms", "5000 (5 s)", "10..600000 (10 ms..10 min)"},
        {"routes[].breaker.max_open_ms", "20000 (20 s)", "10..3600000 (10 ms..1 h), at least open_ms"},
        {"routes[].breaker.probes", "1", "1..100"},
        {"routes[].breaker.fail_fast", "false", "true or false"},
        {"models[].balance", "ordered", "ordered or weighted"},
        {"models[].attempts_per_candidate", "2", "1..16"},
        {"retry.budget_ratio", "0.2", "0..1 (a decimal)"},
        {"retry.budget_min_concurrency", "3", "0..10000"},
        {"admission.enabled", "false", "true or false"},
        {"admission.initial_limit", "64", "1..100000"},
        {"admission.min_limit", "1", "1..100000"},
        {"admission.max_limit", "1024", "1..100000"},
        {"admission.decrease", "0.7", "0.1..0.99 (a decimal)"},
        {"admission.backpressure.rate-limit", "1", "0..10"},
        {"admission.backpressure.overload", "3", "0..10"},
        {"admission.backpressure.server", "0", "0..10"},
        {"admission.queue_timeout_ms", "5000 (5 s)",
         "0 (the turn deadline) or 1..86400000 (1 ms..24 h), at most the timeout_ms of each route it applies to"},
        {"admission.honour_ratelimit_headers", "true", "true or false"},
        {"routes[].admission", "{} (the catalog)", "map with any key of `admission`; `backpressure` merges key by key"},
        {"fleet.redis", "(unset: per replica)",
         "redis:// or rediss:// URL, HOST[:PORT][/DB]: port 1..65535 (6379), database 0..15 (0); no user or "
         "password"},
        {"fleet.password_env", "(unset: no AUTH)", "environment variable name (`[A-Za-z_][A-Za-z0-9_]*`)"},
        {"fleet.tls.ca_file", "\"\" (system trust store)", "file path; rediss:// only"},
        {"fleet.key_prefix", "`modelproxy:`", "letters, digits, `:`, `.`, `_`, `-`; 1..64 characters"},
        {"fleet.timeout_ms", "50", "1..5000 (1 ms..5 s)"},
        {"routes[].quota.requests_per_minute", "(unset: no limit)", "1..100000000"},
        {"routes[].quota.tokens_per_minute", "(unset: no limit)", "1..10000000000"},
        {"routes[].resume.enabled", "false", "true or false"},
        {"routes[].resume.max_resumes", "1", "1..3"},
        {"routes[].resume.max_offset", "4096", "1..1000000"},
        {"routes[].resume.only_deterministic", "true", "true or false"},
        {"models[].fallback_on", "network, timeout, server, rate-limit, stream-incomplete",
         "list of network, timeout, server, rate-limit, stream-incomplete, content-filter, invalid-request, "
         "not-found and `code:<X>`; `[]` never falls over"},
    }));
    CAPTURE(path);
    const mc::KeyInfo* info = key(path);
    REQUIRE(info != nullptr);
    CHECK(info->default_value == default_value);
    CHECK(info->range == range);
}
