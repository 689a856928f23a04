// The candidate lists of a config generation and the process-wide states
// behind them (docs/behaviour.md section 13): the order of a model's list,
// fallbacks of a fallback not followed, one breaker per (route, upstream
// model) shared by the names served through it, and a state kept by a new
// generation when its candidate is unchanged.
#include "proxy/candidates.hpp"

#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy;
using proxy::CandidateStates;
using proxy::CandidateTable;

namespace {

config::Config load(const std::string& yaml) {
    auto loaded = config::load_config(yaml);
    std::string problems;
    for (const auto& p : loaded.problems) problems += p.line() + "\n";
    CAPTURE(yaml, problems);
    REQUIRE(loaded.problems.empty());
    return *loaded.config;
}

const std::string three_routes = R"(
routes:
  - name: east
    upstream: http://127.0.0.1:1/v1
    models: [gpt-4o, {name: fast, upstream_model: gpt-4o}]
  - name: west
    upstream: http://127.0.0.1:2/v1
    models: [gpt-4o, gpt-4o-mini]
  - name: small
    upstream: http://127.0.0.1:3/v1
    models: [gpt-4o-mini, tiny]
models:
  - name: gpt-4o
    fallbacks: [gpt-4o-mini]
  - name: gpt-4o-mini
    fallbacks: [tiny]
)";

}  // namespace

TEST_CASE("a model's list: its deployments in config order, then its fallbacks' deployments, no further",
          "[candidates]") {
    CandidateStates states;
    const config::Config cfg = load(three_routes);
    CandidateTable table;
    table.build(cfg, states);
    const proxy::ModelCandidates* m = table.find("gpt-4o");
    REQUIRE(m);
    REQUIRE(m->list.size() == 4);
    CHECK(m->deployments == 2);
    CHECK(cfg.routes[m->list[0].route].name == "east");
    CHECK(cfg.routes[m->list[1].route].name == "west");
    CHECK(m->list[2].client_model == "gpt-4o-mini");
    CHECK(cfg.routes[m->list[2].route].name == "west");
    CHECK(cfg.routes[m->list[3].route].name == "small");
    // gpt-4o-mini's own fallback (tiny) is not followed from gpt-4o.
    for (const auto& c : m->list) CHECK(c.client_model != "tiny");
    CHECK(table.find("nothing") == nullptr);
    CHECK(table.find("tiny")->list.size() == 1);
}

TEST_CASE("names served through one upstream model share its breaker, other candidates do not", "[candidates]") {
    CandidateStates states;
    const config::Config cfg = load(three_routes);
    CandidateTable table;
    table.build(cfg, states);
    // "fast" is gpt-4o on east: the same (route, upstream model) as gpt-4o's first deployment.
    CHECK(table.find("fast")->list[0].state == table.find("gpt-4o")->list[0].state);
    CHECK(table.find("gpt-4o")->list[0].state != table.find("gpt-4o")->list[1].state);
    // gpt-4o-mini on west is the same candidate whether requested or a fallback.
    CHECK(table.find("gpt-4o")->list[2].state == table.find("gpt-4o-mini")->list[0].state);
}

TEST_CASE("a new generation keeps the state of an unchanged candidate and not of a changed one", "[candidates]") {
    CandidateStates states;
    const config::Config first = load(three_routes);
    auto table = std::make_unique<CandidateTable>();
    table->build(first, states);
    proxy::CandidateState* east = table->find("gpt-4o")->list[0].state;
    proxy::CandidateState* west = table->find("gpt-4o")->list[1].state;

    std::string changed = three_routes;
    changed.replace(changed.find("http://127.0.0.1:2/v1"), 21, "http://127.0.0.1:9/v1");  // west's upstream
    const config::Config second = load(changed);
    CandidateTable next;
    states.prune();
    next.build(second, states);
    CHECK(next.find("gpt-4o")->list[0].state == east);
    CHECK(next.find("gpt-4o")->list[1].state != west);
    // The old generation gone, its dropped states go at the next prune.
    table.reset();
    states.prune();
    CHECK(next.find("gpt-4o")->list[0].state == east);
}

TEST_CASE("the catch-all route keeps a state per served name, at most 256, the least recently used dropped",
          "[candidates]") {
    CandidateStates states;
    const config::Config cfg = load("routes:\n  - name: any\n    upstream: http://127.0.0.1:1/v1\n    models: ['*']\n");
    const config::Route& any = cfg.routes[0];
    const auto first = states.wildcard(any, "name-0");
    const proxy::CandidateState* first_seen = first.get();
    const auto kept = states.wildcard(any, "name-1");
    for (int i = 2; i < 300; ++i) {
        states.wildcard(any, "name-" + std::to_string(i));
        // name-1 is used again and again: the most recent, never dropped.
        if (i % 50 == 0) CHECK(states.wildcard(any, "name-1") == kept);
    }
    CHECK(states.wildcard_states().size() == 256);
    CHECK(states.wildcard(any, "name-1") == kept);
    CHECK(states.wildcard(any, "name-299")->model == "name-299");
    // name-0 went long ago: asked again, it is a new state (a closed breaker).
    const auto again = states.wildcard(any, "name-0");
    CHECK(again->model == "name-0");
    CHECK(states.wildcard_states().size() == 256);
    // The first state is still alive through the handle held here (a turn
    // holding it keeps it until it ends), but the registry no longer hands it out.
    CHECK(first_seen == first.get());
    CHECK(again != first);
}

TEST_CASE("two models that fall back to each other are accepted, and each list stops after one hop", "[candidates]") {
    CandidateStates states;
    const config::Config cfg = load(R"(
routes:
  - name: east
    upstream: http://127.0.0.1:1/v1
    models: [a]
  - name: west
    upstream: http://127.0.0.1:2/v1
    models: [b]
models:
  - name: a
    fallbacks: [b]
  - name: b
    fallbacks: [a]
)");
    CandidateTable table;
    table.build(cfg, states);
    REQUIRE(table.find("a")->list.size() == 2);
    CHECK(table.find("a")->list[1].client_model == "b");
    REQUIRE(table.find("b")->list.size() == 2);
    CHECK(table.find("b")->list[1].client_model == "a");
}
