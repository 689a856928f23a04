// A route's retry budget and admission as `modelproxy doctor` prints them
// (config/route_load.hpp, docs/behaviour.md section 14).
#include "config/route_load.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;

namespace {

mc::Route load_route(const std::string& top, const std::string& route) {
    const mc::LoadResult result = mc::load_config(top + "\nroutes:\n  - {name: r, upstream: 'http://h', models: [m]" +
                                                  (route.empty() ? "" : ", " + route) + "}\n");
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.config.has_value());
    return result.config->routes[0];
}

}  // namespace

TEST_CASE("doctor's budget and admission lines for a route") {
    auto [top, route, expected] = GENERATE(table<std::string, std::string, Lines>({
        {"", "",
         Lines{"  retry budget: budget_ratio 0.2, budget_min_concurrency 3 (replays in flight to a candidate at "
               "most max(3, 0.2 x its turns in flight))",
               "  admission: off"}},
        {"retry: {budget_ratio: 0, budget_min_concurrency: 0}", "admission: {enabled: true}",
         Lines{"  retry budget: replays off (budget_ratio 0, budget_min_concurrency 0)",
               "  admission: on, initial_limit 64, min_limit 1, max_limit 1024, decrease 0.7, backpressure "
               "rate-limit 1 overload 3 server 0, queue_timeout_ms 5000, pacing on rate-limit headers yes"}},
        {"retry: {budget_ratio: 0.125}",
         "retry: {budget_min_concurrency: 1}, admission: {enabled: true, initial_limit: 8, min_limit: 2, "
         "max_limit: 16, decrease: 0.55, backpressure: {overload: 10, server: 2}, queue_timeout_ms: 0, "
         "honour_ratelimit_headers: false}",
         Lines{"  retry budget: budget_ratio 0.125, budget_min_concurrency 1 (replays in flight to a candidate at "
               "most max(1, 0.125 x its turns in flight))",
               "  admission: on, initial_limit 8, min_limit 2, max_limit 16, decrease 0.55, backpressure "
               "rate-limit 1 overload 10 server 2, queue_timeout_ms 0 (the turn deadline), pacing on rate-limit "
               "headers no"}},
        {"admission: {enabled: true}", "admission: {enabled: false}",
         Lines{"  retry budget: budget_ratio 0.2, budget_min_concurrency 3 (replays in flight to a candidate at "
               "most max(3, 0.2 x its turns in flight))",
               "  admission: off"}},
    }));
    CAPTURE(top, route);
    CHECK(mc::render_route_load(load_route(top, route)) == expected);
}

TEST_CASE("decimal values print as the file writes them") {
    CHECK(mc::decimal_value(0.2) == "0.2");
    CHECK(mc::decimal_value(0.7) == "0.7");
    CHECK(mc::decimal_value(0.99) == "0.99");
    CHECK(mc::decimal_value(0) == "0");
    CHECK(mc::decimal_value(1) == "1");
    CHECK(mc::decimal_value(0.000001) == "0.000001");
}
