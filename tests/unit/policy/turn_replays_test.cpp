#include "policy/turn_replays.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using namespace modelproxy::policy;
using namespace std::chrono_literals;

namespace {

using V = Verdict;
using B = Bound;
using Time = TurnReplays::Time;

const Time start = Time{} + 1h;  // the turn's start; times below count from it
Time at(std::int64_t ms) { return start + std::chrono::milliseconds(ms); }

Failure http(int status, std::optional<std::int64_t> retry_after = std::nullopt) {
    const ErrorClass cls = status == 429 ? ErrorClass::rate_limit
                           : status >= 500 ? ErrorClass::server
                                           : ErrorClass::invalid_request;
    return {cls, status >= 500 || status == 429, TimeoutSource::none, status, retry_after};
}
Failure dropped() { return {ErrorClass::network, true, TimeoutSource::none, 0, std::nullopt}; }
Failure cut_by_deadline() { return {ErrorClass::timeout, true, TimeoutSource::attempt_deadline, 0, std::nullopt}; }

// One attempt of a turn: how it failed, when that was decided and with what
// draw; what the decision was, with the attempt record's delay_ms and
// remaining_ms; and for a retry, when the wait ended and whether the send
// went ahead.
struct Step {
    Failure failure;
    std::int64_t decided_at;
    double draw;
    V verdict;
    B bound;
    std::int64_t delay_ms;
    std::int64_t remaining_ms;
    std::int64_t send_at = 0;
    V send = V::retry;
};

struct Scenario {
    std::string name;
    RetryConfig config;
    std::int64_t deadline_ms;
    std::vector<Step> steps;
};

RetryConfig small() {
    RetryConfig c;
    c.max_attempts = 4;
    c.base_delay_ms = 100;
    c.max_delay_ms = 1000;
    c.max_total_delay_ms = 250;
    c.throttled_max_attempts = 6;
    c.throttled_max_total_delay_ms = 2000;
    c.jitter = Jitter::none;
    c.min_attempt_ms = 50;
    return c;
}

RetryConfig with(RetryConfig c, int max_attempts, Jitter jitter = Jitter::none) {
    c.max_attempts = max_attempts;
    c.jitter = jitter;
    return c;
}

// The turn loop's decisions over TurnReplays, as proxy/turn.cpp makes them:
// start an attempt, decide its failure, and for a retry check again after
// the wait. Every step must be used and the turn must end on the last.
void run(const Scenario& s) {
    CAPTURE(s.name);
    TurnReplays turn(s.config, at(s.deadline_ms));
    std::int64_t waited = 0;
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
        const Step& step = s.steps[i];
        CAPTURE(i);
        CHECK(turn.start_attempt() == static_cast<int>(i) + 1);
        const Decision d = turn.after_failure(step.failure, at(step.decided_at), step.draw);
        CHECK(d.verdict == step.verdict);
        CHECK(d.bound == step.bound);
        CHECK(d.wait_ms == step.delay_ms);
        CHECK(turn.remaining_ms(at(step.decided_at)) == step.remaining_ms);
        if (d.verdict != V::retry) {
            CHECK(i + 1 == s.steps.size());  // the turn ends here
            CHECK(turn.waited_ms() == waited);
            return;
        }
        waited += d.wait_ms;
        CHECK(turn.waited_ms() == waited);
        const Decision again = turn.before_send(at(step.send_at));
        CHECK(again.verdict == step.send);
        if (again.verdict != V::retry) {
            CHECK(again.bound == B::deadline);
            CHECK(i + 1 == s.steps.size());
            return;
        }
    }
    FAIL("the turn did not end on its last step");
}

}  // namespace

TEST_CASE("turn replays: attempt outcomes with times give the decisions, waits and records", "[turn-replays]") {
    const Scenario scenario = GENERATE(values<Scenario>({
        // Backoff 100, then 200 clamped to the 150 left of the summed wait;
        // then nothing is left: exhausted on max_total_delay_ms.
        {"503s until the summed wait is spent", small(), 2000,
         {{http(503), 10, 0.0, V::retry, B::none, 100, 1990, 115},
          {http(503), 130, 0.0, V::retry, B::none, 150, 1870, 285},
          {http(503), 300, 0.0, V::exhausted, B::max_total_delay_ms, 0, 1700}}},
        // Drops until max_attempts: one counter for the turn.
        {"drops until max_attempts", with(small(), 2), 2000,
         {{dropped(), 0, 0.0, V::retry, B::none, 100, 2000, 100},
          {dropped(), 150, 0.0, V::exhausted, B::max_attempts, 0, 1850}}},
        // The failure being decided picks the bound: 429s under the throttled
        // pair, then a 503 after them meets max_attempts.
        {"a 503 after 429s ends the turn", with(small(), 2), 5000,
         {{http(429), 0, 0.0, V::retry, B::none, 100, 5000, 100},
          {http(429), 100, 0.0, V::retry, B::none, 200, 4900, 300},
          {http(503), 300, 0.0, V::exhausted, B::max_attempts, 0, 4700}}},
        // Retry-After lengthens a 429's wait, clamped to max_delay_ms.
        {"Retry-After lengthens the wait up to max_delay_ms", small(), 10000,
         {{http(429, 700), 0, 0.0, V::retry, B::none, 700, 10000, 700},
          {http(429, 5000), 700, 0.0, V::retry, B::none, 1000, 9300, 1700},
          {http(400), 1700, 0.0, V::terminal, B::none, 0, 8300}}},
        // Full jitter: the draw picks the wait in [0, interval].
        {"full jitter follows the draw", with(small(), 4, Jitter::full), 2000,
         {{dropped(), 0, 0.5, V::retry, B::none, 50, 2000, 50},
          {dropped(), 50, 0.0, V::retry, B::none, 0, 1950, 50},
          {dropped(), 60, 0.9999, V::retry, B::none, 200, 1940, 260},
          {dropped(), 300, 0.0, V::exhausted, B::max_attempts, 0, 1700}}},
        // The wait plus min_attempt_ms does not fit before the deadline.
        {"a retry the deadline leaves no time for is not made", small(), 180,
         {{http(503), 0, 0.0, V::retry, B::none, 100, 180, 100},
          {http(503), 100, 0.0, V::deadline, B::deadline, 0, 80}}},
        // The wait overran: checked again before the send.
        {"a wait that overran ends the turn before the send", small(), 300,
         {{http(503), 100, 0.0, V::retry, B::none, 100, 200, 260, V::deadline}}},
        // An attempt cut by the deadline: deadline, whatever the bounds.
        {"an attempt cut by the deadline", small(), 500,
         {{cut_by_deadline(), 500, 0.0, V::deadline, B::deadline, 0, 0}}},
        {"a terminal failure ends the turn at once", small(), 500, {{http(400), 5, 0.0, V::terminal, B::none, 0, 495}}},
    }));
    run(scenario);
}

TEST_CASE("turn replays: time left is measured from the deadline at the given time", "[turn-replays]") {
    RetryConfig config;
    const TurnReplays turn(config, at(1000));
    CHECK(turn.left_ms(at(0)) == 1000);
    CHECK(turn.left_ms(at(1000)) == 0);
    CHECK(turn.left_ms(at(1500)) == -500);
    CHECK(turn.remaining_ms(at(1500)) == 0);
    CHECK(turn.attempts() == 0);
    CHECK(turn.waited_ms() == 0);
}

TEST_CASE("turn replays: a fall-over shares the turn's counter and adds no wait", "[turn-replays]") {
    const RetryConfig config = with(small(), 3);
    TurnReplays turn(config, at(2000));
    turn.start_attempt();
    CHECK(turn.fall_over(http(503), at(10)) == Decision{V::retry, B::none, 0, "fallback"});
    turn.start_attempt();
    const Decision replay = turn.after_failure(http(503), at(20), 0.0);
    CHECK(replay == Decision{V::retry, B::none, 200, "backoff"});
    turn.start_attempt();
    // The third attempt meets max_attempts 3, elsewhere as here.
    CHECK(turn.fall_over(http(503), at(300)) == Decision{V::exhausted, B::max_attempts, 0, "attempts-bound"});
    CHECK(turn.waited_ms() == 200);
    // Too little left of the deadline to send anywhere.
    CHECK(turn.fall_over(http(429), at(1960)) == Decision{V::deadline, B::deadline, 0, "deadline-before-send"});
}
