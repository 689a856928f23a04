// The keys of docs/behaviour.md section 14: the retry budget in the `retry`
// catalog and a route's `retry`, and the `admission` catalog with a route's
// override; their defaults, the merge, every range edge and the rules
// between keys.
#include "config/config.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
namespace mp = modelproxy::policy;
using Lines = std::vector<std::string>;

namespace {

// `top` at the top level, then one route whose flow map also holds `route`
// (without braces; "" for none).
std::string document(const std::string& top, const std::string& route) {
    return top + (top.empty() ? "" : "\n") + "routes:\n  - {name: r, upstream: 'http://h', models: [m]" +
           (route.empty() ? "" : ", " + route) + "}\n";
}

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

const std::string limits_rule = " (min_limit <= initial_limit <= max_limit)";
const std::string lone_client = " (a lone client would get no replays); ";
const std::string minimum_why =
    "must be at least 1 while budget_ratio is above 0" + lone_client + "set both to 0 to turn replays off";
const std::string ratio_why = "must be 0 while budget_min_concurrency is 0" + lone_client +
                              "set budget_min_concurrency to at least 1, or leave both 0 to turn replays off";

}  // namespace

TEST_CASE("section 14's keys default as docs/behaviour.md says, in the catalogs and every route") {
    const mc::Config config = load_ok(document("", ""));
    CHECK(config.retry.budget_ratio == 0.2);
    CHECK(config.retry.budget_min_concurrency == 3);
    const mp::AdmissionConfig& a = config.admission;
    CHECK_FALSE(a.enabled);
    CHECK(a.initial_limit == 64);
    CHECK(a.min_limit == 1);
    CHECK(a.max_limit == 1024);
    CHECK(a.decrease == 0.7);
    CHECK(a.backpressure == mp::Backpressure{1, 3, 0});
    CHECK(a.queue_timeout_ms == 5000);
    CHECK(a.honour_ratelimit_headers);
    const mc::Route& route = config.routes[0];
    CHECK(route.retry.budget_ratio == 0.2);
    CHECK(route.retry.budget_min_concurrency == 3);
    CHECK(route.admission == a);
}

TEST_CASE("a route's retry and admission override the catalogs key by key, backpressure too") {
    const mc::Config config = load_ok(R"(retry: {budget_ratio: 0.5, budget_min_concurrency: 7}
admission:
  enabled: true
  initial_limit: 100
  min_limit: 10
  max_limit: 2000
  decrease: 0.5
  backpressure: {rate-limit: 2, overload: 5, server: 1}
  queue_timeout_ms: 2000
  honour_ratelimit_headers: false
routes:
  - {name: a, upstream: 'http://h', models: [m]}
  - name: b
    upstream: http://h
    models: [n]
    retry: {budget_ratio: 0.1}
    admission: {max_limit: 500, backpressure: {server: 4}, queue_timeout_ms: 0}
)");
    const mp::AdmissionConfig catalog{true, 100, 10, 2000, 0.5, mp::Backpressure{2, 5, 1}, 2000, false};
    CHECK(config.admission == catalog);
    CHECK(config.retry.budget_ratio == 0.5);
    CHECK(config.retry.budget_min_concurrency == 7);
    REQUIRE(config.routes.size() == 2);
    CHECK(config.routes[0].admission == catalog);
    CHECK(config.routes[0].retry.budget_ratio == 0.5);
    const mc::Route& b = config.routes[1];
    CHECK(b.retry.budget_ratio == 0.1);
    CHECK(b.retry.budget_min_concurrency == 7);
    CHECK(b.admission == mp::AdmissionConfig{true, 100, 10, 500, 0.5, mp::Backpressure{2, 5, 4}, 0, false});
}

TEST_CASE("a route may enable admission over a catalog that leaves it off") {
    const mc::Config config = load_ok(document(
        "", "admission: {enabled: true, decrease: 0.9, backpressure: {rate-limit: 0}, honour_ratelimit_headers: false}"));
    CHECK_FALSE(config.admission.enabled);
    const mp::AdmissionConfig& a = config.routes[0].admission;
    CHECK(a.enabled);
    CHECK(a.decrease == 0.9);
    CHECK(a.backpressure == mp::Backpressure{0, 3, 0});
    CHECK_FALSE(a.honour_ratelimit_headers);
    CHECK(a.initial_limit == 64);
}

TEST_CASE("section 14's values outside their range are refused, one row per key and end") {
    auto [top, route, expected] = GENERATE(table<std::string, std::string, std::string>({
        {"retry: {budget_ratio: 1.01}", "", "retry.budget_ratio: must be 0..1, got 1.01"},
        {"retry: {budget_ratio: -0.1}", "", "retry.budget_ratio: must be a decimal number, as 0.5"},
        {"", "retry: {budget_ratio: 2}", "routes[0].retry.budget_ratio: must be 0..1, got 2"},
        {"retry: {budget_min_concurrency: -1}", "", "retry.budget_min_concurrency: must be 0..10000, got -1"},
        {"retry: {budget_min_concurrency: 10001}", "", "retry.budget_min_concurrency: must be 0..10000, got 10001"},
        {"", "retry: {budget_min_concurrency: 10001}",
         "routes[0].retry.budget_min_concurrency: must be 0..10000, got 10001"},
        {"admission: {initial_limit: 0}", "", "admission.initial_limit: must be 1..100000, got 0"},
        {"admission: {initial_limit: 100001}", "", "admission.initial_limit: must be 1..100000, got 100001"},
        {"admission: {min_limit: 0}", "", "admission.min_limit: must be 1..100000, got 0"},
        {"admission: {min_limit: 100001}", "", "admission.min_limit: must be 1..100000, got 100001"},
        {"admission: {max_limit: 0}", "", "admission.max_limit: must be 1..100000, got 0"},
        {"admission: {max_limit: 100001}", "", "admission.max_limit: must be 1..100000, got 100001"},
        {"", "admission: {max_limit: 100001}", "routes[0].admission.max_limit: must be 1..100000, got 100001"},
        {"admission: {decrease: 0.099}", "", "admission.decrease: must be 0.1..0.99, got 0.099"},
        {"admission: {decrease: 0.991}", "", "admission.decrease: must be 0.1..0.99, got 0.991"},
        {"admission: {decrease: 1}", "", "admission.decrease: must be 0.1..0.99, got 1"},
        {"", "admission: {decrease: 0}", "routes[0].admission.decrease: must be 0.1..0.99, got 0"},
        {"admission: {backpressure: {rate-limit: -1}}", "",
         "admission.backpressure.rate-limit: must be 0..10, got -1"},
        {"admission: {backpressure: {rate-limit: 11}}", "",
         "admission.backpressure.rate-limit: must be 0..10, got 11"},
        {"admission: {backpressure: {overload: -1}}", "", "admission.backpressure.overload: must be 0..10, got -1"},
        {"admission: {backpressure: {overload: 11}}", "", "admission.backpressure.overload: must be 0..10, got 11"},
        {"admission: {backpressure: {server: -1}}", "", "admission.backpressure.server: must be 0..10, got -1"},
        {"admission: {backpressure: {server: 11}}", "", "admission.backpressure.server: must be 0..10, got 11"},
        {"", "admission: {backpressure: {server: 11}}",
         "routes[0].admission.backpressure.server: must be 0..10, got 11"},
        {"admission: {queue_timeout_ms: -1}", "",
         "admission.queue_timeout_ms: must be 0 (the turn deadline) or 1..86400000 (1 ms..24 h), got -1"},
        {"admission: {queue_timeout_ms: 86400001}", "",
         "admission.queue_timeout_ms: must be 0 (the turn deadline) or 1..86400000 (1 ms..24 h), got 86400001"},
        {"", "admission: {queue_timeout_ms: -1}",
         "routes[0].admission.queue_timeout_ms: must be 0 (the turn deadline) or 1..86400000 (1 ms..24 h), got -1"},
    }));
    CAPTURE(top, route);
    CHECK(problem_lines(document(top, route)) == Lines{expected});
}

TEST_CASE("both ends of section 14's ranges are accepted") {
    auto [top, route] = GENERATE(table<std::string, std::string>({
        {"retry: {budget_ratio: 0, budget_min_concurrency: 0}", ""},
        {"retry: {budget_ratio: 1, budget_min_concurrency: 10000}", ""},
        {"retry: {budget_ratio: 0, budget_min_concurrency: 1}", ""},
        {"", "retry: {budget_ratio: 1, budget_min_concurrency: 1}"},
        {"admission: {initial_limit: 1, min_limit: 1, max_limit: 1}", ""},
        {"admission: {initial_limit: 100000, min_limit: 100000, max_limit: 100000}", ""},
        {"", "admission: {initial_limit: 1, min_limit: 1, max_limit: 100000}"},
        {"admission: {decrease: 0.1}", ""},
        {"admission: {decrease: 0.99}", ""},
        {"admission: {backpressure: {rate-limit: 0, overload: 0, server: 0}}", ""},
        {"admission: {backpressure: {rate-limit: 10, overload: 10, server: 10}}", ""},
        {"admission: {queue_timeout_ms: 0}", "timeout_ms: 2000"},
        {"admission: {queue_timeout_ms: 1}", "timeout_ms: 2000"},
        {"admission: {queue_timeout_ms: 86400000}", "timeout_ms: 86400000"},
        {"", "timeout_ms: 3000, admission: {queue_timeout_ms: 3000}"},
        {"admission: {enabled: true, honour_ratelimit_headers: false}", "admission: {enabled: false}"},
    }));
    CAPTURE(top, route);
    CHECK(problem_lines(document(top, route)).empty());
}

TEST_CASE("min_limit <= initial_limit <= max_limit holds on the merged values, reported where a key was set") {
    auto [top, route, expected] = GENERATE(table<std::string, std::string, std::string>({
        {"admission: {min_limit: 2000}", "", "admission.min_limit: must be <= max_limit (1024), got 2000"},
        {"admission: {min_limit: 100}", "", "admission.min_limit: must be <= initial_limit (64), got 100"},
        {"admission: {initial_limit: 2000}", "", "admission.initial_limit: must be <= max_limit (1024), got 2000"},
        {"admission: {max_limit: 32}", "", "admission.max_limit: must be >= initial_limit (64), got 32"},
        {"admission: {initial_limit: 5, min_limit: 10}", "", "admission.min_limit: must be <= initial_limit (5), got 10"},
        {"admission: {min_limit: 20, max_limit: 10, initial_limit: 15}", "",
         "admission.min_limit: must be <= max_limit (10), got 20"},
        {"", "admission: {max_limit: 32}", "routes[0].admission.max_limit: must be >= initial_limit (64), got 32"},
        {"admission: {initial_limit: 10, min_limit: 10, max_limit: 10}", "admission: {min_limit: 20}",
         "routes[0].admission.min_limit: must be <= max_limit (10), got 20"},
        {"admission: {min_limit: 50}", "admission: {initial_limit: 20}",
         "routes[0].admission.initial_limit: must be >= min_limit (50), got 20"},
    }));
    CAPTURE(top, route);
    CHECK(problem_lines(document(top, route)) == Lines{expected + limits_rule});
}

TEST_CASE("a broken catalog order is reported once, not again for each route") {
    CHECK(problem_lines(document("admission: {min_limit: 100}", "admission: {enabled: true}")) ==
          Lines{"admission.min_limit: must be <= initial_limit (64), got 100" + limits_rule});
    // A refused limit is not judged against the others.
    CHECK(problem_lines(document("admission: {min_limit: 0, max_limit: 32}", "")) ==
          Lines{"admission.min_limit: must be 1..100000, got 0"});
}

TEST_CASE("queue_timeout_ms is 0 or at most the route's timeout_ms, reported where it was written") {
    auto [top, route, expected] = GENERATE(table<std::string, std::string, Lines>({
        {"", "timeout_ms: 3000, admission: {queue_timeout_ms: 3001}",
         Lines{"routes[0].admission.queue_timeout_ms: must be <= timeout_ms (3000), got 3001"}},
        {"admission: {queue_timeout_ms: 5000}", "timeout_ms: 3000",
         Lines{"admission.queue_timeout_ms: must be <= routes[0].timeout_ms (3000), got 5000"}},
        {"admission: {queue_timeout_ms: 5000}", "timeout_ms: 3000, admission: {queue_timeout_ms: 0}", Lines{}},
        {"admission: {queue_timeout_ms: 5000}", "timeout_ms: 3000, admission: {queue_timeout_ms: 2999}", Lines{}},
        {"admission: {queue_timeout_ms: 400000}", "", Lines{"admission.queue_timeout_ms: must be <= "
                                                            "routes[0].timeout_ms (300000), got 400000"}},
        // The default is not judged: the turn deadline bounds the wait anyway.
        {"", "timeout_ms: 3000", Lines{}},
        {"admission: {enabled: true}", "timeout_ms: 2000", Lines{}},
        // A refused timeout_ms or queue_timeout_ms is not judged again.
        {"", "timeout_ms: 5, admission: {queue_timeout_ms: 3001}",
         Lines{"routes[0].timeout_ms: must be 10..86400000 (10 ms..24 h), got 5"}},
        {"admission: {queue_timeout_ms: 5000}", "timeout_ms: 3000, admission: {queue_timeout_ms: -5}",
         Lines{"routes[0].admission.queue_timeout_ms: must be 0 (the turn deadline) or 1..86400000 (1 ms..24 h), "
               "got -5"}},
    }));
    CAPTURE(top, route);
    CHECK(problem_lines(document(top, route)) == expected);
}

TEST_CASE("a catalog queue_timeout_ms above several routes' timeout_ms names each route") {
    CHECK(problem_lines(R"(admission: {queue_timeout_ms: 5000}
routes:
  - {name: a, upstream: 'http://h', timeout_ms: 3000, models: [m]}
  - {name: b, upstream: 'http://h', timeout_ms: 60000, models: [n]}
  - {name: c, upstream: 'http://h', timeout_ms: 4000, models: [o]}
)") == Lines{"admission.queue_timeout_ms: must be <= routes[0].timeout_ms (3000), got 5000",
             "admission.queue_timeout_ms: must be <= routes[2].timeout_ms (4000), got 5000"});
}

TEST_CASE("budget_min_concurrency 0 needs budget_ratio 0, in the catalog and the merged route") {
    auto [top, route, expected] = GENERATE(table<std::string, std::string, Lines>({
        {"retry: {budget_min_concurrency: 0}", "", Lines{"retry.budget_min_concurrency: " + minimum_why}},
        {"retry: {budget_min_concurrency: 0, budget_ratio: 0.2}", "",
         Lines{"retry.budget_min_concurrency: " + minimum_why}},
        {"retry: {budget_ratio: 0.2, budget_min_concurrency: 0}", "",
         Lines{"retry.budget_min_concurrency: " + minimum_why}},
        {"retry: {budget_min_concurrency: 0, budget_ratio: 0}", "", Lines{}},
        {"", "retry: {budget_min_concurrency: 0}", Lines{"routes[0].retry.budget_min_concurrency: " + minimum_why}},
        {"", "retry: {budget_min_concurrency: 0, budget_ratio: 0}", Lines{}},
        {"retry: {budget_min_concurrency: 0, budget_ratio: 0}", "retry: {budget_ratio: 0.5}",
         Lines{"routes[0].retry.budget_ratio: " + ratio_why}},
        {"retry: {budget_min_concurrency: 0, budget_ratio: 0}", "retry: {budget_min_concurrency: 1}", Lines{}},
        {"retry: {budget_ratio: 0}", "retry: {budget_min_concurrency: 0}", Lines{}},
        // A refused value is not judged against the other.
        {"retry: {budget_min_concurrency: 0, budget_ratio: 1.5}", "",
         Lines{"retry.budget_ratio: must be 0..1, got 1.5"}},
        // The catalog's problem is not repeated for a route that sets neither key.
        {"retry: {budget_min_concurrency: 0}", "retry: {max_attempts: 3}",
         Lines{"retry.budget_min_concurrency: " + minimum_why}},
    }));
    CAPTURE(top, route);
    CHECK(problem_lines(document(top, route)) == expected);
}

TEST_CASE("section 14's maps refuse unknown keys and wrong types") {
    auto [top, route, expected] = GENERATE(table<std::string, std::string, std::string>({
        {"admission: {enable: true}", "", "admission.enable: unknown key (did you mean enabled?)"},
        {"admission: {queue_timeout: 5}", "", "admission.queue_timeout: unknown key"},
        {"admission: {backpressure: {rate_limit: 1}}", "",
         "admission.backpressure.rate_limit: unknown key (did you mean rate-limit?)"},
        {"admission: {backpressure: {timeout: 1}}", "", "admission.backpressure.timeout: unknown key"},
        {"", "admission: {backpressure: {overloaded: 1}}",
         "routes[0].admission.backpressure.overloaded: unknown key (did you mean overload?)"},
        {"", "admission: {budget_ratio: 0.5}", "routes[0].admission.budget_ratio: unknown key"},
        {"", "admision: {enabled: true}", "routes[0].admision: unknown key (did you mean admission?)"},
        {"retry: {budget_ratios: 0.2}", "", "retry.budget_ratios: unknown key (did you mean budget_ratio?)"},
        {"admission: [1]", "", "admission: must be a map"},
        {"", "admission: 3", "routes[0].admission: must be a map"},
        {"admission: {backpressure: 3}", "", "admission.backpressure: must be a map"},
        {"admission: {enabled: yes}", "", "admission.enabled: must be true or false"},
        {"", "admission: {honour_ratelimit_headers: 1}",
         "routes[0].admission.honour_ratelimit_headers: must be true or false"},
        {"admission: {initial_limit: 6.5}", "", "admission.initial_limit: must be an integer"},
        {"admission: {decrease: \"0.5\"}", "", "admission.decrease: must be a decimal number, as 0.5"},
        {"retry: {budget_min_concurrency: \"3\"}", "", "retry.budget_min_concurrency: must be an integer"},
    }));
    CAPTURE(top, route);
    CHECK(problem_lines(document(top, route)) == Lines{expected});
}
