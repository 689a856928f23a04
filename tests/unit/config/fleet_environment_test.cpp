// fleet.password_env read by resolve_environment (docs/behaviour.md section
// 15), and doctor's quota and fleet lines (config/route_load.hpp).
#include "config/config.hpp"
#include "config/route_load.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;

namespace {

mc::Getenv fake_env(std::map<std::string, std::string> vars) {
    auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
    return [shared](const char* name) -> const char* {
        const auto it = shared->find(name);
        return it == shared->end() ? nullptr : it->second.c_str();
    };
}

mc::Config load_ok(const std::string& yaml) {
    const mc::LoadResult result = mc::load_config(yaml);
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.config.has_value());
    return *result.config;
}

std::string with_fleet(const std::string& fleet_keys, const std::string& route = "") {
    return (fleet_keys.empty() ? std::string() : "fleet: {" + fleet_keys + "}\n") +
           "routes:\n  - {name: r, upstream: 'http://h', models: [m]" + (route.empty() ? "" : ", " + route) + "}\n";
}

Lines error_lines(const mc::EnvResult& result) {
    Lines lines;
    for (const mc::Problem& problem : result.errors) {
        lines.push_back(problem.line());
    }
    return lines;
}

constexpr const char* password_fleet = "redis: 'redis://h', password_env: MP_REDIS_PASSWORD";

}  // namespace

TEST_CASE("a set password variable fills Fleet::password") {
    mc::Config config = load_ok(with_fleet(password_fleet));
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({{"MP_REDIS_PASSWORD", "pw 1"}}));
    CHECK(result.errors.empty());
    CHECK(result.notices.empty());
    REQUIRE(config.fleet.has_value());
    CHECK(config.fleet->password == std::optional<std::string>("pw 1"));
}

TEST_CASE("a password variable that is unset, empty or holds a control character is an error, never echoed") {
    // The variable's value; nullopt: unset.
    auto [value, expected] = GENERATE(table<std::optional<std::string>, std::string>({
        {std::nullopt, "fleet.password_env: MP_REDIS_PASSWORD is not set; it must hold the Redis password"},
        {"", "fleet.password_env: MP_REDIS_PASSWORD is empty; it must hold the Redis password"},
        {"s3cret\n", "fleet.password_env: MP_REDIS_PASSWORD holds a control character (a trailing newline?)"},
    }));
    mc::Config config = load_ok(with_fleet(password_fleet));
    std::map<std::string, std::string> env;
    if (value) {
        env["MP_REDIS_PASSWORD"] = *value;
    }
    const mc::EnvResult result = mc::resolve_environment(config, fake_env(env));
    CHECK(error_lines(result) == Lines{expected});
    CHECK_FALSE(config.fleet->password.has_value());
}

TEST_CASE("no password variable, or no fleet, reads nothing and refuses nothing") {
    const std::string yaml = GENERATE(as<std::string>{}, with_fleet("redis: 'redis://h'"),
                                      with_fleet("password_env: MP_REDIS_PASSWORD"), with_fleet(""));
    CAPTURE(yaml);
    mc::Config config = load_ok(yaml);
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({}));
    CHECK(result.errors.empty());
    CHECK(result.notices.empty());
    if (config.fleet) {
        CHECK_FALSE(config.fleet->password.has_value());
    }
}

TEST_CASE("a second resolve drops a password that is no longer set") {
    mc::Config config = load_ok(with_fleet(password_fleet));
    mc::resolve_environment(config, fake_env({{"MP_REDIS_PASSWORD", "pw"}}));
    REQUIRE(config.fleet->password.has_value());
    mc::resolve_environment(config, fake_env({}));
    CHECK_FALSE(config.fleet->password.has_value());
}

TEST_CASE("doctor's quota line for a route") {
    auto [fleet, route, expected] = GENERATE(table<std::string, std::string, std::optional<std::string>>({
        {"", "", std::nullopt},
        {"", "quota: {requests_per_minute: 10000, tokens_per_minute: 2000000}",
         "  quota: requests_per_minute 10000, tokens_per_minute 2000000, each replica its own"},
        {"redis: 'redis://h'", "quota: {requests_per_minute: 10000, tokens_per_minute: 2000000}",
         "  quota: requests_per_minute 10000, tokens_per_minute 2000000, shared by the fleet"},
        {"redis: 'redis://h'", "quota: {tokens_per_minute: 5}",
         "  quota: requests_per_minute no limit, tokens_per_minute 5, shared by the fleet"},
        {"", "quota: {requests_per_minute: 7}",
         "  quota: requests_per_minute 7, tokens_per_minute no limit, each replica its own"},
    }));
    CAPTURE(fleet, route);
    const mc::Config config = load_ok(with_fleet(fleet, route));
    CHECK(mc::render_route_quota(config.routes[0], config.fleet.has_value()) == expected);
}

TEST_CASE("doctor's fleet line: the URL from its parts, the password by its variable") {
    auto [fleet, expected] = GENERATE(table<std::string, std::string>({
        {"", "fleet: per replica (no fleet.redis)"},
        {"redis: ''", "fleet: per replica (no fleet.redis)"},
        {"redis: 'redis://127.0.0.1:6379/0'",
         "fleet: redis redis://127.0.0.1:6379/0, key_prefix modelproxy:, timeout_ms 50, no password"},
        {"redis: 'REDIS://Cache.Local', password_env: MP_REDIS_PASSWORD, key_prefix: 'team-a:', timeout_ms: 20",
         "fleet: redis redis://cache.local:6379/0, key_prefix team-a:, timeout_ms 20, password from "
         "MP_REDIS_PASSWORD"},
        {"redis: 'rediss://[::1]:6380/2', tls: {ca_file: /etc/redis-ca.pem}",
         "fleet: redis rediss://[::1]:6380/2, key_prefix modelproxy:, timeout_ms 50, no password, tls.ca_file "
         "/etc/redis-ca.pem"},
    }));
    CAPTURE(fleet);
    CHECK(mc::render_fleet(load_ok(with_fleet(fleet))) == expected);
}
