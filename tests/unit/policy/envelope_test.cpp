#include "policy/envelope.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace modelproxy::policy;

namespace {

using B = Bound;
using W = WarningKind;
using Lines = std::vector<std::string>;

RetryConfig config(const std::string& name) {
    RetryConfig c;
    if (name == "small-cap") {
        c.max_total_delay_ms = 1000;
    } else if (name == "full-jitter") {
        c.jitter = Jitter::full;
    } else if (name == "throttled-fits") {
        c.throttled_max_attempts = 8;
        c.throttled_max_total_delay_ms = 60000;
    } else if (name == "one-attempt") {
        c.max_attempts = 1;
        c.throttled_max_attempts = 1;
        c.throttled_max_total_delay_ms = 1000;
    } else {
        REQUIRE(name == "default");
    }
    return c;
}

Lines warning_lines(const Envelope& e) {
    Lines out;
    for (const auto& w : e.warnings) out.push_back(render_warning(e, w));
    return out;
}

}  // namespace

TEST_CASE("doctor envelope for the defaults", "[envelope]") {
    const Envelope e = make_envelope("openai", RetryConfig{}, 300000);

    CHECK(e.route == "openai");
    CHECK(e.general.attempts_bound == B::max_attempts);
    CHECK(e.general.max_attempts == 8);
    CHECK(e.general.waits_ms == std::vector<std::int64_t>{500, 1000, 2000, 4000, 8000, 16000, 20000});
    CHECK(e.general.sum_ms == 51500);
    CHECK(e.general.unclamped_sum_ms == 51500);
    CHECK_FALSE(e.general.clamped());
    CHECK(e.general.cap_bound == B::max_total_delay_ms);
    CHECK(e.general.cap_ms == 60000);
    CHECK(e.general.attempts == 8);
    CHECK(e.general.ends_with == B::max_attempts);
    CHECK(e.general.attempts_under_deadline == 8);
    CHECK(e.general.ends_with_under_deadline == B::max_attempts);

    std::vector<std::int64_t> throttled{500, 1000, 2000, 4000, 8000, 16000};
    throttled.insert(throttled.end(), 17, 20000);
    CHECK(e.throttled.attempts_bound == B::throttled_max_attempts);
    CHECK(e.throttled.max_attempts == 24);
    CHECK(e.throttled.waits_ms == throttled);
    CHECK(e.throttled.waits_ms.size() == 23);
    CHECK(e.throttled.sum_ms == 371500);
    CHECK(e.throttled.cap_ms == 380000);
    CHECK(e.throttled.attempts == 24);
    CHECK(e.throttled.ends_with == B::throttled_max_attempts);
    CHECK(e.throttled.attempts_under_deadline == 20);
    CHECK(e.throttled.ends_with_under_deadline == B::deadline);

    CHECK(e.worst_case_ms == 300000);
    CHECK(e.warnings == std::vector<EnvelopeWarning>{
                            {W::bound_unreachable_under_deadline, B::throttled_max_attempts, B::deadline, 20, 0},
                            {W::cap_unreachable_under_deadline, B::throttled_max_total_delay_ms, B::deadline, 0, 299000},
                        });

    CHECK(render_envelope(e) == Lines{
        "route openai: timeout_ms 300000, min_attempt_ms 1000, jitter none",
        "  general: 8 attempts, waits 500 1000 2000 4000 8000 16000 20000 = 51500 ms (cap 60000)",
        "  throttled: 24 attempts, waits 500 1000 2000 4000 8000 16000 20000x17 = 371500 ms (cap 380000)",
        "  under the deadline, instant failures make 8 attempts (general, max_attempts), 20 attempts (throttled, deadline)",
        "  worst case one turn: 300000 ms before anything is published (timeout_ms)",
    });
    CHECK(warning_lines(e) == Lines{
        "warning: route openai: throttled_max_attempts 24 can never be reached: timeout_ms 300000 ends a turn of instant 429s after 20 attempts",
        "warning: route openai: throttled_max_total_delay_ms 380000 can never be reached: under timeout_ms 300000 the waits of one turn sum to at most 299000 ms (min_attempt_ms 1000)",
    });
}

TEST_CASE("a summed wait above its cap is clamped, and doctor says so", "[envelope]") {
    const Envelope e = make_envelope("small", config("small-cap"), 300000);
    CHECK(e.general.waits_ms == std::vector<std::int64_t>{500, 500});
    CHECK(e.general.sum_ms == 1000);
    CHECK(e.general.unclamped_sum_ms == 51500);
    CHECK(e.general.clamped());
    CHECK(e.general.attempts == 3);
    CHECK(e.general.ends_with == B::max_total_delay_ms);
    CHECK(render_envelope(e)[1] ==
          "  general: 8 attempts, waits 500 500 = 1000 ms (cap 1000, clamped from 51500 ms: "
          "the turn ends exhausted max_total_delay_ms after 3 attempts)");
    CHECK(warning_lines(e)[0] ==
          "warning: route small: max_attempts 8 can never be reached: max_total_delay_ms 1000 "
          "ends a turn of server failures after 3 attempts");
}

TEST_CASE("warnings where a bound can never be reached", "[envelope]") {
    // config, timeout_ms -> warnings, in order (general first)
    auto [name, timeout, expected] =
        GENERATE(table<std::string, std::int64_t, std::vector<EnvelopeWarning>>({
            {"default", 300000, {
                {W::bound_unreachable_under_deadline, B::throttled_max_attempts, B::deadline, 20, 0},
                {W::cap_unreachable_under_deadline, B::throttled_max_total_delay_ms, B::deadline, 0, 299000}}},
            {"default", 400000, {}},      // 371500 + 1000 fits; 380000 <= 399000
            {"default", 381000, {}},
            {"default", 380999, {
                {W::cap_unreachable_under_deadline, B::throttled_max_total_delay_ms, B::deadline, 0, 379999}}},
            {"default", 10000, {
                {W::bound_unreachable_under_deadline, B::max_attempts, B::deadline, 5, 0},
                {W::cap_unreachable_under_deadline, B::max_total_delay_ms, B::deadline, 0, 9000},
                {W::bound_unreachable_under_deadline, B::throttled_max_attempts, B::deadline, 5, 0},
                {W::cap_unreachable_under_deadline, B::throttled_max_total_delay_ms, B::deadline, 0, 9000}}},
            {"small-cap", 300000, {
                {W::attempts_unreachable_under_cap, B::max_attempts, B::max_total_delay_ms, 3, 0},
                {W::bound_unreachable_under_deadline, B::throttled_max_attempts, B::deadline, 20, 0},
                {W::cap_unreachable_under_deadline, B::throttled_max_total_delay_ms, B::deadline, 0, 299000}}},
            // Small cap and a deadline that ends the turn before the cap: the cap is named once.
            {"small-cap", 1400, {
                {W::attempts_unreachable_under_cap, B::max_attempts, B::max_total_delay_ms, 3, 0},
                {W::bound_unreachable_under_deadline, B::max_total_delay_ms, B::deadline, 1, 0},
                {W::bound_unreachable_under_deadline, B::throttled_max_attempts, B::deadline, 1, 0},
                {W::cap_unreachable_under_deadline, B::throttled_max_total_delay_ms, B::deadline, 0, 400}}},
            // Jitter full: a wait may be 0, so only the deadline's hold on a cap is certain.
            {"full-jitter", 300000, {
                {W::cap_unreachable_under_deadline, B::throttled_max_total_delay_ms, B::deadline, 0, 299000}}},
            {"throttled-fits", 300000, {}},
            {"one-attempt", 300000, {}},
        }));
    CAPTURE(name, timeout);
    const Envelope e = make_envelope("r", config(name), timeout);
    CHECK(e.warnings == expected);
    for (const auto& line : warning_lines(e)) {
        CAPTURE(line);
        CHECK(line.rfind("warning: route r: ", 0) == 0);
        CHECK(line.find(" can never be reached: ") != std::string::npos);
    }
}

TEST_CASE("jitter full shows the upper bounds of the waits", "[envelope]") {
    const Envelope e = make_envelope("j", config("full-jitter"), 300000);
    CHECK(e.general.waits_ms == std::vector<std::int64_t>{500, 1000, 2000, 4000, 8000, 16000, 20000});
    CHECK(render_envelope(e)[0] ==
          "route j: timeout_ms 300000, min_attempt_ms 1000, jitter full (each wait uniform in 0..the wait shown)");
}

TEST_CASE("one attempt: no waits", "[envelope]") {
    const Envelope e = make_envelope("o", config("one-attempt"), 300000);
    CHECK(e.general.waits_ms.empty());
    CHECK(e.general.attempts == 1);
    CHECK(e.general.ends_with == B::max_attempts);
    CHECK(e.throttled.ends_with == B::throttled_max_attempts);
    CHECK(e.worst_case_ms == 300000);
    CHECK(render_envelope(e)[1] == "  general: 1 attempt, waits none = 0 ms (cap 60000)");
}

TEST_CASE("a deadline shorter than the first wait: the cap is reported once", "[envelope]") {
    const Envelope e = make_envelope("tight", config("small-cap"), 1400);
    CHECK(warning_lines(e) == Lines{
        "warning: route tight: max_attempts 8 can never be reached: max_total_delay_ms 1000 ends a turn of server failures after 3 attempts",
        "warning: route tight: max_total_delay_ms 1000 can never be reached: timeout_ms 1400 ends a turn of instant server failures after 1 attempt",
        "warning: route tight: throttled_max_attempts 24 can never be reached: timeout_ms 1400 ends a turn of instant 429s after 1 attempt",
        "warning: route tight: throttled_max_total_delay_ms 380000 can never be reached: under timeout_ms 1400 the waits of one turn sum to at most 400 ms (min_attempt_ms 1000)",
    });
    CHECK(render_envelope(e)[3] ==
          "  under the deadline, instant failures make 1 attempt (general, deadline), 1 attempt (throttled, deadline)");
    CHECK(e.worst_case_ms == 1400);
}
