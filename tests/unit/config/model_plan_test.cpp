// A client model's candidate plan as `modelproxy doctor` prints it
// (config/model_plan.hpp, docs/configuration.md): the candidate list, the
// turn's bounds, how soon a stream turn gets past candidates that hang, and
// the warnings.
#include "config/model_plan.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;
using Kind = mc::PlanWarningKind;

namespace {

mc::Config load_ok(std::string_view yaml) {
    mc::LoadResult result = mc::load_config(yaml);
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.problems.empty());
    return *result.config;
}

Lines warning_lines(const mc::ModelPlan& plan) {
    Lines lines;
    for (const mc::PlanWarning& w : plan.warnings) lines.push_back(mc::render_plan_warning(plan, w));
    return lines;
}

// docs/configuration.md's example.
constexpr const char* two_regions_and_fallback = R"(
routes:
  - {name: azure-east, upstream: 'https://e.example/openai/v1', first_byte_timeout_ms: 5000,
     first_token_timeout_ms: 15000, models: [gpt-4o]}
  - {name: azure-west, upstream: 'https://w.example/openai/v1', first_byte_timeout_ms: 5000,
     first_token_timeout_ms: 15000, models: [gpt-4o]}
  - {name: anthropic, upstream: 'https://api.anthropic.com/v1', first_byte_timeout_ms: 5000,
     first_token_timeout_ms: 15000, models: [{name: claude-sonnet, upstream_model: claude-sonnet-4-5}]}
models:
  - {name: gpt-4o, fallbacks: [claude-sonnet]}
  - {name: claude-sonnet, fallbacks: [gpt-4o]}
)";

}  // namespace

TEST_CASE("the plan of two regions and a fallback: candidates, bounds, reach, warnings") {
    const mc::Config config = load_ok(two_regions_and_fallback);
    const std::vector<mc::ModelPlan> plans = mc::model_plans(config);
    REQUIRE(plans.size() == 2);
    const mc::ModelPlan& gpt = plans[0];
    CHECK(gpt.model == "gpt-4o");
    CHECK(gpt.has_entry);
    REQUIRE(gpt.candidates.size() == 3);
    CHECK(gpt.candidates[2].route == 2);
    CHECK(gpt.candidates[2].model == "claude-sonnet");
    CHECK(gpt.candidates[2].fallback);
    CHECK(gpt.deadline_ms == 300000);
    CHECK(gpt.worst_case_ms == 300000);
    // Two candidates before the last, 2 attempts each of at most
    // 5000 + 5000 + 15000 ms, and two replays waiting at most 20000 ms each.
    CHECK(gpt.reach_last_ms == std::optional<std::int64_t>{140000});
    CHECK(mc::render_model_plan(gpt) == Lines{
        "model gpt-4o: 3 candidates, balance ordered, 2 attempts per candidate",
        "  fallback_on: network, timeout, server, rate-limit, stream-incomplete",
        "  candidate 0: route azure-east, upstream model gpt-4o",
        "  candidate 1: route azure-west, upstream model gpt-4o",
        "  candidate 2: route anthropic, upstream model claude-sonnet-4-5 (fallback claude-sonnet)",
        "  turn bounds from route azure-east (the first deployment): timeout_ms 300000, max_attempts 8",
        "  worst case, through every candidate: 300000 ms (the turn deadline)",
        "  a stream turn reaches candidate 2 within 140000 ms when every earlier candidate hangs",
    });
    CHECK(warning_lines(gpt) == Lines{"warning: model gpt-4o: first_token_timeout_ms 15000 of candidate 2 (route "
                                      "anthropic) never applies: no later candidate"});

    // The fallback's own fallbacks are not followed: gpt-4o's deployments only.
    const mc::ModelPlan& claude = plans[1];
    CHECK(claude.model == "claude-sonnet");
    REQUIRE(claude.candidates.size() == 3);
    CHECK(claude.candidates[0].route_name == "anthropic");
    CHECK(claude.candidates[1].route_name == "azure-east");
    CHECK(claude.candidates[2].route_name == "azure-west");
    CHECK(claude.deadline_route == "anthropic");
}

TEST_CASE("a hang holds a stream turn until the deadline where a timer is missing") {
    auto [routes, models, expected] = GENERATE(table<std::string, std::string, std::string>({
        {"first_byte_timeout_ms: 100, first_token_timeout_ms: 100", "fallback_on: [network, server]",
         "  a hang on candidate 0 keeps a stream turn from later candidates until the deadline: timeout is not "
         "in fallback_on"},
        {"first_token_timeout_ms: 100", "attempts_per_candidate: 2",
         "  a hang on candidate 0 keeps a stream turn from later candidates until the deadline: "
         "first_byte_timeout_ms is off on route a"},
        {"first_byte_timeout_ms: 100", "attempts_per_candidate: 2",
         "  a hang on candidate 0 keeps a stream turn from later candidates until the deadline: "
         "first_token_timeout_ms is off on route a"},
        // 3 attempts of 1000 + 4000 + 4000 ms, then two waits of at most 500 ms.
        {"connect_timeout_ms: 1000, first_byte_timeout_ms: 4000, first_token_timeout_ms: 4000",
         "attempts_per_candidate: 3",
         "  a stream turn whose earlier candidates hang may meet the deadline before candidate 1 (28000 ms)"},
        {"connect_timeout_ms: 1000, first_byte_timeout_ms: 4000, first_token_timeout_ms: 4000",
         "attempts_per_candidate: 1", "  a stream turn reaches candidate 1 within 9000 ms when every earlier candidate hangs"},
    }));
    CAPTURE(routes, models);
    const mc::Config config = load_ok("retry: {max_delay_ms: 500}\nroutes:\n  - {name: a, upstream: 'http://a', "
                                      "timeout_ms: 20000, stream_idle_timeout_ms: 1000, " + routes +
                                      ", models: [m]}\n  - {name: b, upstream: 'http://b', stream_idle_timeout_ms: "
                                      "1000, models: [n]}\nmodels: [{name: m, fallbacks: [n], " + models + "}]\n");
    const mc::ModelPlan plan = mc::model_plan(config, "m");
    REQUIRE(plan.candidates.size() == 2);
    CHECK(mc::render_model_plan(plan).back() == expected);
}

TEST_CASE("the waits counted before the last candidate are capped by max_total_delay_ms") {
    const mc::Config config = load_ok(R"(retry: {max_delay_ms: 20000, max_total_delay_ms: 30000}
routes:
  - {name: a, upstream: 'http://a', connect_timeout_ms: 10, first_byte_timeout_ms: 10, first_token_timeout_ms: 10,
     models: [m, n, o]}
models: [{name: m, fallbacks: [n, o], attempts_per_candidate: 3}]
)");
    // Two candidates before the last: 6 attempts of 30 ms, and 4 replays
    // whose waits sum to at most 30000 ms rather than 4 * 20000.
    CHECK(mc::model_plan(config, "m").reach_last_ms == std::optional<std::int64_t>{30180});
}

TEST_CASE("timers at or above the turn deadline are warned about, once per route and timer") {
    // m's turn deadline is route a's 2000 ms; route b's timers are its own
    // route's business but m's turns end at a's deadline.
    const mc::Config config = load_ok(R"(
routes:
  - {name: a, upstream: 'http://a', timeout_ms: 2000, stream_idle_timeout_ms: 2000, models: [m, n]}
  - {name: b, upstream: 'http://b', timeout_ms: 60000, stream_idle_timeout_ms: 1999, first_byte_timeout_ms: 2000,
     first_token_timeout_ms: 5000, models: [n]}
models: [{name: m, fallbacks: [n], fallback_on: [server]}]
)");
    const mc::ModelPlan plan = mc::model_plan(config, "m");
    REQUIRE(plan.candidates.size() == 3);  // a, then n on a and on b
    CHECK(warning_lines(plan) == Lines{
        "warning: model m: stream_idle_timeout_ms 2000 of candidate 0 (route a) is at or above the turn deadline "
        "(timeout_ms 2000 of route a): it can fire only once a stream publishes",
        "warning: model m: first_byte_timeout_ms 2000 of candidate 2 (route b) is at or above the turn deadline "
        "(timeout_ms 2000 of route a): it can never fire",
        "warning: model m: first_token_timeout_ms 5000 of candidate 2 (route b) is at or above the turn deadline "
        "(timeout_ms 2000 of route a): it can never fire",
        "warning: model m: first_token_timeout_ms 5000 of candidate 2 (route b) never applies: no later candidate",
    });
    CHECK(plan.warnings[1].kind == Kind::timer_at_deadline);
    CHECK(plan.warnings[3].kind == Kind::first_token_never_applies);
}

TEST_CASE("first_token_timeout_ms never applies without timeout in fallback_on, or on the last candidate") {
    const mc::Config config = load_ok(R"(
routes:
  - {name: a, upstream: 'http://a', first_token_timeout_ms: 3000, models: [m, solo]}
  - {name: b, upstream: 'http://b', first_token_timeout_ms: 3000, models: [m]}
models: [{name: m, fallback_on: [server, code:overloaded]}]
)");
    const mc::ModelPlan m = mc::model_plan(config, "m");
    CHECK(warning_lines(m) == Lines{
        "warning: model m: first_token_timeout_ms 3000 of candidate 0 (route a) never applies: timeout is not in "
        "fallback_on",
        "warning: model m: first_token_timeout_ms 3000 of candidate 1 (route b) never applies: no later candidate",
    });
    CHECK(mc::render_model_plan(m)[1] == "  fallback_on: server, code:overloaded");
    // A model with one candidate and no entry is shown for its warning.
    const std::vector<mc::ModelPlan> plans = mc::model_plans(config);
    REQUIRE(plans.size() == 2);
    CHECK(plans[1].model == "solo");
    CHECK_FALSE(plans[1].has_entry);
    CHECK_FALSE(plans[1].reach_last_ms.has_value());
    CHECK(warning_lines(plans[1]) == Lines{"warning: model solo: first_token_timeout_ms 3000 of candidate 0 (route "
                                           "a) never applies: no later candidate"});
    CHECK(mc::render_model_plan(plans[1]) == Lines{
        "model solo: 1 candidate, balance ordered, 2 attempts per candidate",
        "  fallback_on: network, timeout, server, rate-limit, stream-incomplete",
        "  candidate 0: route a, upstream model solo",
        "  turn bounds from route a (the first deployment): timeout_ms 300000, max_attempts 8",
        "  worst case, through every candidate: 300000 ms (the turn deadline)",
    });
}

TEST_CASE("max_attempts that ends a turn before its last candidate is warned about") {
    const mc::Config config = load_ok(R"(
routes:
  - {name: a, upstream: 'http://a', retry: {max_attempts: 3}, models: [m]}
  - {name: b, upstream: 'http://b', models: [m, n]}
models: [{name: m, fallbacks: [n], fallback_on: []}]
)");
    const mc::ModelPlan plan = mc::model_plan(config, "m");
    CHECK(plan.max_attempts == 3);  // the first deployment's retry, not b's
    CHECK(warning_lines(plan) == Lines{"warning: model m: max_attempts 3 (route a) ends a turn before candidate 2 "
                                       "when each earlier candidate takes its 2 attempts"});
    CHECK(mc::render_model_plan(plan)[1] == "  fallback_on: (none: never falls over)");
}

TEST_CASE("which models doctor shows") {
    const mc::Config config = load_ok(R"(
routes:
  - {name: a, upstream: 'http://a', models: [one, two, entry]}
  - {name: b, upstream: 'http://b', models: [two]}
  - {name: rest, upstream: 'http://c', timeout_ms: 30000, stream_idle_timeout_ms: 30000, models: ['*']}
models: [{name: entry}]
)");
    const std::vector<mc::ModelPlan> plans = mc::model_plans(config);
    REQUIRE(plans.size() == 3);
    CHECK(plans[0].model == "two");    // two deployments
    CHECK(plans[0].reach_last_ms == std::nullopt);  // no first-byte timer: a hang holds the turn
    CHECK(plans[1].model == "entry");  // a models entry
    CHECK(plans[2].model == "*");      // the catch-all, for its warning
    REQUIRE(plans[2].candidates.size() == 1);
    CHECK(plans[2].candidates[0].upstream_model.empty());
    CHECK(mc::render_model_plan(plans[2])[2] == "  candidate 0: route rest, upstream model (the requested name)");
    CHECK(warning_lines(plans[2]) ==
          Lines{"warning: model *: stream_idle_timeout_ms 30000 of candidate 0 (route rest) is at or above the turn "
                "deadline (timeout_ms 30000 of route rest): it can fire only once a stream publishes"});
    CHECK(mc::model_plan(config, "unknown").candidates.empty());
}
