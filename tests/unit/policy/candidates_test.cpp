#include "policy/candidates.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using namespace modelproxy::policy;

namespace {

using C = ErrorClass;
using T = TimeoutSource;
using D = DeploymentView;
using Picks = std::vector<std::int64_t>;
constexpr std::optional<std::size_t> none = std::nullopt;
std::vector<D> v(std::initializer_list<D> views) { return views; }

// Named fallback_on lists for the tables.
FallbackOn fallback_on(const std::string& name) {
    FallbackOn on;  // the five classes of docs/behaviour.md section 13
    if (name == "with-code") {
        on.codes = {"context_length_exceeded", "model_overloaded"};
    } else if (name == "network-only") {
        on.classes = {C::network};
    } else if (name == "no-timeout") {
        on.classes = {C::network, C::server, C::rate_limit, C::stream_incomplete};
    } else if (name == "content-filter") {
        on.classes.push_back(C::content_filter);
    } else {
        REQUIRE(name == "default");
    }
    return on;
}

// Sequential turns (each ends before the next starts) over `weights`: how
// many each deployment got, and the order of the first `keep`.
struct Split {
    std::vector<int> counts;
    std::vector<std::size_t> first;
};
Split sequential(const std::vector<int>& weights, int turns, int keep) {
    std::vector<D> views;
    for (const int w : weights) views.push_back({true, 0, w});
    Picks current(weights.size(), 0);
    Split s{std::vector<int>(weights.size(), 0), {}};
    for (int i = 0; i < turns; ++i) {
        const auto pick = pick_start(views, Balance::weighted, current);
        REQUIRE(pick);
        ++s.counts[*pick];
        if (i < keep) s.first.push_back(*pick);
    }
    return s;
}

}  // namespace

TEST_CASE("ordered: the first usable deployment in config order", "[candidates]") {
    auto [views, expected] = GENERATE(table<std::vector<D>, std::optional<std::size_t>>({
        {v({{true, 0, 1}, {true, 0, 1}}), 0},
        {v({{true, 9, 1}, {true, 0, 1}}), 0},  // in-flight turns do not matter
        {v({{false, 0, 1}, {true, 0, 1}, {true, 0, 1}}), 1},
        {v({{false, 0, 1}, {false, 0, 1}, {true, 5, 1}}), 2},
        {v({{false, 0, 1}, {false, 0, 1}}), none},
        {v({}), none},
    }));
    Picks current(views.size(), 7);
    CHECK(pick_start(views, Balance::ordered, current) == expected);
    CHECK(current == Picks(views.size(), 7));  // no round-robin state is used
}

// current before and after: only the tied deployments' entries move.
TEST_CASE("weighted: fewest in flight per unit of weight, ties by smooth weighted round-robin", "[candidates]") {
    auto [views, before, expected, after] =
        GENERATE(table<std::vector<D>, Picks, std::optional<std::size_t>, Picks>({
            // A single least loaded: it wins, its entry grows and gives back its own weight.
            {v({{true, 2, 1}, {true, 1, 1}}), {0, 0}, 1, {0, 0}},
            {v({{true, 1, 3}, {true, 0, 1}}), {0, 0}, 1, {0, 0}},
            {v({{true, 2, 3}, {true, 1, 2}}), {0, 0}, 1, {0, 0}},   // 1/2 < 2/3
            {v({{true, 1, 2}, {true, 2, 3}}), {0, 0}, 0, {0, 0}},
            {v({{true, 3, 1}, {true, 2, 1}}), {50, -50}, 1, {50, -50}},  // load first, round-robin after
            // Ties compared exactly: 2/4 == 1/2, 3/3 == 1/1 == 7/7.
            {v({{true, 2, 4}, {true, 1, 2}}), {0, 0}, 0, {-2, 2}},
            {v({{true, 3, 3}, {true, 1, 1}, {true, 7, 7}}), {0, 0, 0}, 2, {3, 1, -4}},
            // Among the tied, the largest entry after growing wins; the first on a tie.
            {v({{true, 0, 1}, {true, 0, 1}}), {0, 0}, 0, {-1, 1}},
            {v({{true, 0, 1}, {true, 0, 1}}), {-1, 1}, 1, {0, 0}},
            {v({{true, 0, 3}, {true, 0, 1}}), {-1, 1}, 0, {-2, 2}},
            // Only the tied take part: the third is busier and keeps its entry.
            {v({{true, 0, 3}, {true, 0, 1}, {true, 1, 5}}), {0, 0, 7}, 0, {-1, 1, 7}},
            // Unusable deployments are skipped however idle.
            {v({{false, 0, 1}, {true, 5, 1}}), {0, 0}, 1, {0, 0}},
            {v({{false, 0, 5}, {true, 0, 1}, {true, 0, 1}}), {9, 0, 0}, 1, {9, -1, 1}},
            // None usable: nothing picked, nothing moved.
            {v({{false, 0, 1}, {false, 0, 1}}), {3, 4}, none, {3, 4}},
        }));
    Picks current = before;
    CHECK(pick_start(views, Balance::weighted, current) == expected);
    CHECK(current == after);
}

TEST_CASE("weighted: sequential traffic is split by weight, smoothly", "[candidates]") {
    SECTION("3:1 over 4000 picks is exactly 3000:1000, in the order 0 0 1 0") {
        const Split s = sequential({3, 1}, 4000, 8);
        CHECK(s.counts == std::vector<int>{3000, 1000});
        CHECK(s.first == std::vector<std::size_t>{0, 0, 1, 0, 0, 0, 1, 0});
    }
    SECTION("5:1:1 gives the smooth order 0 0 1 0 2 0 0") {
        const Split s = sequential({5, 1, 1}, 7000, 7);
        CHECK(s.counts == std::vector<int>{5000, 1000, 1000});
        CHECK(s.first == std::vector<std::size_t>{0, 0, 1, 0, 2, 0, 0});
    }
    SECTION("equal weights alternate") {
        const Split s = sequential({2, 2}, 10, 4);
        CHECK(s.counts == std::vector<int>{5, 5});
        CHECK(s.first == std::vector<std::size_t>{0, 1, 0, 1});
    }
}

TEST_CASE("fallback_on: classes, and code:X against the code, else the type", "[candidates]") {
    auto [list, cls, code, type, matches] =
        GENERATE(table<std::string, C, std::string, std::string, bool>({
            {"default", C::network, "", "", true},
            {"default", C::timeout, "", "", true},
            {"default", C::server, "", "", true},
            {"default", C::rate_limit, "", "", true},
            {"default", C::stream_incomplete, "", "", true},
            {"default", C::content_filter, "", "", false},
            {"default", C::invalid_request, "", "", false},
            {"default", C::not_found, "", "", false},
            {"default", C::authentication, "", "", false},
            {"default", C::client, "", "", false},
            {"default", C::invalid_request, "context_length_exceeded", "", false},
            {"content-filter", C::content_filter, "", "", true},
            {"network-only", C::server, "", "", false},
            {"network-only", C::network, "", "", true},
            // code:X: the error's code when it has one ...
            {"with-code", C::invalid_request, "context_length_exceeded", "", true},
            {"with-code", C::invalid_request, "context_length_exceeded", "invalid_request_error", true},
            {"with-code", C::invalid_request, "other_code", "context_length_exceeded", false},
            // ... else its type.
            {"with-code", C::invalid_request, "", "model_overloaded", true},
            {"with-code", C::invalid_request, "", "context_length_exceeded", true},
            {"with-code", C::invalid_request, "", "", false},
            {"with-code", C::invalid_request, "context_length", "", false},  // exact, not a prefix
            // A listed class matches whatever the code.
            {"with-code", C::server, "other_code", "", true},
        }));
    CAPTURE(list, to_string(cls), code, type);
    CHECK(fallback_on(list).matches(cls, code, type) == matches);
}

TEST_CASE("fallback_on: has", "[candidates]") {
    const FallbackOn defaults;
    CHECK(defaults.has(C::timeout));
    CHECK(defaults.has(C::stream_incomplete));
    CHECK_FALSE(defaults.has(C::content_filter));
    CHECK_FALSE(fallback_on("no-timeout").has(C::timeout));
    CHECK(fallback_on("no-timeout").has(C::server));
}

// Section 13's fall-over rule, one row per branch.
TEST_CASE("fall_over: at once, after attempts_per_candidate, or section 6 on C", "[candidates]") {
    using M = Move;
    auto [list, cls, retryable, http_429, source, code, later, on_c, per_c, expected] =
        GENERATE(table<std::string, C, bool, bool, T, std::string, bool, int, int, M>({
            // A replayable class: on C while C has had fewer than attempts_per_candidate.
            {"default", C::server, true, false, T::none, "", true, 1, 2, M::replay_here},
            {"default", C::server, true, false, T::none, "", true, 2, 2, M::fall_over},
            {"default", C::server, true, false, T::none, "", true, 3, 2, M::fall_over},
            {"default", C::server, true, false, T::none, "", true, 1, 1, M::fall_over},
            {"default", C::network, true, false, T::none, "", true, 1, 2, M::replay_here},
            {"default", C::stream_incomplete, true, false, T::none, "", true, 1, 2, M::replay_here},
            {"default", C::stream_incomplete, true, false, T::none, "", true, 2, 2, M::fall_over},
            {"default", C::timeout, true, false, T::stream_idle, "", true, 1, 2, M::replay_here},
            {"default", C::timeout, true, false, T::stream_idle, "", true, 2, 2, M::fall_over},
            {"default", C::timeout, true, false, T::provider_timeout, "", true, 1, 2, M::replay_here},
            // No later usable candidate: section 6 decides on C.
            {"default", C::server, true, false, T::none, "", false, 2, 2, M::replay_here},
            {"default", C::rate_limit, true, true, T::none, "", false, 1, 2, M::replay_here},
            {"default", C::timeout, true, false, T::first_byte, "", false, 1, 2, M::replay_here},
            {"default", C::network, false, false, T::none, "", false, 1, 2, M::replay_here},
            // A 429 falls over at once.
            {"default", C::rate_limit, true, true, T::none, "", true, 1, 2, M::fall_over},
            // A first-byte or first-token timeout falls over at once.
            {"default", C::timeout, true, false, T::first_byte, "", true, 1, 2, M::fall_over},
            {"default", C::timeout, true, false, T::first_token, "", true, 1, 2, M::fall_over},
            // A class section 5 does not replay falls over at once.
            {"default", C::network, false, false, T::none, "", true, 1, 2, M::fall_over},
            {"default", C::rate_limit, false, false, T::none, "", true, 1, 2, M::fall_over},  // quota in a 200 stream
            {"content-filter", C::content_filter, false, false, T::none, "", true, 1, 2, M::fall_over},
            {"with-code", C::invalid_request, false, false, T::none, "context_length_exceeded", true, 1, 2, M::fall_over},
            // Not in fallback_on: section 6 decides on C.
            {"default", C::content_filter, false, false, T::none, "", true, 1, 2, M::replay_here},
            {"default", C::invalid_request, false, false, T::none, "context_length_exceeded", true, 1, 2, M::replay_here},
            {"network-only", C::server, true, false, T::none, "", true, 5, 2, M::replay_here},
            {"network-only", C::rate_limit, true, true, T::none, "", true, 1, 2, M::replay_here},
            {"no-timeout", C::timeout, true, false, T::first_byte, "", true, 1, 2, M::replay_here},
            {"no-timeout", C::timeout, true, false, T::first_token, "", true, 1, 2, M::replay_here},
        }));
    CAPTURE(list, to_string(cls), retryable, http_429, to_string(source), code, later, on_c, per_c);
    FallOverFacts facts;
    facts.cls = cls;
    facts.retryable = retryable;
    facts.http_429 = http_429;
    facts.timeout_source = source;
    facts.code = code;
    facts.later_usable = later;
    facts.attempts_on_candidate = on_c;
    facts.attempts_per_candidate = per_c;
    CHECK(fall_over(facts, fallback_on(list)) == expected);
}

TEST_CASE("fall_over: code:X read from the type when the error has no code", "[candidates]") {
    FallOverFacts facts;
    facts.cls = C::invalid_request;
    facts.later_usable = true;
    facts.type = "context_length_exceeded";
    CHECK(fall_over(facts, fallback_on("with-code")) == Move::fall_over);
    facts.code = "something_else";
    CHECK(fall_over(facts, fallback_on("with-code")) == Move::replay_here);
}

TEST_CASE("cooldown after a 429: Retry-After, else 1 s", "[candidates]") {
    auto [retry_after, expected] = GENERATE(table<std::optional<std::int64_t>, std::int64_t>({
        {std::nullopt, 1000},
        {0, 0},
        {-30, 0},
        {2500, 2500},
        {120000, 120000},
    }));
    CHECK(cooldown_ms(retry_after) == expected);
}
