// policy/admission.hpp: the retry budget, the backpressure units of a failure
// and the adaptive admission limit (docs/behaviour.md section 14).
#include "policy/admission.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

using namespace modelproxy::policy;
using namespace std::chrono_literals;

namespace {

using C = ErrorClass;
using Time = AdmissionLimit::Time;

const Time t0 = Time{} + 1000h;  // times below count from it
Time at(std::int64_t ms) { return t0 + std::chrono::milliseconds(ms); }

RetryConfig budget(double ratio, int min) {
    RetryConfig r;
    r.budget_ratio = ratio;
    r.budget_min_concurrency = min;
    return r;
}

// Named admission configs: the defaults of section 14 with the named change.
AdmissionConfig config(const std::string& name) {
    AdmissionConfig c;
    if (name == "at 10") {
        c.initial_limit = 10;
    } else if (name == "min 20") {
        c.min_limit = 20;
    } else if (name == "min 60") {
        c.min_limit = 60;
    } else if (name == "max 70") {
        c.max_limit = 70;
    } else if (name == "max 50") {
        c.max_limit = 50;
    } else if (name == "decrease 0.5") {
        c.decrease = 0.5;
    } else {
        REQUIRE(name == "default");
    }
    return c;
}

// One event at `at_ms` and the integer limit read right after it, at the same time:
//   decrease U    on_backpressure(U) must apply (return true)
//   ignored U     on_backpressure(U) must change nothing (return false)
//   ok            on_success
//   ok xN         N successes
//   limit         nothing: just the reading
//   reconfigure NAME   reconfigure(config(NAME))
struct Step {
    std::int64_t at_ms;
    std::string op;
    int limit;
};

void run(const std::string& cfg, const std::vector<Step>& steps) {
    AdmissionLimit a(config(cfg), t0);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& s = steps[i];
        CAPTURE(i, s.at_ms, s.op);
        const Time now = at(s.at_ms);
        const auto space = s.op.find(' ');
        const std::string verb = s.op.substr(0, space);
        const std::string arg = space == std::string::npos ? "" : s.op.substr(space + 1);
        if (verb == "decrease" || verb == "ignored") {
            CHECK(a.on_backpressure(std::stoi(arg), now) == (verb == "decrease"));
        } else if (verb == "ok") {
            const int n = arg.empty() ? 1 : std::stoi(arg.substr(1));
            for (int k = 0; k < n; ++k) a.on_success(now);
        } else if (verb == "reconfigure") {
            a.reconfigure(config(arg));
        } else {
            REQUIRE(verb == "limit");
        }
        CHECK(a.limit(now) == s.limit);
    }
}

}  // namespace

TEST_CASE("replay_budget: max(budget_min_concurrency, floor(budget_ratio x turns))", "[admission]") {
    auto [ratio, min, turns, expected] = GENERATE(table<double, int, int, int>({
        // The defaults: 0.2 and 3.
        {0.2, 3, 0, 3},
        {0.2, 3, 1, 3},
        {0.2, 3, 4, 3},
        {0.2, 3, 5, 3},
        {0.2, 3, 14, 3},
        {0.2, 3, 15, 3},
        {0.2, 3, 20, 4},
        {0.2, 3, 100, 20},
        // Replays off.
        {0.0, 0, 0, 0},
        {0.0, 0, 1, 0},
        {0.0, 0, 4, 0},
        {0.0, 0, 5, 0},
        {0.0, 0, 14, 0},
        {0.0, 0, 15, 0},
        {0.0, 0, 100, 0},
        // One replay per turn.
        {1.0, 0, 0, 0},
        {1.0, 0, 1, 1},
        {1.0, 0, 4, 4},
        {1.0, 0, 5, 5},
        {1.0, 0, 14, 14},
        {1.0, 0, 15, 15},
        {1.0, 0, 100, 100},
        // The floor does not fall below the integer a binary fraction misses.
        {0.2, 0, 5, 1},
        {0.2, 0, 4, 0},
        {0.2, 0, 15, 3},
        {0.29, 0, 100, 29},
        {0.7, 0, 10, 7},
        {0.1, 0, 30, 3},
        // A negative count reads as none.
        {0.2, 3, -5, 3},
    }));
    CAPTURE(ratio, min, turns);
    CHECK(replay_budget(turns, budget(ratio, min)) == expected);
}

TEST_CASE("replay_within_budget: the replays in flight count the one asking", "[admission]") {
    auto [ratio, min, replays, turns, expected] = GENERATE(table<double, int, int, int, bool>({
        {0.2, 3, 1, 1, true},
        {0.2, 3, 3, 1, true},
        {0.2, 3, 4, 1, false},
        {0.2, 3, 3, 15, true},
        {0.2, 3, 4, 15, false},
        {0.2, 3, 20, 100, true},
        {0.2, 3, 21, 100, false},
        // Off: never, not even the first replay, nor one passed as 0.
        {0.0, 0, 1, 1, false},
        {0.0, 0, 1, 100, false},
        {0.0, 0, 0, 100, false},
        {1.0, 0, 1, 0, false},
        {1.0, 0, 1, 1, true},
        {1.0, 0, 2, 1, false},
        {1.0, 0, 5, 5, true},
        {1.0, 0, 6, 5, false},
    }));
    CAPTURE(ratio, min, replays, turns);
    CHECK(replay_within_budget(replays, turns, budget(ratio, min)) == expected);
}

TEST_CASE("backpressure_units: what a failure weighs", "[admission]") {
    const Backpressure defaults;
    const Backpressure custom{2, 5, 1};
    auto [what, cls, status, overloaded, with_defaults, with_custom] =
        GENERATE_COPY(table<std::string, C, int, bool, int, int>({
            {"HTTP 429", C::rate_limit, 429, false, 1, 2},
            {"HTTP 529", C::server, 529, false, 3, 5},
            {"HTTP 529 with an overloaded_error body", C::server, 529, true, 3, 5},
            {"overloaded_error event at 200", C::server, 200, true, 3, 5},
            {"overloaded_error type at 503", C::server, 503, true, 3, 5},
            {"HTTP 503", C::server, 503, false, 0, 1},
            {"HTTP 500", C::server, 500, false, 0, 1},
            {"HTTP 425", C::server, 425, false, 0, 1},
            {"server_error event at 200", C::server, 200, false, 0, 1},
            {"HTTP 400", C::invalid_request, 400, false, 0, 0},
            {"HTTP 401", C::authentication, 401, false, 0, 0},
            {"HTTP 504", C::timeout, 504, false, 0, 0},
            {"network", C::network, 0, false, 0, 0},
            {"timeout", C::timeout, 0, false, 0, 0},
            {"quota error inside a 200 stream", C::rate_limit, 200, false, 0, 0},
            {"stream-incomplete", C::stream_incomplete, 200, false, 0, 0},
        }));
    CAPTURE(what);
    CHECK(backpressure_units({cls, status, overloaded}, defaults) == with_defaults);
    CHECK(backpressure_units({cls, status, overloaded}, custom) == with_custom);
}

TEST_CASE("admission limit: decreases on backpressure, at most once per second", "[admission]") {
    auto [name, cfg, steps] = GENERATE(table<std::string, std::string, std::vector<Step>>({
        {"starts at initial_limit", "default", {{0, "limit", 64}, {999, "limit", 64}}},
        {"one 429: 64 x 0.7 = 44.8", "default", {{0, "decrease 1", 44}, {0, "limit", 44}}},
        {"a second 429 within 1 s is ignored", "default",
         {{0, "decrease 1", 44}, {1, "ignored 1", 44}, {999, "ignored 1", 44},
          // The ignored one at 999 restarted the quiet clock: 44.8 x 0.7.
          {1000, "decrease 1", 31}}},
        {"after 1 s applied again (the quiet second first)", "default",
         {{0, "decrease 1", 44}, {1000, "decrease 1", 32}}},  // (44.8 + 1) x 0.7 = 32.06
        {"overload weighs 3 units: 64 x 0.343", "default", {{0, "decrease 3", 21}}},
        {"units 0: nothing", "default", {{0, "ignored 0", 64}, {0, "ignored -1", 64}}},
        {"clamped at min_limit", "min 20",
         {{0, "decrease 3", 21}, {1000, "decrease 3", 20}, {2000, "decrease 3", 20}, {2000, "limit", 20}}},
        {"never below 1 with the default min_limit", "default",
         {{0, "decrease 3", 21}, {1000, "decrease 3", 7}, {2000, "decrease 3", 3},
          {3000, "decrease 3", 1}, {4000, "decrease 3", 1}, {4000, "limit", 1}}},
        {"decrease 0.5", "decrease 0.5", {{0, "decrease 1", 32}, {1000, "decrease 2", 8}}},
    }));
    CAPTURE(name);
    run(cfg, steps);
}

TEST_CASE("admission limit: grows by 1/limit per success and 1 per quiet second", "[admission]") {
    auto [name, cfg, steps] = GENERATE(table<std::string, std::string, std::vector<Step>>({
        {"10 successes at limit 10 add 1", "at 10",
         {{0, "ok x9", 10}, {0, "ok", 11}, {0, "ok x10", 11}, {0, "ok", 12}}},
        {"one success is a fraction", "default", {{0, "ok", 64}, {0, "ok x63", 65}}},
        {"a quiet second adds 1, not before it is whole", "default",
         {{999, "limit", 64}, {1000, "limit", 65}, {1999, "limit", 65}, {2000, "limit", 66},
          {2999, "limit", 66}, {10000, "limit", 74}}},
        {"quiet seconds are credited once, however often read", "default",
         {{1500, "limit", 65}, {1500, "limit", 65}, {1700, "limit", 65}, {2100, "limit", 66}}},
        {"a decrease restarts the quiet clock", "default",
         {{900, "decrease 1", 44}, {1800, "limit", 44}, {1900, "limit", 45}, {2900, "limit", 46}}},
        {"an ignored backpressure failure restarts it too", "default",
         {{0, "decrease 1", 44}, {500, "ignored 1", 44}, {1400, "limit", 44}, {1500, "limit", 45}}},
        {"a failure without backpressure does not", "default",
         {{500, "ignored 0", 64}, {1000, "limit", 65}}},
        {"a time before the quiet run credits nothing", "default",
         {{1000, "decrease 1", 45}, {500, "limit", 45}, {2000, "limit", 46}}},
        {"clamped at max_limit", "max 70",
         {{6000, "limit", 70}, {100000, "limit", 70}, {100000, "ok x100", 70},
          {100000, "decrease 1", 49}}},
        {"successes and quiet seconds together", "at 10",
         {{0, "ok x5", 10}, {1000, "limit", 11}, {1000, "ok x11", 12}}},
    }));
    CAPTURE(name);
    run(cfg, steps);
}

TEST_CASE("admission limit: a reload keeps the value, clamped to the new range", "[admission]") {
    auto [name, cfg, steps] = GENERATE(table<std::string, std::string, std::vector<Step>>({
        {"a lower max_limit clamps", "default", {{0, "reconfigure max 50", 50}, {5000, "limit", 50}}},
        {"a higher min_limit clamps", "default",
         {{0, "decrease 1", 44}, {0, "reconfigure min 60", 60}}},
        {"a range that holds the value keeps it", "default",
         {{0, "decrease 1", 44}, {0, "reconfigure max 70", 44}, {1000, "limit", 45}}},
        {"the new decrease applies, the once-per-second rule kept", "default",
         {{0, "decrease 1", 44}, {0, "reconfigure decrease 0.5", 44}, {500, "ignored 1", 44},
          {1500, "decrease 1", 22}}},
    }));
    CAPTURE(name);
    run(cfg, steps);
}

TEST_CASE("admission limit: value() is the real number behind the limit", "[admission]") {
    AdmissionLimit a(config("default"), t0);
    CHECK(a.value(at(0)) == Approx(64.0));
    CHECK(a.on_backpressure(1, at(0)));
    CHECK(a.value(at(0)) == Approx(44.8));
    a.on_success(at(0));
    CHECK(a.value(at(0)) == Approx(44.8 + 1.0 / 44));
    CHECK(a.value(at(2500)) == Approx(46.8 + 1.0 / 44));
    CHECK(a.config().initial_limit == 64);
}
