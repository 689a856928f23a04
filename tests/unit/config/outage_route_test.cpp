// A route's keys of docs/behaviour.md section 13: weight, the first-byte and
// first-token timers, the breaker; their defaults, values and refusals.
#include "config/config.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;

namespace {

std::vector<std::string> problem_lines(std::string_view yaml) {
    std::vector<std::string> lines;
    for (const mc::Problem& problem : mc::load_config(yaml).problems) {
        lines.push_back(problem.line());
    }
    return lines;
}

// One route whose mapping body is `body` (flow style, without braces).
std::string one_route(const std::string& body) {
    return "routes:\n  - {name: r, upstream: 'http://h', models: [m], " + body + "}\n";
}

mc::Route load_route(const std::string& body) {
    const mc::LoadResult result = mc::load_config(one_route(body));
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.config.has_value());
    return result.config->routes[0];
}

}  // namespace

TEST_CASE("section 13's route keys default as docs/behaviour.md says") {
    const mc::Route route = load_route("timeout_ms: 300000");
    CHECK(route.weight == 1);
    CHECK(route.first_byte_timeout_ms == 0);
    CHECK(route.first_token_timeout_ms == 0);
    const auto& b = route.breaker;
    CHECK(b.enabled);
    CHECK(b.consecutive_failures == 5);
    CHECK(b.failure_ratio == 0.5);
    CHECK(b.min_attempts == 20);
    CHECK(b.window_ms == 10000);
    CHECK(b.open_ms == 5000);
    CHECK(b.max_open_ms == 20000);
    CHECK(b.probes == 1);
    CHECK_FALSE(b.fail_fast);
}

TEST_CASE("section 13's route keys load as written") {
    const mc::Route route = load_route(
        "weight: 1000, timeout_ms: 60000, first_byte_timeout_ms: 10, first_token_timeout_ms: 60000, "
        "breaker: {enabled: false, consecutive_failures: 1000, failure_ratio: 0.01, min_attempts: 100000, "
        "window_ms: 100, open_ms: 600000, max_open_ms: 3600000, probes: 100, fail_fast: true}");
    CHECK(route.weight == 1000);
    CHECK(route.first_byte_timeout_ms == 10);
    CHECK(route.first_token_timeout_ms == 60000);  // equal to timeout_ms is allowed
    const auto& b = route.breaker;
    CHECK_FALSE(b.enabled);
    CHECK(b.consecutive_failures == 1000);
    CHECK(b.failure_ratio == 0.01);
    CHECK(b.min_attempts == 100000);
    CHECK(b.window_ms == 100);
    CHECK(b.open_ms == 600000);
    CHECK(b.max_open_ms == 3600000);
    CHECK(b.probes == 100);
    CHECK(b.fail_fast);
}

TEST_CASE("failure_ratio is a plain decimal") {
    auto [text, value] = GENERATE(table<std::string, double>({
        {"1", 1.0},
        {"1.0", 1.0},
        {"0.25", 0.25},
        {"0.010", 0.01},
        {"0.333333", 0.333333},
        {"0.3333339", 0.333333},  // digits past the sixth are dropped
    }));
    CAPTURE(text);
    CHECK(load_route("breaker: {failure_ratio: " + text + "}").breaker.failure_ratio == value);
}

TEST_CASE("out-of-range and mistyped section 13 route keys are refused with their path") {
    auto [body, expected] = GENERATE(table<std::string, std::string>({
        {"weight: 0", "routes[0].weight: must be 1..1000, got 0"},
        {"weight: 1001", "routes[0].weight: must be 1..1000, got 1001"},
        {"weight: '2'", "routes[0].weight: must be an integer"},
        {"first_byte_timeout_ms: 9",
         "routes[0].first_byte_timeout_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got 9"},
        {"first_token_timeout_ms: -1",
         "routes[0].first_token_timeout_ms: must be 0 (off) or 10..86400000 (10 ms..24 h), got -1"},
        {"first_byte_timeout_ms: 300001", "routes[0].first_byte_timeout_ms: must be <= timeout_ms (300000), got 300001"},
        {"timeout_ms: 2000, first_token_timeout_ms: 2001",
         "routes[0].first_token_timeout_ms: must be <= timeout_ms (2000), got 2001"},
        // A refused timeout_ms is not judged again through the timers.
        {"timeout_ms: 5, first_byte_timeout_ms: 100", "routes[0].timeout_ms: must be 10..86400000 (10 ms..24 h), got 5"},
        {"breaker: []", "routes[0].breaker: must be a map"},
        {"breaker: {enable: true}", "routes[0].breaker.enable: unknown key (did you mean enabled?)"},
        {"breaker: {enabled: yes}", "routes[0].breaker.enabled: must be true or false"},
        {"breaker: {fail_fast: 1}", "routes[0].breaker.fail_fast: must be true or false"},
        {"breaker: {consecutive_failures: 0}", "routes[0].breaker.consecutive_failures: must be 1..1000, got 0"},
        {"breaker: {consecutive_failures: 1001}", "routes[0].breaker.consecutive_failures: must be 1..1000, got 1001"},
        {"breaker: {failure_ratio: 0}", "routes[0].breaker.failure_ratio: must be 0.01..1, got 0"},
        {"breaker: {failure_ratio: 0.0099999}", "routes[0].breaker.failure_ratio: must be 0.01..1, got 0.0099999"},
        {"breaker: {failure_ratio: 1.5}", "routes[0].breaker.failure_ratio: must be 0.01..1, got 1.5"},
        {"breaker: {failure_ratio: 1.0000001}", "routes[0].breaker.failure_ratio: must be 0.01..1, got 1.0000001"},
        {"breaker: {failure_ratio: '0.5'}", "routes[0].breaker.failure_ratio: must be a decimal number, as 0.5"},
        {"breaker: {failure_ratio: 5e-1}", "routes[0].breaker.failure_ratio: must be a decimal number, as 0.5"},
        {"breaker: {failure_ratio: -0.5}", "routes[0].breaker.failure_ratio: must be a decimal number, as 0.5"},
        {"breaker: {failure_ratio: .5}", "routes[0].breaker.failure_ratio: must be a decimal number, as 0.5"},
        {"breaker: {failure_ratio: [0.5]}", "routes[0].breaker.failure_ratio: must be a decimal number, as 0.5"},
        {"breaker: {min_attempts: 0}", "routes[0].breaker.min_attempts: must be 1..100000, got 0"},
        {"breaker: {min_attempts: 100001}", "routes[0].breaker.min_attempts: must be 1..100000, got 100001"},
        {"breaker: {window_ms: 99}", "routes[0].breaker.window_ms: must be 100..600000 (100 ms..10 min), got 99"},
        {"breaker: {window_ms: 600001}",
         "routes[0].breaker.window_ms: must be 100..600000 (100 ms..10 min), got 600001"},
        {"breaker: {open_ms: 9}", "routes[0].breaker.open_ms: must be 10..600000 (10 ms..10 min), got 9"},
        {"breaker: {open_ms: 600001, max_open_ms: 3600000}",
         "routes[0].breaker.open_ms: must be 10..600000 (10 ms..10 min), got 600001"},
        {"breaker: {max_open_ms: 3600001}",
         "routes[0].breaker.max_open_ms: must be 10..3600000 (10 ms..1 h), got 3600001"},
        {"breaker: {probes: 0}", "routes[0].breaker.probes: must be 1..100, got 0"},
        {"breaker: {probes: 101}", "routes[0].breaker.probes: must be 1..100, got 101"},
        // open_ms <= max_open_ms, on max_open_ms when the breaker sets it.
        {"breaker: {open_ms: 30000}", "routes[0].breaker.open_ms: must be <= max_open_ms (20000), got 30000"},
        {"breaker: {max_open_ms: 4999}", "routes[0].breaker.max_open_ms: must be >= open_ms (5000), got 4999"},
        {"breaker: {open_ms: 100, max_open_ms: 50}", "routes[0].breaker.max_open_ms: must be >= open_ms (100), got 50"},
    }));
    CAPTURE(body);
    CHECK(problem_lines(one_route(body)) == Lines{expected});
}

TEST_CASE("open_ms may equal max_open_ms, and a timer may equal timeout_ms") {
    const mc::Route route =
        load_route("timeout_ms: 1500, first_byte_timeout_ms: 1500, breaker: {open_ms: 700, max_open_ms: 700}");
    CHECK(route.first_byte_timeout_ms == 1500);
    CHECK(route.breaker.open_ms == 700);
    CHECK(route.breaker.max_open_ms == 700);
}

TEST_CASE("every problem of the section 13 route keys is reported, not only the first") {
    CHECK(problem_lines(one_route("weight: 0, first_byte_timeout_ms: 400000, breaker: {probes: 0, fail_fast: 2}")) ==
          Lines{"routes[0].weight: must be 1..1000, got 0",
                "routes[0].first_byte_timeout_ms: must be <= timeout_ms (300000), got 400000",
                "routes[0].breaker.probes: must be 1..100, got 0",
                "routes[0].breaker.fail_fast: must be true or false"});
}
