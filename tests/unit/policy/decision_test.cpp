#include "policy/decision.hpp"

#include <catch2/catch.hpp>

#include <climits>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

using namespace modelproxy::policy;

namespace {

using V = Verdict;
using B = Bound;
using C = ErrorClass;
using T = TimeoutSource;
constexpr std::int64_t plenty = 1'000'000'000;  // ms left: the deadline is far

// Named configs for the tables.
RetryConfig config(const std::string& name) {
    RetryConfig c;  // the defaults of docs/behaviour.md section 3
    if (name == "small-caps") {
        c.max_total_delay_ms = 1000;
        c.throttled_max_total_delay_ms = 1500;
    } else if (name == "full-jitter") {
        c.jitter = Jitter::full;
    } else if (name == "no-min-attempt") {
        c.min_attempt_ms = 0;
    } else {
        REQUIRE(name == "default");
    }
    return c;
}

Failure server(int status = 503, std::optional<std::int64_t> retry_after = std::nullopt) {
    return {C::server, true, T::none, status, retry_after};
}
Failure throttle(std::optional<std::int64_t> retry_after = std::nullopt) {
    return {C::rate_limit, true, T::none, 429, retry_after};
}

// One simulated turn over the pure function: every attempt fails at once
// with failure_at(attempt); time passes only by the waits.
struct Turn {
    std::vector<std::int64_t> waits;
    Decision last;
    int attempts = 0;
};

Turn run_turn(const std::function<Failure(int)>& failure_at, const RetryConfig& cfg,
              std::int64_t deadline_ms) {
    Turn t;
    std::int64_t waited = 0;
    for (int attempt = 1; attempt <= 1000; ++attempt) {
        t.attempts = attempt;
        const Decision d = decide({attempt, waited}, failure_at(attempt), cfg,
                                  deadline_ms - waited, 0.0);
        if (d.verdict != V::retry) {
            t.last = d;
            return t;
        }
        t.waits.push_back(d.wait_ms);
        waited += d.wait_ms;
        const Decision again = recheck_before_send(deadline_ms - waited, cfg);
        if (again.verdict != V::retry) {
            t.last = again;
            return t;
        }
    }
    FAIL("the turn never ended");
    return t;
}

std::int64_t sum(const std::vector<std::int64_t>& v) {
    return std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

}  // namespace

TEST_CASE("verdicts and bounds are spelled as in records and config keys", "[decision]") {
    CHECK(to_string(V::retry) == "retry");
    CHECK(to_string(V::terminal) == "terminal");
    CHECK(to_string(V::exhausted) == "exhausted");
    CHECK(to_string(V::deadline) == "deadline");
    CHECK(to_string(B::none) == "none");
    CHECK(to_string(B::max_attempts) == "max_attempts");
    CHECK(to_string(B::max_total_delay_ms) == "max_total_delay_ms");
    CHECK(to_string(B::throttled_max_attempts) == "throttled_max_attempts");
    CHECK(to_string(B::throttled_max_total_delay_ms) == "throttled_max_total_delay_ms");
    CHECK(to_string(B::deadline) == "deadline");
}

TEST_CASE("interval(k) = min(max_delay_ms, base_delay_ms * 2^(k-1)), saturating", "[decision]") {
    RetryConfig huge;
    huge.base_delay_ms = 1;
    huge.max_delay_ms = std::numeric_limits<std::int64_t>::max();
    RetryConfig zero_base;
    zero_base.base_delay_ms = 0;
    auto [name, k, expected] = GENERATE(table<std::string, int, std::int64_t>({
        {"default", 0, 500},
        {"default", 1, 500},
        {"default", 2, 1000},
        {"default", 3, 2000},
        {"default", 4, 4000},
        {"default", 5, 8000},
        {"default", 6, 16000},
        {"default", 7, 20000},
        {"default", 8, 20000},
        {"default", 64, 20000},
        {"default", INT_MAX, 20000},
        {"huge", 1, 1},
        {"huge", 63, std::int64_t{1} << 62},
        {"huge", 64, std::numeric_limits<std::int64_t>::max()},
        {"huge", INT_MAX, std::numeric_limits<std::int64_t>::max()},
        {"zero-base", 10, 0},
    }));
    const RetryConfig& cfg = name == "huge" ? huge : name == "zero-base" ? zero_base : config(name);
    CAPTURE(name, k);
    CHECK(interval_ms(k, cfg) == expected);
}

TEST_CASE("one decision per row", "[decision]") {
    // attempts, waited_ms, failure, config, time_left_ms, draw -> verdict, bound, wait_ms, rule
    auto [attempts, waited, failure, cfg_name, left, draw, verdict, bound, wait, rule] =
        GENERATE(table<int, std::int64_t, Failure, std::string, std::int64_t, double, V, B,
                       std::int64_t, std::string>({
            // Not retryable: terminal, whatever else.
            {1, 0, Failure{C::invalid_request, false, T::none, 400, std::nullopt}, "default", plenty, 0.0, V::terminal, B::none, 0, "not-retryable"},
            {8, 60000, Failure{C::authentication, false, T::none, 401, std::nullopt}, "default", 0, 0.0, V::terminal, B::none, 0, "not-retryable"},
            {1, 0, Failure{C::rate_limit, false, T::none, 0, std::nullopt}, "default", plenty, 0.0, V::terminal, B::none, 0, "not-retryable"},
            // The default schedule.
            {1, 0, server(), "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            {2, 500, server(), "default", plenty, 0.0, V::retry, B::none, 1000, "backoff"},
            {7, 31500, server(), "default", plenty, 0.0, V::retry, B::none, 20000, "backoff"},
            {1, 0, Failure{C::network, true, T::none, 0, std::nullopt}, "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            // Attempt bounds: the failure decided picks one.
            {8, 51500, server(), "default", plenty, 0.0, V::exhausted, B::max_attempts, 0, "attempts-bound"},
            {9, 51500, server(), "default", plenty, 0.0, V::exhausted, B::max_attempts, 0, "attempts-bound"},
            {8, 51500, throttle(), "default", plenty, 0.0, V::retry, B::none, 20000, "backoff"},
            {23, 351500, throttle(), "default", plenty, 0.0, V::retry, B::none, 20000, "backoff"},
            {24, 371500, throttle(), "default", plenty, 0.0, V::exhausted, B::throttled_max_attempts, 0, "attempts-bound"},
            // Ten 429s then a 503: the 503 is judged against max_attempts.
            {11, 111500, server(), "default", plenty, 0.0, V::exhausted, B::max_attempts, 0, "attempts-bound"},
            {11, 111500, throttle(), "default", plenty, 0.0, V::retry, B::none, 20000, "backoff"},
            // Retry-After: lengthens on 429 and 503, clamped by max_delay_ms; ignored elsewhere.
            {1, 0, throttle(3000), "default", plenty, 0.0, V::retry, B::none, 3000, "retry-after"},
            {1, 0, server(503, 3000), "default", plenty, 0.0, V::retry, B::none, 3000, "retry-after"},
            {1, 0, server(500, 3000), "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, server(502, 3000), "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, server(529, 3000), "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, Failure{C::network, true, T::none, 0, 3000}, "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, throttle(60000), "default", plenty, 0.0, V::retry, B::none, 20000, "retry-after"},
            {1, 0, server(503, 60000), "default", plenty, 0.0, V::retry, B::none, 20000, "retry-after"},
            {3, 1500, throttle(100), "default", plenty, 0.0, V::retry, B::none, 2000, "backoff"},
            {1, 0, throttle(0), "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, throttle(-5000), "default", plenty, 0.0, V::retry, B::none, 500, "backoff"},
            // Full jitter: floor(draw * (interval + 1)), pinned draws.
            {1, 0, server(), "full-jitter", plenty, 0.0, V::retry, B::none, 0, "backoff"},
            {1, 0, server(), "full-jitter", plenty, 0.5, V::retry, B::none, 250, "backoff"},
            {1, 0, server(), "full-jitter", plenty, 0.999, V::retry, B::none, 500, "backoff"},
            {4, 3500, server(), "full-jitter", plenty, 0.0, V::retry, B::none, 0, "backoff"},
            {4, 3500, server(), "full-jitter", plenty, 0.5, V::retry, B::none, 2000, "backoff"},
            {4, 3500, server(), "full-jitter", plenty, 0.999, V::retry, B::none, 3996, "backoff"},
            {9, 0, throttle(), "full-jitter", plenty, 0.25, V::retry, B::none, 5000, "backoff"},
            {1, 0, server(), "full-jitter", plenty, 1.0, V::retry, B::none, 500, "backoff"},
            {1, 0, server(), "full-jitter", plenty, -0.5, V::retry, B::none, 0, "backoff"},
            {1, 0, throttle(300), "full-jitter", plenty, 0.0, V::retry, B::none, 300, "retry-after"},
            {1, 0, throttle(300), "full-jitter", plenty, 0.999, V::retry, B::none, 500, "backoff"},
            // Summed waits: clamped to what is left, then exhausted.
            {2, 500, server(), "small-caps", plenty, 0.0, V::retry, B::none, 500, "summed-wait-clamp"},
            {3, 1000, server(), "small-caps", plenty, 0.0, V::exhausted, B::max_total_delay_ms, 0, "summed-wait-bound"},
            {3, 1200, server(), "small-caps", plenty, 0.0, V::exhausted, B::max_total_delay_ms, 0, "summed-wait-bound"},
            {1, 0, server(503, 5000), "small-caps", plenty, 0.0, V::retry, B::none, 1000, "summed-wait-clamp"},
            {2, 1000, throttle(), "small-caps", plenty, 0.0, V::retry, B::none, 500, "summed-wait-clamp"},
            {3, 1500, throttle(), "small-caps", plenty, 0.0, V::exhausted, B::throttled_max_total_delay_ms, 0, "summed-wait-bound"},
            // The general cap counts the 429s' waits too (one summed wait per turn).
            {2, 1000, server(), "small-caps", plenty, 0.0, V::exhausted, B::max_total_delay_ms, 0, "summed-wait-bound"},
            // The deadline before the wait: wait + min_attempt_ms must fit.
            {1, 0, server(), "default", 1500, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, server(), "default", 1499, 0.0, V::deadline, B::deadline, 0, "deadline-before-wait"},
            {1, 0, server(), "default", 0, 0.0, V::deadline, B::deadline, 0, "deadline-before-wait"},
            {1, 0, server(), "default", -20, 0.0, V::deadline, B::deadline, 0, "deadline-before-wait"},
            {1, 0, throttle(20000), "default", 21000, 0.0, V::retry, B::none, 20000, "retry-after"},
            {1, 0, throttle(20000), "default", 20999, 0.0, V::deadline, B::deadline, 0, "deadline-before-wait"},
            {1, 0, server(), "no-min-attempt", 500, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, server(), "no-min-attempt", 0, 0.0, V::deadline, B::deadline, 0, "deadline-before-wait"},
            {1, 0, server(), "full-jitter", 1000, 0.0, V::retry, B::none, 0, "backoff"},
            // An attempt cut by the turn deadline: deadline/deadline, whatever the bounds or endpoint.
            {1, 0, Failure{C::timeout, true, T::attempt_deadline, 0, std::nullopt}, "default", 0, 0.0, V::deadline, B::deadline, 0, "deadline-passed"},
            {8, 51500, Failure{C::timeout, true, T::attempt_deadline, 0, std::nullopt}, "default", 0, 0.0, V::deadline, B::deadline, 0, "deadline-passed"},
            {1, 0, Failure{C::timeout, false, T::attempt_deadline, 0, std::nullopt}, "default", -3, 0.0, V::deadline, B::deadline, 0, "deadline-passed"},
            // The stream-idle timer is no deadline cut: with time left an
            // ordinary retry, without it ended before the wait.
            {1, 0, Failure{C::timeout, true, T::stream_idle, 0, std::nullopt}, "default", 5000, 0.0, V::retry, B::none, 500, "backoff"},
            {1, 0, Failure{C::timeout, true, T::stream_idle, 0, std::nullopt}, "default", 0, 0.0, V::deadline, B::deadline, 0, "deadline-before-wait"},
            {8, 0, Failure{C::timeout, true, T::stream_idle, 0, std::nullopt}, "default", 0, 0.0, V::exhausted, B::max_attempts, 0, "attempts-bound"},
            // A provider timeout with no time left is judged by the bounds first.
            {8, 0, Failure{C::timeout, true, T::provider_timeout, 504, std::nullopt}, "default", 0, 0.0, V::exhausted, B::max_attempts, 0, "attempts-bound"},
            // Several would end the turn: the first in the order
            // max_attempts, max_total_delay_ms, throttled_max_attempts,
            // throttled_max_total_delay_ms, deadline is named.
            {8, 60000, server(), "default", 0, 0.0, V::exhausted, B::max_attempts, 0, "attempts-bound"},
            {3, 60000, server(), "default", 0, 0.0, V::exhausted, B::max_total_delay_ms, 0, "summed-wait-bound"},
            {24, 380000, throttle(), "default", 0, 0.0, V::exhausted, B::throttled_max_attempts, 0, "attempts-bound"},
            {5, 380000, throttle(), "default", 0, 0.0, V::exhausted, B::throttled_max_total_delay_ms, 0, "summed-wait-bound"},
            {5, 370000, throttle(), "default", 0, 0.0, V::deadline, B::deadline, 0, "deadline-before-wait"},
        }));
    CAPTURE(attempts, waited, failure.http_status, failure.retryable, cfg_name, left, draw);
    const Decision d = decide({attempts, waited}, failure, config(cfg_name), left, draw);
    CHECK(to_string(d.verdict) == to_string(verdict));
    CHECK(to_string(d.bound) == to_string(bound));
    CHECK(d.wait_ms == wait);
    CHECK(d.rule == rule);
}

TEST_CASE("again before each send: min_attempt_ms must be left", "[decision]") {
    auto [cfg_name, left, verdict, bound, rule] =
        GENERATE(table<std::string, std::int64_t, V, B, std::string>({
            {"default", plenty, V::retry, B::none, "send"},
            {"default", 1000, V::retry, B::none, "send"},
            {"default", 999, V::deadline, B::deadline, "deadline-before-send"},
            {"default", 0, V::deadline, B::deadline, "deadline-before-send"},
            {"default", -5, V::deadline, B::deadline, "deadline-before-send"},
            {"no-min-attempt", 1, V::retry, B::none, "send"},
            {"no-min-attempt", 0, V::deadline, B::deadline, "deadline-before-send"},
        }));
    CAPTURE(cfg_name, left);
    const Decision d = recheck_before_send(left, config(cfg_name));
    CHECK(d == Decision{verdict, bound, 0, rule});
}

TEST_CASE("turns simulated over the pure decision", "[decision]") {
    const RetryConfig defaults;
    const std::vector<std::int64_t> general{500, 1000, 2000, 4000, 8000, 16000, 20000};
    std::vector<std::int64_t> throttled = general;
    throttled.insert(throttled.end(), 16, 20000);

    SECTION("always 503: exactly 8 attempts, waits 500..20000 = 51500 ms") {
        const Turn t = run_turn([](int) { return server(503); }, defaults, plenty);
        CHECK(t.attempts == 8);
        CHECK(t.waits == general);
        CHECK(sum(t.waits) == 51500);
        CHECK(t.last == Decision{V::exhausted, B::max_attempts, 0, "attempts-bound"});
    }
    SECTION("always 429: exactly 24 attempts, 23 waits = 371500 ms") {
        const Turn t = run_turn([](int) { return throttle(); }, defaults, plenty);
        CHECK(t.attempts == 24);
        CHECK(t.waits.size() == 23);
        CHECK(t.waits == throttled);
        CHECK(sum(t.waits) == 371500);
        CHECK(t.last == Decision{V::exhausted, B::throttled_max_attempts, 0, "attempts-bound"});
    }
    SECTION("always 429 under the default 300000 ms deadline: the deadline ends it at 20") {
        const Turn t = run_turn([](int) { return throttle(); }, defaults, 300000);
        CHECK(t.attempts == 20);
        CHECK(sum(t.waits) == 291500);
        CHECK(t.last == Decision{V::deadline, B::deadline, 0, "deadline-before-wait"});
    }
    SECTION("ten 429s then a 503: exhausted max_attempts after attempt 11") {
        const Turn t = run_turn(
            [](int attempt) { return attempt <= 10 ? throttle() : server(503); }, defaults, plenty);
        CHECK(t.attempts == 11);
        CHECK(t.waits.size() == 10);
        CHECK(sum(t.waits) == 111500);
        CHECK(t.last == Decision{V::exhausted, B::max_attempts, 0, "attempts-bound"});
    }
    SECTION("a 503 after seven 429s: the 8th attempt ends the turn") {
        const Turn t = run_turn(
            [](int attempt) { return attempt <= 7 ? throttle() : server(503); }, defaults, plenty);
        CHECK(t.attempts == 8);
        CHECK(t.last.bound == B::max_attempts);
    }
    SECTION("small caps: waits 500 then 500 (clamped), exhausted max_total_delay_ms at 3") {
        const Turn t = run_turn([](int) { return server(500); }, config("small-caps"), plenty);
        CHECK(t.attempts == 3);
        CHECK(t.waits == std::vector<std::int64_t>{500, 500});
        CHECK(t.last == Decision{V::exhausted, B::max_total_delay_ms, 0, "summed-wait-bound"});
    }
    SECTION("Retry-After on every 503 lengthens each wait to 20000: the cap ends it at 4") {
        // 20000 * 3 = 60000 summed: attempt 4 finds nothing left.
        const Turn t = run_turn([](int) { return server(503, 45000); }, defaults, plenty);
        CHECK(t.waits == std::vector<std::int64_t>{20000, 20000, 20000});
        CHECK(t.attempts == 4);
        CHECK(t.last == Decision{V::exhausted, B::max_total_delay_ms, 0, "summed-wait-bound"});
    }
    SECTION("a 10 s deadline: waits 500 1000 2000 4000, then 8000 + 1000 does not fit") {
        const Turn t = run_turn([](int) { return server(502); }, defaults, 10000);
        CHECK(t.waits == std::vector<std::int64_t>{500, 1000, 2000, 4000});
        CHECK(t.attempts == 5);
        CHECK(t.last == Decision{V::deadline, B::deadline, 0, "deadline-before-wait"});
    }
    SECTION("the time the wait took leaves too little to send") {
        // Decided with 1600 ms left (500 + 1000 fits); the wait overran by 200 ms.
        const Decision before = decide({1, 0}, server(), defaults, 1600, 0.0);
        REQUIRE(before.verdict == V::retry);
        CHECK(recheck_before_send(1600 - before.wait_ms - 200, defaults) ==
              Decision{V::deadline, B::deadline, 0, "deadline-before-send"});
    }
}

TEST_CASE("failure_of carries a classification into the decision", "[decision]") {
    const Classification c{C::timeout, true, T::provider_timeout, "http-504"};
    const Failure f = failure_of(c, 504, 1500);
    CHECK(f.cls == C::timeout);
    CHECK(f.retryable);
    CHECK(f.timeout_source == T::provider_timeout);
    CHECK(f.http_status == 504);
    CHECK(f.retry_after_ms == std::optional<std::int64_t>{1500});
    CHECK(failure_of(c, 504).retry_after_ms == std::nullopt);
}

// Section 13: a fall-over is immediate (wait 0) but bounded as a replay is.
TEST_CASE("decide_fall_over: the attempts bound and the deadline, no wait", "[decision]") {
    const Failure not_replayed{C::content_filter, false, T::none, 400, std::nullopt};
    const Failure first_byte{C::timeout, true, T::first_byte, 0, std::nullopt};
    const Failure cut{C::timeout, true, T::attempt_deadline, 0, std::nullopt};
    auto [attempts, waited, failure, cfg_name, left, verdict, bound, rule] =
        GENERATE_COPY(table<int, std::int64_t, Failure, std::string, std::int64_t, V, B, std::string>({
            {1, 0, server(), "default", plenty, V::retry, B::none, "fallback"},
            {7, 0, server(), "default", plenty, V::retry, B::none, "fallback"},
            {1, 0, first_byte, "default", plenty, V::retry, B::none, "fallback"},
            // Whether section 5 replays the class is no matter: it goes elsewhere.
            {1, 0, not_replayed, "default", plenty, V::retry, B::none, "fallback"},
            // No wait comes first: the summed-wait bound has nothing to stop.
            {2, 60000, server(), "default", plenty, V::retry, B::none, "fallback"},
            {2, 380000, throttle(), "default", plenty, V::retry, B::none, "fallback"},
            // The deciding attempts bound: the throttled one for an HTTP 429.
            {8, 0, server(), "default", plenty, V::exhausted, B::max_attempts, "attempts-bound"},
            {8, 0, first_byte, "default", plenty, V::exhausted, B::max_attempts, "attempts-bound"},
            {8, 0, throttle(), "default", plenty, V::retry, B::none, "fallback"},
            {23, 0, throttle(), "default", plenty, V::retry, B::none, "fallback"},
            {24, 0, throttle(), "default", plenty, V::exhausted, B::throttled_max_attempts, "attempts-bound"},
            {10, 0, server(), "default", plenty, V::exhausted, B::max_attempts, "attempts-bound"},  // a 503 after 429s
            // A cut by the turn deadline ends the turn first.
            {1, 0, cut, "default", 0, V::deadline, B::deadline, "deadline-passed"},
            {8, 0, cut, "default", -4, V::deadline, B::deadline, "deadline-passed"},
            {1, 0, cut, "default", 5000, V::retry, B::none, "fallback"},
            // The check before the send: min_attempt_ms must be left.
            {1, 0, server(), "default", 1000, V::retry, B::none, "fallback"},
            {1, 0, server(), "default", 999, V::deadline, B::deadline, "deadline-before-send"},
            {1, 0, first_byte, "default", 0, V::deadline, B::deadline, "deadline-before-send"},
            {8, 0, server(), "default", 0, V::exhausted, B::max_attempts, "attempts-bound"},
            {1, 0, server(), "no-min-attempt", 1, V::retry, B::none, "fallback"},
            {1, 0, server(), "no-min-attempt", 0, V::deadline, B::deadline, "deadline-before-send"},
        }));
    CAPTURE(attempts, waited, to_string(failure.cls), failure.http_status, cfg_name, left);
    CHECK(decide_fall_over({attempts, waited}, failure, config(cfg_name), left) ==
          Decision{verdict, bound, 0, rule});
}
