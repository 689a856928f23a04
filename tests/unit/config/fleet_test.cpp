// The keys of docs/behaviour.md section 15: the `fleet` block (its Redis URL,
// password variable, TLS, key prefix and timeout) and a route's `quota`:
// defaults, every range edge and every refusal line.
#include "config/config.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;

namespace {

// `top` at the top level, then one route whose flow map also holds `route`
// (without braces; "" for none).
std::string document(const std::string& top, const std::string& route = "") {
    return top + (top.empty() ? "" : "\n") + "routes:\n  - {name: r, upstream: 'http://h', models: [m]" +
           (route.empty() ? "" : ", " + route) + "}\n";
}

// A fleet block in flow style holding `keys`.
std::string fleet(const std::string& keys) { return "fleet: {" + keys + "}"; }

Lines problem_lines(const std::string& yaml) {
    Lines lines;
    for (const mc::Problem& problem : mc::load_config(yaml).problems) {
        lines.push_back(problem.line());
    }
    return lines;
}

mc::Config load_ok(const std::string& yaml) {
    const mc::LoadResult result = mc::load_config(yaml);
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.problems.empty());
    REQUIRE(result.config.has_value());
    return *result.config;
}

const std::string userinfo_why =
    "fleet.redis: must not carry a user or password; put the password in an environment variable and name it in "
    "fleet.password_env";
const std::string db_rule = "fleet.redis: must be redis[s]://HOST[:PORT] then at most /DB, a database number 0..15";
const std::string prefix_rule = "fleet.key_prefix: must be 1..64 characters of letters, digits, ':', '.', '_' or '-'";

}  // namespace

TEST_CASE("without fleet.redis state is per replica, and a route has no quota") {
    const std::string top = GENERATE(as<std::string>{}, "", "fleet: {redis: ''}", "fleet: {timeout_ms: 100}",
                                     "fleet: {}", "fleet: {key_prefix: 'a:', password_env: MP_REDIS_PASSWORD}");
    CAPTURE(top);
    const mc::Config config = load_ok(document(top));
    CHECK_FALSE(config.fleet.has_value());
    CHECK_FALSE(config.routes[0].quota.has_value());
}

TEST_CASE("a fleet with only redis takes the defaults of docs/behaviour.md section 15") {
    const mc::Config config = load_ok(document(fleet("redis: 'redis://127.0.0.1:6379/0'")));
    REQUIRE(config.fleet.has_value());
    const mc::Fleet& f = *config.fleet;
    CHECK(f.redis_url == "redis://127.0.0.1:6379/0");
    CHECK_FALSE(f.tls);
    CHECK(f.host == "127.0.0.1");
    CHECK(f.port == 6379);
    CHECK(f.db == 0);
    CHECK(f.password_env.empty());
    CHECK_FALSE(f.password.has_value());  // filled by resolve_environment only
    CHECK(f.ca_file.empty());
    CHECK(f.key_prefix == "modelproxy:");
    CHECK(f.timeout_ms == 50);
}

TEST_CASE("a fleet with every key set") {
    const mc::Config config =
        load_ok(document("fleet:\n  redis: rediss://Redis.Example:6380/15\n  password_env: MP_REDIS_PASSWORD\n"
                         "  tls: {ca_file: /etc/ssl/redis-ca.pem}\n  key_prefix: \"mp.prod_1-a:\"\n  timeout_ms: 5000"));
    REQUIRE(config.fleet.has_value());
    const mc::Fleet& f = *config.fleet;
    CHECK(f.redis_url == "rediss://Redis.Example:6380/15");
    CHECK(f.tls);
    CHECK(f.host == "redis.example");
    CHECK(f.port == 6380);
    CHECK(f.db == 15);
    CHECK(f.password_env == "MP_REDIS_PASSWORD");
    CHECK(f.ca_file == "/etc/ssl/redis-ca.pem");
    CHECK(f.key_prefix == "mp.prod_1-a:");
    CHECK(f.timeout_ms == 5000);
}

TEST_CASE("fleet.redis URLs the loader accepts, and their parts") {
    auto [url, tls, host, port, db] = GENERATE(table<std::string, bool, std::string, int, int>({
        {"redis://h", false, "h", 6379, 0},
        {"redis://h/", false, "h", 6379, 0},
        {"redis://h:/", false, "h", 6379, 0},
        {"redis://h:1/0", false, "h", 1, 0},
        {"redis://h:65535/15", false, "h", 65535, 15},
        {"redis://h/07", false, "h", 6379, 7},
        {"rediss://cache.internal:6390", true, "cache.internal", 6390, 0},
        {"REDIS://H", false, "h", 6379, 0},
        {"redis://[::1]:6379/3", false, "::1", 6379, 3},
        {"redis://10.0.0.7/1", false, "10.0.0.7", 6379, 1},
    }));
    CAPTURE(url);
    const mc::Config config = load_ok(document(fleet("redis: '" + url + "'")));
    REQUIRE(config.fleet.has_value());
    CHECK(config.fleet->redis_url == url);
    CHECK(config.fleet->tls == tls);
    CHECK(config.fleet->host == host);
    CHECK(config.fleet->port == port);
    CHECK(config.fleet->db == db);
}

TEST_CASE("fleet.redis URLs the loader refuses, never quoting a password") {
    auto [url, expected] = GENERATE(table<std::string, std::string>({
        {"http://h:6379", "fleet.redis: must start with redis:// or rediss://"},
        {"h:6379", "fleet.redis: must start with redis:// or rediss://"},
        {"redis:h", "fleet.redis: must start with redis:// or rediss://"},
        {"127.0.0.1:6379", "fleet.redis: must be a redis:// or rediss:// URL"},
        {"redis://:s3cret-pw@h:6379/0", userinfo_why},
        {"redis://default:s3cret-pw@h", userinfo_why},
        {"rediss://s3cret-pw@h", userinfo_why},
        {"redis://", "fleet.redis: must name a host"},
        {"redis:///0", "fleet.redis: must name a host"},
        {"redis://h:0", "fleet.redis: port must be 1..65535, got 0"},
        {"redis://h:65536", "fleet.redis: port must be 1..65535, got 65536"},
        {"redis://h/16", "fleet.redis: database must be 0..15, got 16"},
        {"redis://h/99", "fleet.redis: database must be 0..15, got 99"},
        {"redis://h/100", db_rule},
        {"redis://h/db", db_rule},
        {"redis://h/0/1", db_rule},
        {"redis://h/-1", db_rule},
        {"redis://h?db=1", "fleet.redis: must not have a query"},
        {"redis://h#0", "fleet.redis: must not have a fragment"},
        {"redis://h w", "fleet.redis: must be a redis:// or rediss:// URL"},
        {"redis://h$x", "fleet.redis: must name a host by letters, digits, '.', '-' or an IP address"},
    }));
    CAPTURE(url);
    const Lines lines = problem_lines(document(fleet("redis: '" + url + "'")));
    CHECK(lines == Lines{expected});
    for (const std::string& line : lines) {
        CHECK(line.find("s3cret") == std::string::npos);
    }
}

TEST_CASE("the fleet block's other keys: refusals and range edges") {
    auto [keys, expected] = GENERATE(table<std::string, Lines>({
        {"redis: 'redis://h', timeout_ms: 0", Lines{"fleet.timeout_ms: must be 1..5000 (1 ms..5 s), got 0"}},
        {"redis: 'redis://h', timeout_ms: 5001", Lines{"fleet.timeout_ms: must be 1..5000 (1 ms..5 s), got 5001"}},
        {"redis: 'redis://h', timeout_ms: '50'", Lines{"fleet.timeout_ms: must be an integer"}},
        {"redis: 'redis://h', timeout_ms: 1", Lines{}},
        {"redis: 'redis://h', timeout_ms: 5000", Lines{}},
        {"redis: 'redis://h', key_prefix: ''", Lines{prefix_rule}},
        {"redis: 'redis://h', key_prefix: '" + std::string(65, 'k') + "'", Lines{prefix_rule}},
        {"redis: 'redis://h', key_prefix: '" + std::string(64, 'k') + "'", Lines{}},
        {"redis: 'redis://h', key_prefix: 'a'", Lines{}},
        {"redis: 'redis://h', key_prefix: 'a b'", Lines{prefix_rule}},
        {"redis: 'redis://h', key_prefix: 'a/b'", Lines{prefix_rule}},
        {"redis: 'redis://h', key_prefix: 'a{b}'", Lines{prefix_rule}},
        {"redis: 'redis://h', password_env: 'hunter2 pw'",
         Lines{"fleet.password_env: must be the name of an environment variable, not its value"}},
        {"redis: 'redis://h', password_env: '9LIVES'",
         Lines{"fleet.password_env: must be the name of an environment variable, not its value"}},
        {"redis: 'redis://h', password_env: ''", Lines{}},
        {"redis: 'redis://h', tls: {ca_file: ca.pem}",
         Lines{"fleet.tls.ca_file: applies only to rediss:// (TLS); fleet.redis is redis://"}},
        {"tls: {ca_file: ca.pem}",
         Lines{"fleet.tls.ca_file: applies only to a rediss:// fleet.redis, and fleet.redis is not set"}},
        {"redis: 'rediss://h', tls: {ca_file: ''}", Lines{}},
        {"redis: 'redis://h', tls: {ca_file: ''}", Lines{}},
        {"redis: 'rediss://h', tls: {cert_file: c.pem}", Lines{"fleet.tls.cert_file: unknown key"}},
        {"redis: 'rediss://h', tls: []", Lines{"fleet.tls: must be a map"}},
        {"redis: 'redis://h', timout_ms: 50", Lines{"fleet.timout_ms: unknown key (did you mean timeout_ms?)"}},
        {"redis: ['redis://h']", Lines{"fleet.redis: must be a string"}},
        // A refused URL does not also refuse the ca_file it would have applied to.
        {"redis: 'http://h', tls: {ca_file: ca.pem}", Lines{"fleet.redis: must start with redis:// or rediss://"}},
    }));
    CAPTURE(keys);
    CHECK(problem_lines(document(fleet(keys))) == expected);
}

TEST_CASE("fleet must be a map") {
    CHECK(problem_lines(document("fleet: redis://h")) == Lines{"fleet: must be a map"});
    CHECK(problem_lines(document("fleet: []")) == Lines{"fleet: must be a map"});
}

TEST_CASE("a route's quota: each key alone, both, and 0 meaning no limit on the other") {
    auto [route, requests, tokens] = GENERATE(table<std::string, std::int64_t, std::int64_t>({
        {"quota: {requests_per_minute: 10000, tokens_per_minute: 2000000}", 10000, 2000000},
        {"quota: {requests_per_minute: 1}", 1, 0},
        {"quota: {requests_per_minute: 100000000}", 100000000, 0},
        {"quota: {tokens_per_minute: 1}", 0, 1},
        {"quota: {tokens_per_minute: 10000000000}", 0, 10000000000},
    }));
    CAPTURE(route);
    const mc::Config config = load_ok(document("", route));
    REQUIRE(config.routes[0].quota.has_value());
    CHECK(*config.routes[0].quota == mc::Quota{requests, tokens});
}

TEST_CASE("a route's quota refused: out of range, empty, not a map, unknown keys") {
    auto [route, expected] = GENERATE(table<std::string, Lines>({
        {"quota: {requests_per_minute: 0}", Lines{"routes[0].quota.requests_per_minute: must be 1..100000000, got 0"}},
        {"quota: {requests_per_minute: 100000001}",
         Lines{"routes[0].quota.requests_per_minute: must be 1..100000000, got 100000001"}},
        {"quota: {tokens_per_minute: 0}", Lines{"routes[0].quota.tokens_per_minute: must be 1..10000000000, got 0"}},
        {"quota: {tokens_per_minute: 10000000001}",
         Lines{"routes[0].quota.tokens_per_minute: must be 1..10000000000, got 10000000001"}},
        {"quota: {tokens_per_minute: -5}", Lines{"routes[0].quota.tokens_per_minute: must be 1..10000000000, got -5"}},
        {"quota: {tokens_per_minute: 1.5}", Lines{"routes[0].quota.tokens_per_minute: must be an integer"}},
        {"quota: {}", Lines{"routes[0].quota: must set requests_per_minute, tokens_per_minute or both"}},
        {"quota: 100", Lines{"routes[0].quota: must be a map"}},
        {"quota: {request_per_minute: 5}",
         Lines{"routes[0].quota.request_per_minute: unknown key (did you mean requests_per_minute?)"}},
    }));
    CAPTURE(route);
    CHECK(problem_lines(document("", route)) == expected);
}

TEST_CASE("each route has its own quota") {
    const mc::Config config = load_ok(R"(routes:
  - {name: a, upstream: 'http://h', models: [m], quota: {requests_per_minute: 60}}
  - {name: b, upstream: 'http://h', models: [n]}
)");
    CHECK(config.routes[0].quota == std::optional<mc::Quota>(mc::Quota{60, 0}));
    CHECK_FALSE(config.routes[1].quota.has_value());
}
