// resolve_environment and is_loopback_host: keys from the environment, client
// tokens, and docs/behaviour.md section 12's refusal to listen open with an injected key.
#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <map>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;

namespace {

// A getenv over a fixed map; variables not in it are unset.
mc::Getenv fake_env(std::map<std::string, std::string> vars) {
    auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
    return [shared](const char* name) -> const char* {
        const auto it = shared->find(name);
        return it == shared->end() ? nullptr : it->second.c_str();
    };
}

mc::Config load_ok(std::string_view yaml) {
    mc::LoadResult result = mc::load_config(yaml);
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.config.has_value());
    return *result.config;
}

Lines error_lines(const mc::EnvResult& result) {
    Lines lines;
    for (const mc::Problem& problem : result.errors) {
        lines.push_back(problem.line());
    }
    return lines;
}

constexpr const char* two_routes = R"(
routes:
  - {name: openai, upstream: 'https://api.openai.com/v1', api_key_env: OPENAI_API_KEY, models: ['*']}
  - {name: local, upstream: 'http://127.0.0.1:9000', models: [llama]}
)";

}  // namespace

TEST_CASE("a set key variable fills api_key, a route without api_key_env stays pass-through") {
    mc::Config config = load_ok(two_routes);
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({{"OPENAI_API_KEY", "sk-test-123"}}));
    CHECK(result.errors.empty());
    CHECK(result.notices.empty());
    CHECK(config.routes[0].api_key == std::optional<std::string>("sk-test-123"));
    CHECK_FALSE(config.routes[1].api_key.has_value());
}

TEST_CASE("an unset key variable passes client credentials through and says so") {
    mc::Config config = load_ok(two_routes);
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({}));
    CHECK(result.errors.empty());
    CHECK(result.notices == Lines{"route openai: OPENAI_API_KEY is not set; client credentials are passed through"});
    CHECK_FALSE(config.routes[0].api_key.has_value());
}

TEST_CASE("an empty key variable counts as unset") {
    mc::Config config = load_ok(two_routes);
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({{"OPENAI_API_KEY", ""}}));
    CHECK(result.errors.empty());
    CHECK(result.notices == Lines{"route openai: OPENAI_API_KEY is empty; client credentials are passed through"});
    CHECK_FALSE(config.routes[0].api_key.has_value());
}

TEST_CASE("api_key_required makes an unset variable an error") {
    mc::Config config = load_ok(R"(
routes:
  - {name: a, upstream: 'http://h', models: [m]}
  - {name: b, upstream: 'http://h', models: [n], api_key_env: OPENAI_API_KEY, api_key_required: true}
)");
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({}));
    CHECK(error_lines(result) ==
          Lines{"routes[1].api_key_env: OPENAI_API_KEY is not set and api_key_required is true"});
    CHECK(result.notices.empty());

    const mc::EnvResult set = mc::resolve_environment(config, fake_env({{"OPENAI_API_KEY", "k"}}));
    CHECK(set.errors.empty());
    CHECK(config.routes[1].api_key == std::optional<std::string>("k"));
}

TEST_CASE("a key with a control character is refused without showing it") {
    mc::Config config = load_ok(two_routes);
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({{"OPENAI_API_KEY", "sk-secret-value\n"}}));
    CHECK(error_lines(result) == Lines{"routes[0].api_key_env: OPENAI_API_KEY holds a control character (a trailing "
                                       "newline?) and cannot be sent in a header"});
    CHECK_FALSE(config.routes[0].api_key.has_value());
}

TEST_CASE("resolving again forgets a key that was unset since") {
    mc::Config config = load_ok(two_routes);
    mc::resolve_environment(config, fake_env({{"OPENAI_API_KEY", "k1"}}));
    REQUIRE(config.routes[0].api_key.has_value());
    mc::resolve_environment(config, fake_env({}));
    CHECK_FALSE(config.routes[0].api_key.has_value());
}

TEST_CASE("client tokens are split on commas, trimmed, empties dropped") {
    auto [value, tokens] = GENERATE(table<std::string, Lines>({
        {"a", Lines{"a"}},
        {"a,b", Lines{"a", "b"}},
        {" a , b ,, c ,", Lines{"a", "b", "c"}},
        {"\ttok-1,\ntok-2\n", Lines{"tok-1", "tok-2"}},
        {"with space inside", Lines{"with space inside"}},
        {" , ,", Lines{}},
        {"", Lines{}},
    }));
    CAPTURE(value);
    mc::Config config = load_ok("clients: {tokens_env: CLIENT_TOKENS}\n"
                                "routes: [{name: r, upstream: 'http://h', models: [m]}]\n");
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({{"CLIENT_TOKENS", value}}));
    CHECK(result.errors.empty());
    CHECK(config.clients.tokens == tokens);
}

TEST_CASE("a tokens variable that is unset or holds no token is said once") {
    mc::Config config = load_ok("clients: {tokens_env: CLIENT_TOKENS}\n"
                                "routes: [{name: r, upstream: 'http://h', models: [m]}]\n");
    CHECK(mc::resolve_environment(config, fake_env({})).notices ==
          Lines{"clients: CLIENT_TOKENS is not set; requests under /v1/ are not authenticated"});
    CHECK(mc::resolve_environment(config, fake_env({{"CLIENT_TOKENS", " , "}})).notices ==
          Lines{"clients: CLIENT_TOKENS holds no token; requests under /v1/ are not authenticated"});
}

TEST_CASE("section 12: open listener, injected key, no client tokens") {
    const std::string refusal_prefix = "clients.tokens_env: listen address ";
    const std::string why =
        " injects its key from OPENAI_API_KEY, but no client tokens are configured; set tokens_env to a "
        "variable holding comma-separated client tokens, or set clients.allow_unauthenticated: true (a sidecar "
        "must not spend its key for anyone who can reach it)";
    auto [listen, clients, env, errors] = GENERATE_COPY(table<std::string, std::string,
                                                              std::map<std::string, std::string>, Lines>({
        // Refused: every address that is not loopback.
        {"0.0.0.0:8080", "{}", {{"OPENAI_API_KEY", "k"}},
         Lines{refusal_prefix + "0.0.0.0 is not loopback and route openai" + why}},
        {"'[::]:8080'", "{}", {{"OPENAI_API_KEY", "k"}},
         Lines{refusal_prefix + ":: is not loopback and route openai" + why}},
        {"10.1.2.3:8080", "{}", {{"OPENAI_API_KEY", "k"}},
         Lines{refusal_prefix + "10.1.2.3 is not loopback and route openai" + why}},
        // Tokens named but unset: still refused, and the message names the variable.
        {"0.0.0.0:8080", "{tokens_env: CLIENT_TOKENS}", {{"OPENAI_API_KEY", "k"}},
         Lines{refusal_prefix + "0.0.0.0 is not loopback and route openai injects its key from OPENAI_API_KEY, but "
                                "no client tokens are set in CLIENT_TOKENS; set tokens_env to a variable holding "
                                "comma-separated client tokens, or set clients.allow_unauthenticated: true (a "
                                "sidecar must not spend its key for anyone who can reach it)"}},
        // Allowed: tokens set, the escape hatch, loopback, or no key injected.
        {"0.0.0.0:8080", "{tokens_env: CLIENT_TOKENS}", {{"OPENAI_API_KEY", "k"}, {"CLIENT_TOKENS", "t1"}}, Lines{}},
        {"0.0.0.0:8080", "{allow_unauthenticated: true}", {{"OPENAI_API_KEY", "k"}}, Lines{}},
        {"127.0.0.1:8080", "{}", {{"OPENAI_API_KEY", "k"}}, Lines{}},
        {"127.9.9.9:0", "{}", {{"OPENAI_API_KEY", "k"}}, Lines{}},
        {"'[::1]:8080'", "{}", {{"OPENAI_API_KEY", "k"}}, Lines{}},
        {"localhost:8080", "{}", {{"OPENAI_API_KEY", "k"}}, Lines{}},
        {"0.0.0.0:8080", "{}", {}, Lines{}},
    }));
    CAPTURE(listen, clients);
    mc::Config config = load_ok("listen: " + listen + "\nclients: " + clients + "\n" + two_routes);
    const mc::EnvResult result = mc::resolve_environment(config, fake_env(env));
    CHECK(error_lines(result) == errors);
    for (const std::string& line : error_lines(result)) {
        CHECK(line.find("=k") == std::string::npos);
    }
}

TEST_CASE("section 12 applies after a --listen override") {
    mc::Config config = load_ok(two_routes);
    config.listen_host = "0.0.0.0";
    const mc::EnvResult result = mc::resolve_environment(config, fake_env({{"OPENAI_API_KEY", "sk-abc"}}));
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0].path == "clients.tokens_env");
    CHECK(result.errors[0].why.find("sk-abc") == std::string::npos);
}

TEST_CASE("is_loopback_host") {
    auto [host, loopback] = GENERATE(table<std::string, bool>({
        {"127.0.0.1", true},
        {"127.255.0.9", true},
        {"::1", true},
        {"[::1]", true},
        {"0:0:0:0:0:0:0:1", true},
        {"::ffff:127.0.0.1", true},
        {"localhost", true},
        {"LocalHost", true},
        {"0.0.0.0", false},
        {"::", false},
        {"[::]", false},
        {"128.0.0.1", false},
        {"10.0.0.1", false},
        {"::2", false},
        {"::ffff:10.0.0.1", false},
        {"localhost.example.com", false},
        {"example.com", false},
        {"", false},
    }));
    CAPTURE(host);
    CHECK(mc::is_loopback_host(host) == loopback);
}
