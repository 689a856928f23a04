// The embedded default and every default value of docs/behaviour.md section 3.
#include "config/config.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
using modelproxy::policy::Jitter;

namespace {

constexpr const char* minimal = R"(
routes:
  - name: only
    upstream: https://example.com/v1
    models: [m]
)";

mc::Config load_ok(std::string_view yaml) {
    mc::LoadResult result = mc::load_config(yaml);
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.problems.empty());
    REQUIRE(result.config.has_value());
    return *result.config;
}

}  // namespace

TEST_CASE("the embedded default loads with no problems and serves every model from OpenAI") {
    const mc::Config config = load_ok(mc::embedded_default_yaml());
    CHECK(config.listen_host == "127.0.0.1");
    CHECK(config.listen_port == 8080);
    REQUIRE(config.routes.size() == 1);
    const mc::Route& route = config.routes[0];
    CHECK(route.name == "openai");
    CHECK(route.upstream_url == "https://api.openai.com/v1");
    CHECK(route.upstream.https);
    CHECK(route.upstream.host == "api.openai.com");
    CHECK(route.upstream.port == 443);
    CHECK(route.upstream.base_path == "/v1");
    CHECK(route.api_key_env == "OPENAI_API_KEY");
    CHECK(route.api_key_header == "authorization");
    CHECK(route.api_key_prefix == "Bearer ");
    CHECK_FALSE(route.api_key_required);
    CHECK(route.wildcard);
    CHECK(route.models.empty());
    CHECK(mc::wildcard_route(config) == &route);
    CHECK_FALSE(route.api_key.has_value());
}

TEST_CASE("every top-level default") {
    const mc::Config config = load_ok(minimal);
    CHECK(config.listen_host == "127.0.0.1");
    CHECK(config.listen_port == 8080);
    CHECK(config.workers == 0);

    CHECK(config.limits.max_request_body_bytes == 33554432);
    CHECK(config.limits.max_header_bytes == 16384);
    CHECK(config.limits.max_response_body_bytes == 67108864);
    CHECK(config.limits.max_event_bytes == 1048576);
    CHECK(config.limits.header_timeout_ms == 10000);
    CHECK(config.limits.idle_timeout_ms == 75000);
    CHECK(config.limits.max_connections == 10000);
    CHECK(config.limits.drain_ms == 30000);

    CHECK(config.clients.tokens_env.empty());
    CHECK_FALSE(config.clients.allow_unauthenticated);
    CHECK(config.clients.tokens.empty());

    CHECK(config.retry.max_attempts == 8);
    CHECK(config.retry.base_delay_ms == 500);
    CHECK(config.retry.max_delay_ms == 20000);
    CHECK(config.retry.max_total_delay_ms == 60000);
    CHECK(config.retry.throttled_max_attempts == 24);
    CHECK(config.retry.throttled_max_total_delay_ms == 380000);
    CHECK(config.retry.jitter == Jitter::none);
    CHECK(config.retry.min_attempt_ms == 1000);

    CHECK(config.boundary.secret_patterns.empty());
    CHECK(config.boundary.default_patterns);
}

TEST_CASE("every route default") {
    const mc::Config config = load_ok(minimal);
    REQUIRE(config.routes.size() == 1);
    const mc::Route& route = config.routes[0];
    CHECK(route.name == "only");
    CHECK(route.api_key_env.empty());
    CHECK(route.api_key_header == "authorization");
    CHECK(route.api_key_prefix == "Bearer ");
    CHECK_FALSE(route.api_key_required);
    CHECK(route.headers.empty());
    CHECK(route.query.empty());
    CHECK(route.tls.ca_file.empty());
    CHECK(route.tls.cert_file.empty());
    CHECK(route.tls.key_file.empty());
    CHECK(route.dialect == mc::Dialect::openai);
    CHECK(route.connect_timeout_ms == 5000);
    CHECK(route.timeout_ms == 300000);
    CHECK(route.stream_idle_timeout_ms == 60000);
    CHECK(route.stream_head_hold_ms == 10000);
    CHECK(route.max_stream_ms == 0);
    CHECK_FALSE(route.wildcard);
    CHECK(route.retry.max_attempts == 8);
    CHECK(route.retry.base_delay_ms == 500);
    CHECK(route.retry.max_delay_ms == 20000);
    CHECK(route.retry.max_total_delay_ms == 60000);
    CHECK(route.retry.throttled_max_attempts == 24);
    CHECK(route.retry.throttled_max_total_delay_ms == 380000);
    CHECK(route.retry.jitter == Jitter::none);
    CHECK(route.retry.min_attempt_ms == 1000);
    REQUIRE(route.models.size() == 1);
    CHECK(route.models[0].name == "m");
    CHECK(route.models[0].upstream_model == "m");
    CHECK(route.models[0].accept.empty());  // the default: m and its dated snapshots (docs/behaviour.md section 3)
}

TEST_CASE("every key can be set") {
    const mc::Config config = load_ok(R"(
listen: "[::1]:9090"
workers: 3
limits:
  max_request_body_bytes: 2048
  max_header_bytes: 4096
  max_response_body_bytes: 8192
  max_event_bytes: 2048
  header_timeout_ms: 11
  idle_timeout_ms: 12
  max_connections: 13
  drain_ms: 14
clients:
  tokens_env: CLIENT_TOKENS
  allow_unauthenticated: true
retry:
  max_attempts: 3
  base_delay_ms: 5
  max_delay_ms: 50
  max_total_delay_ms: 500
  throttled_max_attempts: 30
  throttled_max_total_delay_ms: 5000
  jitter: full
  min_attempt_ms: 7
boundary:
  secret_patterns: ["tok_[a-z]{8}", "x+"]
  default_patterns: false
routes:
  - name: anthropic
    upstream: https://api.anthropic.com:8443/v1/
    api_key_env: ANTHROPIC_API_KEY
    api_key_header: X-Api-Key
    api_key_required: true
    headers: {anthropic-version: "2023-06-01", X-Trace: "on"}
    query: {b: "2", a: "1"}
    tls: {ca_file: /etc/ca.pem, cert_file: /etc/c.pem, key_file: /etc/k.pem}
    dialect: anthropic
    connect_timeout_ms: 100
    timeout_ms: 200
    stream_idle_timeout_ms: 300
    stream_head_hold_ms: 400
    max_stream_ms: 500
    models:
      - claude-sonnet-4
      - name: fast
        upstream_model: claude-haiku
        accept: [claude-haiku, "claude-haiku-2*"]
)");
    CHECK(config.listen_host == "::1");
    CHECK(config.listen_port == 9090);
    CHECK(config.workers == 3);
    CHECK(config.limits.max_request_body_bytes == 2048);
    CHECK(config.limits.max_header_bytes == 4096);
    CHECK(config.limits.max_response_body_bytes == 8192);
    CHECK(config.limits.max_event_bytes == 2048);
    CHECK(config.limits.header_timeout_ms == 11);
    CHECK(config.limits.idle_timeout_ms == 12);
    CHECK(config.limits.max_connections == 13);
    CHECK(config.limits.drain_ms == 14);
    CHECK(config.clients.tokens_env == "CLIENT_TOKENS");
    CHECK(config.clients.allow_unauthenticated);
    CHECK(config.retry.max_attempts == 3);
    CHECK(config.retry.base_delay_ms == 5);
    CHECK(config.retry.max_delay_ms == 50);
    CHECK(config.retry.max_total_delay_ms == 500);
    CHECK(config.retry.throttled_max_attempts == 30);
    CHECK(config.retry.throttled_max_total_delay_ms == 5000);
    CHECK(config.retry.jitter == Jitter::full);
    CHECK(config.retry.min_attempt_ms == 7);
    CHECK(config.boundary.secret_patterns == std::vector<std::string>{"tok_[a-z]{8}", "x+"});
    CHECK_FALSE(config.boundary.default_patterns);

    REQUIRE(config.routes.size() == 1);
    const mc::Route& route = config.routes[0];
    CHECK(route.upstream.https);
    CHECK(route.upstream.host == "api.anthropic.com");
    CHECK(route.upstream.port == 8443);
    CHECK(route.upstream.base_path == "/v1");
    CHECK(route.api_key_env == "ANTHROPIC_API_KEY");
    CHECK(route.api_key_header == "x-api-key");
    CHECK(route.api_key_prefix == "");
    CHECK(route.api_key_required);
    using Pairs = std::vector<std::pair<std::string, std::string>>;
    CHECK(route.headers == Pairs{{"anthropic-version", "2023-06-01"}, {"X-Trace", "on"}});
    CHECK(route.query == Pairs{{"b", "2"}, {"a", "1"}});
    CHECK(route.tls.ca_file == "/etc/ca.pem");
    CHECK(route.tls.cert_file == "/etc/c.pem");
    CHECK(route.tls.key_file == "/etc/k.pem");
    CHECK(route.dialect == mc::Dialect::anthropic);
    CHECK(route.connect_timeout_ms == 100);
    CHECK(route.timeout_ms == 200);
    CHECK(route.stream_idle_timeout_ms == 300);
    CHECK(route.stream_head_hold_ms == 400);
    CHECK(route.max_stream_ms == 500);
    CHECK(route.retry.max_attempts == 3);
    CHECK(route.retry.jitter == Jitter::full);
    CHECK(route.retry.min_attempt_ms == 7);
    REQUIRE(route.models.size() == 2);
    CHECK(route.models[0].name == "claude-sonnet-4");
    CHECK(route.models[1].name == "fast");
    CHECK(route.models[1].upstream_model == "claude-haiku");
    CHECK(route.models[1].accept == std::vector<std::string>{"claude-haiku", "claude-haiku-2*"});
}

TEST_CASE("dialect generic and max_stream_ms 0 are accepted") {
    const mc::Config config = load_ok(R"(
routes:
  - {name: g, upstream: "http://10.0.0.5:8000", dialect: generic, max_stream_ms: 0, models: [m]}
)");
    CHECK(config.routes[0].dialect == mc::Dialect::generic);
    CHECK(config.routes[0].max_stream_ms == 0);
    CHECK(config.routes[0].upstream.host == "10.0.0.5");
    CHECK(config.routes[0].upstream.base_path == "");
}

TEST_CASE("Problem::line joins path and reason, or is the reason alone") {
    CHECK(mc::Problem{"routes[1].retry.max_attempts", "must be 1..16, got 40"}.line() ==
          "routes[1].retry.max_attempts: must be 1..16, got 40");
    CHECK(mc::Problem{"", "YAML syntax error at line 1, column 2: x"}.line() ==
          "YAML syntax error at line 1, column 2: x");
}
