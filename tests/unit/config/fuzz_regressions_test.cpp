// Regressions found by tests/fuzz/config_fuzz: a problem line is one line
// whatever the file holds (docs/behaviour.md section 2: one line per problem), loading
// ends on any text (a leading ',' made yaml-cpp's LoadAll run until memory ran
// out), and an upstream URL whose path does not start with '/' is refused.
#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace mc = modelproxy::config;

TEST_CASE("a problem line escapes CR, LF and other control characters, keeps tabs") {
    CHECK(mc::Problem{"routes[0].headers.X-\nY", "is not a valid header name"}.line() ==
          "routes[0].headers.X-\\nY: is not a valid header name");
    CHECK(mc::Problem{"", "got \"a\r\nb\x01\x7f\tc\""}.line() == "got \"a\\r\\nb\\x01\\x7f\tc\"");
    CHECK(mc::Problem{"listen", "must be HOST:PORT"}.line() == "listen: must be HOST:PORT");
}

TEST_CASE("values and keys with line breaks give one line per problem") {
    const auto loaded = mc::load_config(
        "listen: \"a\\nb:1\"\n"
        "retry: {jitter: \"x\\ry\"}\n"
        "routes:\n"
        "  - name: r\n"
        "    upstream: http://127.0.0.1:9\n"
        "    dialect: \"open\\nai\"\n"
        "    headers: {\"X-\\nForged: yes\": v}\n"
        "    models: [m]\n");
    REQUIRE_FALSE(loaded.config);
    REQUIRE(loaded.problems.size() == 4);
    for (const auto& problem : loaded.problems) {
        const std::string line = problem.line();
        CAPTURE(line);
        CHECK(line.find('\n') == std::string::npos);
        CHECK(line.find('\r') == std::string::npos);
    }
    CHECK(loaded.problems[0].line().find("got \"a\\nb:1\"") != std::string::npos);
    CHECK(loaded.problems[3].line().find("X-\\nForged: yes") != std::string::npos);
}

TEST_CASE("text yaml-cpp cannot get past is a syntax error, not an endless load") {
    for (const char* text : {",1[ 2, 6*]\n", ",\n", ",{}", "routes: []\n---\n,1\n"}) {
        CAPTURE(text);
        const auto loaded = mc::load_config(text);
        REQUIRE_FALSE(loaded.config);
        REQUIRE(loaded.problems.size() == 1);
        CHECK(loaded.problems[0].line().starts_with("YAML syntax error at line "));
    }
    // Documents that do progress are still counted.
    const auto two = mc::load_config("routes: []\n---\n---\nroutes: []\n");
    REQUIRE(two.problems.size() == 1);
    CHECK(two.problems[0].line() == "must hold one YAML document, found 3");
}

TEST_CASE("an upstream whose path does not follow the authority with '/' is refused") {
    for (const char* url : {"http://127.0.0.1:9a/v1", "http://h:.9/v1", "https://h:443x"}) {
        CAPTURE(url);
        const auto loaded = mc::load_config(std::string("routes:\n  - name: r\n    upstream: \"") + url +
                                            "\"\n    models: [m]\n");
        REQUIRE(loaded.problems.size() == 1);
        CHECK(loaded.problems[0].path == "routes[0].upstream");
    }
    const auto fine = mc::load_config("routes:\n  - name: r\n    upstream: http://h:9/v1/\n    models: [m]\n");
    REQUIRE(fine.config);
    CHECK(fine.config->routes[0].upstream.base_path == "/v1");
    CHECK(fine.config->routes[0].upstream.port == 9);
}
