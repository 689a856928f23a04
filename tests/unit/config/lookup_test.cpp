// parse_listen, find_model and wildcard_route.
#include "config/config.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;

TEST_CASE("parse_listen accepts HOST:PORT and bracketed IPv6, port 0 included") {
    auto [text, host, port] = GENERATE(table<std::string, std::string, int>({
        {"127.0.0.1:8080", "127.0.0.1", 8080},
        {"0.0.0.0:0", "0.0.0.0", 0},
        {"localhost:65535", "localhost", 65535},
        {"[::1]:8080", "::1", 8080},
        {"[::]:80", "::", 80},
        {"[fe80::1]:1", "fe80::1", 1},
        {"proxy.internal:9000", "proxy.internal", 9000},
        {"127.0.0.1:08080", "127.0.0.1", 8080},
    }));
    CAPTURE(text);
    const auto parsed = mc::parse_listen(text);
    REQUIRE(parsed.has_value());
    CHECK(parsed->first == host);
    CHECK(parsed->second == port);
}

TEST_CASE("parse_listen refuses junk") {
    auto text = GENERATE(as<std::string>{}, "", "127.0.0.1", "127.0.0.1:", ":8080", "127.0.0.1:65536",
                         "127.0.0.1:99999", "127.0.0.1:123456", "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80a",
                         "127.0.0.1:8080 ", " 127.0.0.1:8080", "::1:8080", "[::1]8080", "[::1]:", "[::1",
                         "[zz]:80", "[127.0.0.1]:80", "host:port", "a b:80", "http://h:80");
    CAPTURE(text);
    CHECK_FALSE(mc::parse_listen(text).has_value());
}

namespace {

mc::Config routing_config(bool with_wildcard) {
    std::string yaml = R"(
routes:
  - name: openai
    upstream: https://api.openai.com/v1
    models:
      - gpt-4o
      - {name: fast, upstream_model: gpt-4o-mini}
  - name: local
    upstream: http://127.0.0.1:9000
    models: [llama3]
)";
    if (with_wildcard) {
        yaml += R"(  - name: rest
    upstream: https://other.example/v1
    models: ["*"]
)";
    }
    mc::LoadResult result = mc::load_config(yaml);
    REQUIRE(result.problems.empty());
    return *result.config;
}

}  // namespace

TEST_CASE("find_model: an exact name first, else the \"*\" route, else nothing") {
    const mc::Config config = routing_config(true);
    const mc::Route* rest = &config.routes[2];
    CHECK(mc::wildcard_route(config) == rest);

    const mc::ModelMatch exact = mc::find_model(config, "gpt-4o");
    CHECK(exact.route == &config.routes[0]);
    REQUIRE(exact.model != nullptr);
    CHECK(exact.model->name == "gpt-4o");

    const mc::ModelMatch renamed = mc::find_model(config, "fast");
    CHECK(renamed.route == &config.routes[0]);
    REQUIRE(renamed.model != nullptr);
    CHECK(renamed.model->upstream_model == "gpt-4o-mini");

    const mc::ModelMatch second_route = mc::find_model(config, "llama3");
    CHECK(second_route.route == &config.routes[1]);
    CHECK(second_route.model == &config.routes[1].models[0]);

    for (const char* other : {"claude-3", "GPT-4o", "gpt-4o-mini", "", "*"}) {
        CAPTURE(other);
        const mc::ModelMatch match = mc::find_model(config, other);
        CHECK(match.route == rest);
        CHECK(match.model == nullptr);
    }
}

TEST_CASE("find_model without a \"*\" route finds nothing for an unknown name") {
    const mc::Config config = routing_config(false);
    CHECK(mc::wildcard_route(config) == nullptr);
    const mc::ModelMatch match = mc::find_model(config, "claude-3");
    CHECK(match.route == nullptr);
    CHECK(match.model == nullptr);
    CHECK(mc::find_model(config, "llama3").route == &config.routes[1]);
}
