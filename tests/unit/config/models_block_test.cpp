// The top-level `models` block and a model's deployments (docs/behaviour.md
// section 13): what loads, its defaults, every refusal with its key path,
// and the lookups deployments_of, model_policy and find_model.
#include "config/config.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
using modelproxy::policy::Balance;
using modelproxy::policy::ErrorClass;
using Lines = std::vector<std::string>;
using Classes = std::vector<ErrorClass>;

namespace {

std::vector<std::string> problem_lines(std::string_view yaml) {
    std::vector<std::string> lines;
    for (const mc::Problem& problem : mc::load_config(yaml).problems) {
        lines.push_back(problem.line());
    }
    return lines;
}

mc::Config load_ok(std::string_view yaml) {
    mc::LoadResult result = mc::load_config(yaml);
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.problems.empty());
    REQUIRE(result.config.has_value());
    return *result.config;
}

// Routes serving m (twice), n, o, and "*"; `models` is appended as written.
std::string with_models(const std::string& models) {
    return R"(routes:
  - {name: a, upstream: 'http://a', models: [m, n]}
  - {name: b, upstream: 'http://b', models: [o, {name: m, upstream_model: m-b}]}
  - {name: rest, upstream: 'http://c', models: ['*']}
)" + models;
}

// docs/configuration.md's example: two Azure regions serving gpt-4o, and
// Anthropic's OpenAI-compatible endpoint as the fallback, both ways.
constexpr const char* two_regions_and_fallback = R"(
routes:
  - name: azure-east
    upstream: https://contoso-east.openai.azure.com/openai/v1
    api_key_env: AZURE_EAST_KEY
    api_key_header: api-key
    first_byte_timeout_ms: 5000
    first_token_timeout_ms: 15000
    models: [gpt-4o]
  - name: azure-west
    upstream: https://contoso-west.openai.azure.com/openai/v1
    api_key_env: AZURE_WEST_KEY
    api_key_header: api-key
    first_byte_timeout_ms: 5000
    first_token_timeout_ms: 15000
    models: [gpt-4o]
  - name: anthropic
    upstream: https://api.anthropic.com/v1
    api_key_env: ANTHROPIC_API_KEY
    first_byte_timeout_ms: 5000
    first_token_timeout_ms: 15000
    models:
      - {name: claude-sonnet, upstream_model: claude-sonnet-4-5}
models:
  - name: gpt-4o
    fallbacks: [claude-sonnet]
  - name: claude-sonnet
    fallbacks: [gpt-4o]
)";

}  // namespace

TEST_CASE("two deployments and a fallback load with the values written") {
    const mc::Config config = load_ok(two_regions_and_fallback);
    REQUIRE(config.routes.size() == 3);
    CHECK(config.routes[0].api_key_header == "api-key");
    CHECK(config.routes[1].first_byte_timeout_ms == 5000);
    CHECK(config.routes[2].first_token_timeout_ms == 15000);
    CHECK(config.routes[2].models[0].upstream_model == "claude-sonnet-4-5");

    using Deployments = std::vector<mc::Deployment>;
    CHECK(mc::deployments_of(config, "gpt-4o") == Deployments{{0, 0}, {1, 0}});
    CHECK(mc::deployments_of(config, "claude-sonnet") == Deployments{{2, 0}});

    REQUIRE(config.models.size() == 2);
    const mc::ModelPolicy& gpt = mc::model_policy(config, "gpt-4o");
    CHECK(&gpt == &config.models[0]);
    CHECK(gpt.name == "gpt-4o");
    CHECK(gpt.balance == Balance::ordered);
    CHECK(gpt.attempts_per_candidate == 2);
    CHECK(gpt.fallbacks == Lines{"claude-sonnet"});
    CHECK(gpt.fallback_on.classes ==
          Classes{ErrorClass::network, ErrorClass::timeout, ErrorClass::server, ErrorClass::rate_limit,
                  ErrorClass::stream_incomplete});
    CHECK(gpt.fallback_on.codes.empty());
    // Fallbacks of a fallback are not followed, so the pair may point at each other.
    CHECK(mc::model_policy(config, "claude-sonnet").fallbacks == Lines{"gpt-4o"});

    // find_model: the first deployment in config order.
    const mc::ModelMatch match = mc::find_model(config, "gpt-4o");
    CHECK(match.route == &config.routes[0]);
    CHECK(match.model == &config.routes[0].models[0]);
}

TEST_CASE("every models key as written") {
    const mc::Config config = load_ok(with_models(R"(models:
  - name: m
    balance: weighted
    attempts_per_candidate: 16
    fallbacks: [o, n]
    fallback_on: [not-found, code:context_length_exceeded, content-filter, invalid-request, timeout, 'code:x y']
  - {name: n, balance: ordered, attempts_per_candidate: 1, fallback_on: []}
  - {name: o}
)"));
    REQUIRE(config.models.size() == 3);
    const mc::ModelPolicy& m = config.models[0];
    CHECK(m.balance == Balance::weighted);
    CHECK(m.attempts_per_candidate == 16);
    CHECK(m.fallbacks == Lines{"o", "n"});
    CHECK(m.fallback_on.classes ==
          Classes{ErrorClass::not_found, ErrorClass::content_filter, ErrorClass::invalid_request, ErrorClass::timeout});
    CHECK(m.fallback_on.codes == Lines{"context_length_exceeded", "x y"});
    const mc::ModelPolicy& n = config.models[1];
    CHECK(n.balance == Balance::ordered);
    CHECK(n.attempts_per_candidate == 1);
    CHECK(n.fallbacks.empty());
    // An empty list is allowed and means: never fall over.
    CHECK(n.fallback_on.classes.empty());
    CHECK(n.fallback_on.codes.empty());
    const mc::ModelPolicy& o = config.models[2];
    CHECK(o.attempts_per_candidate == 2);
    CHECK(o.fallback_on.classes.size() == 5);
}

TEST_CASE("model_policy: a name without an entry takes the defaults") {
    const mc::Config config = load_ok(with_models("models: [{name: m, attempts_per_candidate: 3}]\n"));
    CHECK(mc::model_policy(config, "m").attempts_per_candidate == 3);
    for (const char* name : {"n", "o", "unknown", "*", ""}) {
        CAPTURE(name);
        const mc::ModelPolicy& defaults = mc::model_policy(config, name);
        CHECK(defaults.name.empty());
        CHECK(defaults.balance == Balance::ordered);
        CHECK(defaults.attempts_per_candidate == 2);
        CHECK(defaults.fallbacks.empty());
        CHECK(defaults.fallback_on.classes ==
              Classes{ErrorClass::network, ErrorClass::timeout, ErrorClass::server, ErrorClass::rate_limit,
                      ErrorClass::stream_incomplete});
        CHECK(defaults.fallback_on.codes.empty());
    }
    CHECK(load_ok(with_models("")).models.empty());
    CHECK(load_ok(with_models("models: []\n")).models.empty());
}

TEST_CASE("deployments_of: every route listing the name, in config order, never \"*\"") {
    const mc::Config config = load_ok(R"(routes:
  - {name: a, upstream: 'http://a', models: [x, m]}
  - {name: b, upstream: 'http://b', models: ['*']}
  - {name: c, upstream: 'http://c', models: [y]}
  - {name: d, upstream: 'http://d', models: [z, y, {name: m, upstream_model: m-d}]}
)");
    using Deployments = std::vector<mc::Deployment>;
    CHECK(mc::deployments_of(config, "m") == Deployments{{0, 1}, {3, 2}});
    CHECK(mc::deployments_of(config, "y") == Deployments{{2, 0}, {3, 1}});
    CHECK(mc::deployments_of(config, "x") == Deployments{{0, 0}});
    CHECK(mc::deployments_of(config, "other").empty());  // the "*" route serves it, but is no deployment
    CHECK(mc::deployments_of(config, "*").empty());
    CHECK(config.routes[3].models[2].upstream_model == "m-d");
    CHECK(mc::find_model(config, "y").route == &config.routes[2]);
    CHECK(mc::find_model(config, "other").route == &config.routes[1]);
}

TEST_CASE("a bad models block is refused, each problem with its key path") {
    auto [models, expected] = GENERATE(table<std::string, Lines>({
        {"models: {name: m}\n", {"models: must be a list"}},
        {"models: [m]\n",
         {"models[0]: must be a map with name and any of balance, attempts_per_candidate, fallbacks and "
          "fallback_on"}},
        {"models: [{balance: ordered}]\n", {"models[0].name: is required"}},
        {"models: [{name: ''}]\n", {"models[0].name: must not be empty"}},
        {"models: [{name: [m]}]\n", {"models[0].name: must be a string"}},
        {"models: [{name: gpt-5}]\n", {"models[0].name: no route lists model gpt-5 by name (\"*\" does not count)"}},
        {"models: [{name: '*'}]\n", {"models[0].name: no route lists model * by name (\"*\" does not count)"}},
        {"models: [{name: m}, {name: n}, {name: m}]\n",
         {"models[2].name: model m is listed twice in models (first at models[0].name)"}},
        {"models: [{name: m, balance: random}]\n", {"models[0].balance: must be ordered or weighted, got \"random\""}},
        {"models: [{name: m, attempts_per_candidate: 0}]\n",
         {"models[0].attempts_per_candidate: must be 1..16, got 0"}},
        {"models: [{name: m, attempts_per_candidate: 17}]\n",
         {"models[0].attempts_per_candidate: must be 1..16, got 17"}},
        {"models: [{name: m, fallbacks: n}]\n", {"models[0].fallbacks: must be a list of strings"}},
        {"models: [{name: m, fallbacks: [n, unknown]}]\n",
         {"models[0].fallbacks[1]: no route lists model unknown by name (\"*\" does not count)"}},
        {"models: [{name: m, fallbacks: ['*']}]\n",
         {"models[0].fallbacks[0]: no route lists model * by name (\"*\" does not count)"}},
        {"models: [{name: m, fallbacks: ['']}]\n", {"models[0].fallbacks[0]: must not be empty"}},
        {"models: [{name: m, fallbacks: [n, m]}]\n",
         {"models[0].fallbacks[1]: model m cannot be its own fallback (its deployments come first anyway)"}},
        {"models: [{name: m, fallbacks: [n, o, n]}]\n",
         {"models[0].fallbacks[2]: model n is listed twice in fallbacks (first at models[0].fallbacks[0])"}},
        {"models: [{name: m, fallback_on: [timeout, authentication]}]\n",
         {"models[0].fallback_on[1]: must be network, timeout, server, rate-limit, stream-incomplete, "
          "content-filter, invalid-request, not-found or code:<error code>, got \"authentication\""}},
        {"models: [{name: m, fallback_on: [Timeout]}]\n",
         {"models[0].fallback_on[0]: must be network, timeout, server, rate-limit, stream-incomplete, "
          "content-filter, invalid-request, not-found or code:<error code>, got \"Timeout\""}},
        {"models: [{name: m, fallback_on: ['code:']}]\n",
         {"models[0].fallback_on[0]: code: needs the error code after it, as code:context_length_exceeded"}},
        {"models: [{name: m, fallback_on: timeout}]\n", {"models[0].fallback_on: must be a list of strings"}},
        {"models: [{name: m, fallback: [n]}]\n", {"models[0].fallback: unknown key (did you mean fallbacks?)"}},
        {"models: [{name: m, upstream_model: x}]\n", {"models[0].upstream_model: unknown key"}},
    }));
    CAPTURE(models);
    CHECK(problem_lines(with_models(models)) == expected);
}

TEST_CASE("every problem of a models block is reported, in file order") {
    CHECK(problem_lines(with_models(R"(models:
  - {name: m, fallbacks: [m, gone], attempts_per_candidate: 99}
  - {name: gone, fallback_on: [nope]}
  - {name: m}
)")) == Lines{
        "models[0].fallbacks[0]: model m cannot be its own fallback (its deployments come first anyway)",
        "models[0].fallbacks[1]: no route lists model gone by name (\"*\" does not count)",
        "models[0].attempts_per_candidate: must be 1..16, got 99",
        "models[1].name: no route lists model gone by name (\"*\" does not count)",
        "models[1].fallback_on[0]: must be network, timeout, server, rate-limit, stream-incomplete, "
        "content-filter, invalid-request, not-found or code:<error code>, got \"nope\"",
        "models[2].name: model m is listed twice in models (first at models[0].name)",
    });
}

TEST_CASE("the models block is judged by the names routes list, valid or not") {
    // The route's model entry is refused on its own; the models entry naming
    // it gets no second problem.
    CHECK(problem_lines(R"(routes:
  - {name: a, upstream: 'http://a', models: [{name: m, accept: []}]}
models: [{name: m}]
)") == Lines{"routes[0].models[0].accept: must list at least one identity; without it every answer is refused"});
    // Without routes, one problem says enough.
    CHECK(problem_lines("models: [{name: m, fallbacks: [n]}]\n") == Lines{"routes: is required (list at least one route)"});
    CHECK(problem_lines("routes: {}\nmodels: [{name: m}]\n") == Lines{"routes: must be a list"});
    // models before routes in the file: problems still in file order.
    CHECK(problem_lines("models: [{name: q}]\nroutes: [{name: a, upstream: 'http://a', models: [m], weight: 0}]\n") ==
          Lines{"models[0].name: no route lists model q by name (\"*\" does not count)",
                "routes[0].weight: must be 1..1000, got 0"});
}
