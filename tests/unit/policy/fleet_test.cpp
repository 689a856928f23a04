// policy/fleet.hpp: Redis up or down as a replica sees it, its quota share
// while down, and which failures count toward a shared breaker
// (docs/behaviour.md section 15).
#include "policy/fleet.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

using namespace modelproxy::policy;
using namespace std::chrono_literals;

namespace {

using Time = FleetHealth::Time;
const Time t0 = Time{} + 1000h;  // times below count from it
Time at(std::int64_t ms) { return t0 + std::chrono::milliseconds(ms); }

// One event and what must hold right after it:
//   "call ok", "call failed"   on_call
//   "ping ok", "ping failed"   on_ping at `at_ms`
struct Step {
    std::int64_t at_ms;
    std::string op;
    FleetChange change;
    bool up;
    std::int64_t next_ping_ms;
};

void run(FleetHealth& health, const std::vector<Step>& steps) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& s = steps[i];
        CAPTURE(i, s.at_ms, s.op);
        FleetChange change = FleetChange::none;
        if (s.op == "call ok") {
            change = health.on_call(true);
        } else if (s.op == "call failed") {
            change = health.on_call(false);
        } else if (s.op == "ping ok") {
            change = health.on_ping(true, at(s.at_ms));
        } else {
            REQUIRE(s.op == "ping failed");
            change = health.on_ping(false, at(s.at_ms));
        }
        CHECK(change == s.change);
        CHECK(health.up() == s.up);
        CHECK(health.next_ping_delay() == std::chrono::milliseconds(s.next_ping_ms));
    }
}

constexpr auto none = FleetChange::none;
constexpr auto down = FleetChange::down;
constexpr auto up = FleetChange::up;

// Three failed calls: Redis down at time 0, pings at 100 ms.
const std::vector<Step> go_down{
    {0, "call failed", none, true, 100},
    {0, "call failed", none, true, 100},
    {0, "call failed", down, false, 100},
};

std::vector<Step> after_going_down(std::vector<Step> steps) {
    steps.insert(steps.begin(), go_down.begin(), go_down.end());
    return steps;
}

}  // namespace

TEST_CASE("fleet health: Redis starts up, and the steps of docs/behaviour.md section 15 move it", "[fleet]") {
    auto [name, steps] = GENERATE_REF(table<std::string, std::vector<Step>>({
        {"three failed or slow calls in a row take it down", go_down},
        {"a good call while up ends the run of failures",
         {
             {0, "call failed", none, true, 100},
             {0, "call failed", none, true, 100},
             {0, "call ok", none, true, 100},
             {0, "call failed", none, true, 100},
             {0, "call failed", none, true, 100},
             {0, "call failed", down, false, 100},
         }},
        {"failed pings back off, doubling from 100 ms to at most 5 s",
         after_going_down({
             {100, "ping failed", none, false, 200},
             {300, "ping failed", none, false, 400},
             {700, "ping failed", none, false, 800},
             {1500, "ping failed", none, false, 1600},
             {3100, "ping failed", none, false, 3200},
             {6300, "ping failed", none, false, 5000},
             {11300, "ping failed", none, false, 5000},
         })},
        {"3 s of good pings bring it up, not one millisecond less",
         after_going_down({
             {100, "ping ok", none, false, 100},
             {200, "ping ok", none, false, 100},
             {1600, "ping ok", none, false, 100},
             {3099, "ping ok", none, false, 100},
             {3100, "ping ok", up, true, 100},
         })},
        {"a failed ping restarts the run of good ones",
         after_going_down({
             {100, "ping ok", none, false, 100},
             {2000, "ping ok", none, false, 100},
             {2100, "ping failed", none, false, 200},
             {2300, "ping ok", none, false, 100},
             {5200, "ping ok", none, false, 100},
             {5300, "ping ok", up, true, 100},
         })},
        {"a good ping after backing off pings at 100 ms again",
         after_going_down({
             {100, "ping failed", none, false, 200},
             {300, "ping failed", none, false, 400},
             {700, "ping ok", none, false, 100},
             {800, "ping failed", none, false, 200},
         })},
        {"calls while down change nothing, good or failed",
         after_going_down({
             {50, "call ok", none, false, 100},
             {60, "call ok", none, false, 100},
             {70, "call ok", none, false, 100},
             {80, "call failed", none, false, 100},
         })},
        {"pings while up change nothing",
         {
             {0, "ping failed", none, true, 100},
             {100, "ping ok", none, true, 100},
             {5000, "ping ok", none, true, 100},
             {5000, "call failed", none, true, 100},
         }},
        {"back up, it takes three new failures to go down again",
         after_going_down({
             {100, "ping ok", none, false, 100},
             {3100, "ping ok", up, true, 100},
             {3200, "call failed", none, true, 100},
             {3300, "call failed", none, true, 100},
             {3400, "call failed", down, false, 100},
             {3500, "ping ok", none, false, 100},
             {6499, "ping ok", none, false, 100},
             {6500, "ping ok", up, true, 100},
         })},
    }));
    CAPTURE(name);
    FleetHealth health;
    CHECK(health.up());
    run(health, steps);
}

TEST_CASE("fleet health counts the run of failures and marks where good pings began", "[fleet]") {
    FleetHealth health;
    health.on_call(false);
    health.on_call(false);
    CHECK(health.failures_in_row() == 2);
    CHECK(health.on_call(false) == FleetChange::down);
    CHECK_FALSE(health.good_since().has_value());
    health.on_ping(true, at(100));
    CHECK(health.good_since() == at(100));
    health.on_ping(false, at(200));
    CHECK_FALSE(health.good_since().has_value());
    health.on_ping(true, at(400));
    CHECK(health.on_ping(true, at(3400)) == FleetChange::up);
    CHECK(health.failures_in_row() == 0);
    CHECK_FALSE(health.good_since().has_value());
}

TEST_CASE("a replica's quota share while Redis is down", "[fleet]") {
    auto [quota, replicas, share] = GENERATE(table<std::int64_t, std::int64_t, std::int64_t>({
        {10000, 1, 10000},
        {10000, 4, 2500},
        {10000, 3, 3333},        // rounded down
        {10, 3, 3},
        {2, 3, 1},               // at least 1
        {1, 1000, 1},
        {10000, 0, 10000},       // no replica seen reads as 1 (this one)
        {10000, -2, 10000},
        {0, 4, 0},               // 0: no limit, and stays so
        {10000000000, 7, 1428571428},
    }));
    CAPTURE(quota, replicas);
    CHECK(fleet_share(quota, replicas) == share);
}

TEST_CASE("only failures the provider declared count toward the shared breaker", "[fleet]") {
    using C = ErrorClass;
    auto [cls, status, event, counts] = GENERATE(table<ErrorClass, int, bool, bool>({
        {C::server, 500, false, true},
        {C::server, 502, false, true},
        {C::server, 503, false, true},
        {C::server, 529, false, true},
        {C::server, 599, false, true},
        {C::server, 200, true, true},     // a server-class error event in a 200 stream
        {C::server, 425, false, false},   // class server, but not a 5xx
        {C::server, 200, false, false},   // nothing declared
        {C::server, 0, false, false},
        {C::timeout, 504, false, false},  // a provider timeout is a timeout
        {C::timeout, 0, false, false},    // first-byte, stream-idle, the deadline
        {C::timeout, 200, false, false},
        {C::network, 0, false, false},
        {C::network, 502, false, false},
        {C::stream_incomplete, 200, false, false},
        {C::rate_limit, 429, false, false},
        {C::rate_limit, 200, true, false},
        {C::authentication, 401, false, false},
        {C::invalid_request, 400, false, false},
        {C::client, 409, false, false},
    }));
    CAPTURE(to_string(cls), status, event);
    CHECK(shared_breaker_counts(cls, status, event) == counts);
}
