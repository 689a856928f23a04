#include "policy/breaker.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using namespace modelproxy::policy;
using namespace std::chrono_literals;

namespace {

using C = ErrorClass;
using T = TimeoutSource;
using N = BreakerCount;
using Time = Breaker::Time;

const Time t0 = Time{} + 1000h;  // times below count from it
Time at(std::int64_t ms) { return t0 + std::chrono::milliseconds(ms); }

// Named configs for the tables: the defaults of docs/behaviour.md section 13,
// with the named change.
BreakerConfig config(const std::string& name) {
    BreakerConfig c;
    if (name == "consecutive-3") {
        c.consecutive_failures = 3;
        c.min_attempts = 100000;
    } else if (name == "consecutive-1") {
        c.consecutive_failures = 1;
    } else if (name == "ratio") {  // 10 counted attempts, half failed, in 10 s (slices of 500 ms)
        c.consecutive_failures = 1000;
        c.min_attempts = 10;
        c.failure_ratio = 0.5;
    } else if (name == "ratio-4") {
        c.consecutive_failures = 1000;
        c.min_attempts = 4;
    } else if (name == "ratio-0.3") {
        c.consecutive_failures = 1000;
        c.min_attempts = 10;
        c.failure_ratio = 0.3;
    } else if (name == "both-5") {
        c.consecutive_failures = 5;
        c.min_attempts = 5;
    } else if (name == "probes-2") {
        c.consecutive_failures = 1;
        c.probes = 2;
    } else if (name == "disabled") {
        c.enabled = false;
        c.consecutive_failures = 1;
    } else {
        REQUIRE(name == "default");
    }
    return c;
}

std::string text(const std::optional<BreakerTransition>& t) {
    if (!t) return "";
    return std::string(to_string(t->from)) + ">" + std::string(to_string(t->to)) + " " +
           std::string(to_string(t->reason)) + " " + std::to_string(t->open_ms);
}

std::string text(Admit a) {
    switch (a) {
        case Admit::pass: return "pass";
        case Admit::probe: return "probe";
        case Admit::held: return "held";
    }
    return "?";
}

// One event at `at_ms` and what it answers:
//   admit, forced          admit(now, forced): "pass" | "probe" | "held",
//                          then "; <transition>" when it moved
//   ok, fail, none         settle(pass, ...): the transition, "" for none
//   probe-ok, probe-fail, probe-none   settle(probe, ...): likewise
//   state, usable, half-open-at, inflight   the readings at `at_ms`
struct Step {
    std::int64_t at_ms;
    std::string op;
    std::string expect;
    std::optional<std::int64_t> retry_after = std::nullopt;
};

std::string run_step(Breaker& b, const Step& s) {
    const Time now = at(s.at_ms);
    if (s.op == "admit" || s.op == "forced") {
        std::optional<BreakerTransition> moved = BreakerTransition{};  // must be cleared
        const Admit a = b.admit(now, s.op == "forced", moved);
        return moved ? text(a) + "; " + text(moved) : text(a);
    }
    if (s.op == "state") return std::string(to_string(b.state(now)));
    if (s.op == "usable") return b.usable(now) ? "yes" : "no";
    if (s.op == "half-open-at") {
        return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(b.half_open_at(now) - t0).count());
    }
    if (s.op == "inflight") return std::to_string(b.probes_in_flight());
    const bool probe = s.op.rfind("probe-", 0) == 0;
    const std::string result = probe ? s.op.substr(6) : s.op;
    const N count = result == "ok" ? N::success : result == "fail" ? N::failure : N::none;
    REQUIRE((result == "ok" || result == "fail" || result == "none"));
    return text(b.settle(probe ? Admit::probe : Admit::pass, count, now, s.retry_after));
}

void run(const std::string& cfg, const std::vector<Step>& steps) {
    Breaker b(config(cfg));
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CAPTURE(i, steps[i].at_ms, steps[i].op);
        CHECK(run_step(b, steps[i]) == steps[i].expect);
    }
}

// `n` settles of `op` at `ms`, none of which moves it.
std::vector<Step> repeat(std::int64_t ms, int n, const std::string& op) {
    return std::vector<Step>(static_cast<std::size_t>(n), Step{ms, op, ""});
}

std::vector<Step> join(std::initializer_list<std::vector<Step>> parts) {
    std::vector<Step> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
}

}  // namespace

TEST_CASE("breaker states and reasons are spelled as in records", "[breaker]") {
    CHECK(to_string(BreakerState::closed) == "closed");
    CHECK(to_string(BreakerState::open) == "open");
    CHECK(to_string(BreakerState::half_open) == "half-open");
    CHECK(to_string(BreakerReason::consecutive) == "consecutive");
    CHECK(to_string(BreakerReason::ratio) == "ratio");
    CHECK(to_string(BreakerReason::probe_ok) == "probe-ok");
    CHECK(to_string(BreakerReason::probe_failed) == "probe-failed");
    CHECK(to_string(BreakerReason::timer) == "timer");
}

// One row per entry of section 13's attribution.
TEST_CASE("breaker_count: what an attempt's end counts as", "[breaker]") {
    auto [ok, failed, source, deadline_cut, client_left, expected] =
        GENERATE(table<bool, std::optional<C>, T, bool, bool, N>({
            // Counted successes: a 2xx answer.
            {true, std::nullopt, T::none, false, false, N::success},
            // Counted failures.
            {false, C::network, T::none, false, false, N::failure},
            {false, C::server, T::none, false, false, N::failure},
            {false, C::stream_incomplete, T::none, false, false, N::failure},
            {false, C::timeout, T::first_byte, false, false, N::failure},
            {false, C::timeout, T::stream_idle, false, false, N::failure},
            {false, C::timeout, T::provider_timeout, false, false, N::failure},
            // Not counted: the caller's or the proxy's side of things.
            {false, C::rate_limit, T::none, false, false, N::none},
            {false, C::authentication, T::none, false, false, N::none},
            {false, C::content_filter, T::none, false, false, N::none},
            {false, C::invalid_request, T::none, false, false, N::none},
            {false, C::not_found, T::none, false, false, N::none},
            {false, C::client, T::none, false, false, N::none},
            {false, C::identity, T::none, false, false, N::none},
            {false, C::credential, T::none, false, false, N::none},
            {false, C::cancelled, T::none, false, false, N::none},
            {false, C::timeout, T::first_token, false, false, N::none},
            {false, C::timeout, T::attempt_deadline, false, false, N::none},
            // A cut by the turn deadline, whatever it was doing.
            {false, C::timeout, T::attempt_deadline, true, false, N::none},
            {false, C::network, T::none, true, false, N::none},
            // The client left, whatever the provider did.
            {false, C::server, T::none, false, true, N::none},
            {false, C::timeout, T::stream_idle, false, true, N::none},
            {true, std::nullopt, T::none, false, true, N::none},
            // Neither a 2xx nor a failure: nothing.
            {false, std::nullopt, T::none, false, false, N::none},
        }));
    const std::string cls(failed ? to_string(*failed) : "none");
    CAPTURE(ok, cls, to_string(source), deadline_cut, client_left);
    CHECK(breaker_count({ok, failed, source, deadline_cut, client_left}) == expected);
}

TEST_CASE("closed -> open after consecutive_failures counted failures in a row", "[breaker]") {
    auto [name, cfg, steps] = GENERATE(table<std::string, std::string, std::vector<Step>>({
        {"three in a row", "consecutive-3",
         {{0, "fail", ""}, {1, "fail", ""}, {2, "fail", "closed>open consecutive 5000"},
          {3, "state", "open"}, {3, "admit", "held"}, {3, "usable", "no"}}},
        {"a success resets the run", "consecutive-3",
         {{0, "fail", ""}, {1, "fail", ""}, {2, "ok", ""}, {3, "fail", ""}, {4, "fail", ""},
          {5, "fail", "closed>open consecutive 5000"}}},
        {"an end that counts for nothing leaves the run", "consecutive-3",
         {{0, "fail", ""}, {1, "none", ""}, {2, "fail", ""}, {3, "none", ""},
          {4, "fail", "closed>open consecutive 5000"}}},
        {"closed admits every attempt", "consecutive-3",
         {{0, "admit", "pass"}, {0, "admit", "pass"}, {0, "usable", "yes"}, {0, "state", "closed"},
          {0, "half-open-at", "0"}}},
        {"both triggers met: consecutive is named", "both-5",
         join({repeat(0, 4, "fail"), {{0, "fail", "closed>open consecutive 5000"}}})},
    }));
    CAPTURE(name);
    run(cfg, steps);
}

TEST_CASE("closed -> open at failure_ratio over min_attempts in the window", "[breaker]") {
    auto [name, cfg, steps] = GENERATE(table<std::string, std::string, std::vector<Step>>({
        {"half of ten", "ratio",
         join({repeat(0, 5, "ok"), repeat(100, 4, "fail"), {{200, "fail", "closed>open ratio 5000"}}})},
        {"below the share: 4 of 10, 5 of 11, then 6 of 12", "ratio",
         join({repeat(0, 6, "ok"), repeat(100, 4, "fail"), {{200, "fail", ""}, {300, "fail", "closed>open ratio 5000"}}})},
        {"all failed but fewer than min_attempts", "ratio",
         join({repeat(0, 9, "fail"), {{0, "fail", "closed>open ratio 5000"}}})},
        {"a success never opens it", "ratio",
         join({repeat(0, 9, "fail"), repeat(0, 3, "ok"), {{0, "fail", "closed>open ratio 5000"}}})},
        {"3 of 10 is exactly 0.3", "ratio-0.3",
         join({repeat(0, 7, "ok"), repeat(0, 2, "fail"), {{0, "fail", "closed>open ratio 5000"}}})},
        // Slices of 500 ms: at 9999 ms the slice of 0 ms is still read.
        {"the oldest slice is still inside", "ratio",
         join({repeat(0, 5, "fail"), repeat(9500, 4, "ok"), {{9999, "fail", "closed>open ratio 5000"}}})},
        // At 10000 ms it has slid out: 4 ok + 1 failure, then 5 failures more
        // reach 10 attempts with 6 failed.
        {"the oldest slice slides out", "ratio",
         join({repeat(0, 5, "fail"), repeat(9500, 4, "ok"), repeat(10000, 5, "fail"),
               {{10000, "fail", "closed>open ratio 5000"}}})},
        {"a slice far behind is not read", "ratio",
         join({repeat(0, 5, "fail"), repeat(25000, 5, "ok"), repeat(25000, 4, "fail"),
               {{25000, "fail", "closed>open ratio 5000"}}})},
        // Clock readings that cross: the earlier time counts in the latest slice.
        {"a time before the last counted one", "ratio",
         join({repeat(20000, 5, "fail"), repeat(0, 4, "ok"), {{0, "fail", "closed>open ratio 5000"}}})},
        // After a close the window starts empty: 2 of 4 would open it again.
        {"a close empties the window", "ratio-4",
         {{0, "ok", ""}, {1, "fail", ""}, {2, "ok", ""}, {3, "fail", "closed>open ratio 5000"},
          {5003, "admit", "probe; open>half-open timer 5000"}, {5004, "probe-ok", "half-open>closed probe-ok 0"},
          {5005, "fail", ""}, {5006, "ok", ""}, {5007, "fail", ""}, {5008, "fail", "closed>open ratio 5000"}}},
    }));
    CAPTURE(name);
    run(cfg, steps);
}

TEST_CASE("open -> half-open when the open time has passed", "[breaker]") {
    auto [name, cfg, steps] = GENERATE(table<std::string, std::string, std::vector<Step>>({
        {"held until then, the timer transition at the admit", "consecutive-1",
         {{0, "fail", "closed>open consecutive 5000"}, {4999, "state", "open"}, {4999, "usable", "no"},
          {4999, "half-open-at", "5000"}, {4999, "admit", "held"}, {5000, "state", "half-open"},
          {5000, "usable", "yes"}, {5000, "half-open-at", "5000"},
          {5000, "admit", "probe; open>half-open timer 5000"}, {5000, "state", "half-open"}}},
        {"a late admit moves it once", "consecutive-1",
         {{0, "fail", "closed>open consecutive 5000"}, {60000, "admit", "probe; open>half-open timer 5000"},
          {60000, "forced", "pass"}}},
        // A settle past the open time makes the move; the attempt it settles
        // was admitted before the half-open began, so it counts for nothing.
        {"the timer transition at a settle", "consecutive-1",
         {{0, "fail", "closed>open consecutive 5000"}, {10, "forced", "pass"},
          {5000, "fail", "open>half-open timer 5000"}, {5001, "admit", "probe"}}},
        {"forced admission passes while open, its result ignored", "consecutive-1",
         {{0, "fail", "closed>open consecutive 5000"}, {1, "forced", "pass"}, {2, "fail", ""},
          {3, "ok", ""}, {4, "state", "open"}, {4, "half-open-at", "5000"}}},
    }));
    CAPTURE(name);
    run(cfg, steps);
}

TEST_CASE("half-open: probes, their results, and ordinary attempts", "[breaker]") {
    const std::vector<Step> opened = {{0, "fail", "closed>open consecutive 5000"},
                                      {5000, "admit", "probe; open>half-open timer 5000"}};
    auto [name, cfg, steps] = GENERATE_REF(table<std::string, std::string, std::vector<Step>>({
        {"exactly `probes` probes, the next held, forced passes", "probes-2",
         join({opened, {{5000, "admit", "probe"}, {5000, "inflight", "2"}, {5000, "usable", "no"},
                        {5000, "admit", "held"}, {5001, "forced", "pass"}, {5001, "inflight", "2"}}})},
        {"probe none frees its slot", "probes-2",
         join({opened, {{5000, "admit", "probe"}, {5001, "probe-none", ""}, {5001, "inflight", "1"},
                        {5001, "state", "half-open"}, {5001, "usable", "yes"}, {5002, "admit", "probe"},
                        {5002, "admit", "held"}}})},
        {"probe ok closes", "consecutive-1",
         join({opened, {{5000, "admit", "held"}, {5100, "probe-ok", "half-open>closed probe-ok 0"},
                        {5100, "state", "closed"}, {5100, "inflight", "0"}, {5101, "admit", "pass"}}})},
        {"probe failure re-opens with the doubled time", "consecutive-1",
         join({opened, {{5100, "probe-fail", "half-open>open probe-failed 10000"}, {5100, "state", "open"},
                        {5100, "half-open-at", "15100"}, {15099, "admit", "held"},
                        {15100, "admit", "probe; open>half-open timer 10000"}}})},
        {"ordinary results outside closed change nothing", "consecutive-1",
         join({opened, {{5000, "forced", "pass"}, {5001, "fail", ""}, {5002, "ok", ""}, {5003, "none", ""},
                        {5003, "state", "half-open"}, {5003, "inflight", "1"}}})},
        // The second probe's slot is held until its own result, which
        // changes nothing once the first closed the breaker.
        {"a late probe after the close", "probes-2",
         join({opened, {{5000, "admit", "probe"}, {5001, "probe-ok", "half-open>closed probe-ok 0"},
                        {5001, "inflight", "1"}, {5002, "probe-fail", ""}, {5002, "inflight", "0"},
                        {5002, "state", "closed"}}})},
        {"a late probe after a re-open", "probes-2",
         join({opened, {{5000, "admit", "probe"}, {5001, "probe-fail", "half-open>open probe-failed 10000"},
                        {5002, "probe-ok", ""}, {5002, "state", "open"}, {5002, "inflight", "0"}}})},
        {"the only probe ending for nothing: usable again", "consecutive-1",
         join({opened, {{5001, "probe-none", ""}, {5001, "state", "half-open"}, {5001, "inflight", "0"},
                        {5001, "usable", "yes"}, {5002, "admit", "probe"}}})},
    }));
    CAPTURE(name);
    run(cfg, steps);
}

// The n-th open without a close in between: open_ms * 2^(n-1), at least the
// Retry-After sent with the failure that opened it, at most max_open_ms.
TEST_CASE("open time: doubled per re-open, Retry-After floor, max_open_ms cap", "[breaker]") {
    auto [probe_failures, retry_after, expected] =
        GENERATE(table<int, std::optional<std::int64_t>, std::int64_t>({
            {0, std::nullopt, 5000},
            {1, std::nullopt, 10000},
            {2, std::nullopt, 20000},
            {3, std::nullopt, 20000},
            {10, std::nullopt, 20000},
            {40, std::nullopt, 20000},
            {0, 12000, 12000},
            {0, 3000, 5000},
            {0, 0, 5000},
            {0, -5, 5000},
            {0, 50000, 20000},
            {1, 15000, 15000},
            {1, 9000, 10000},
            {2, 19999, 20000},
            {3, 1000000, 20000},
        }));
    CAPTURE(probe_failures, retry_after);
    Breaker b(config("consecutive-1"));
    std::int64_t now = 0;
    std::optional<BreakerTransition> last =
        b.settle(Admit::pass, N::failure, at(now), probe_failures == 0 ? retry_after : std::nullopt);
    for (int i = 1; i <= probe_failures; ++i) {
        REQUIRE(last);
        now += last->open_ms;
        std::optional<BreakerTransition> moved;
        REQUIRE(b.admit(at(now), false, moved) == Admit::probe);
        REQUIRE(moved);
        last = b.settle(Admit::probe, N::failure, at(now),
                        i == probe_failures ? retry_after : std::nullopt);
    }
    REQUIRE(last);
    CHECK(last->to == BreakerState::open);
    CHECK(last->open_ms == expected);
    CHECK(b.half_open_at(at(now)) == at(now + expected));
}

TEST_CASE("probe ok resets the doubling", "[breaker]") {
    run("consecutive-1", {
        {0, "fail", "closed>open consecutive 5000"},
        {5000, "admit", "probe; open>half-open timer 5000"},
        {5000, "probe-fail", "half-open>open probe-failed 10000"},
        {15000, "admit", "probe; open>half-open timer 10000"},
        {15000, "probe-fail", "half-open>open probe-failed 20000"},
        {35000, "admit", "probe; open>half-open timer 20000"},
        {35000, "probe-fail", "half-open>open probe-failed 20000"},
        {55000, "admit", "probe; open>half-open timer 20000"},
        {55001, "probe-ok", "half-open>closed probe-ok 0"},
        {55002, "fail", "closed>open consecutive 5000"},
        {60002, "admit", "probe; open>half-open timer 5000"},
        {60003, "probe-fail", "half-open>open probe-failed 10000"},
    });
}

TEST_CASE("a Retry-After on the failure that opens it, read on each open", "[breaker]") {
    run("consecutive-1", {
        {0, "fail", "closed>open consecutive 12000", 12000},
        {11999, "admit", "held"},
        {12000, "admit", "probe; open>half-open timer 12000"},
        // The doubling counts opens, not the times they lasted: 10000, not 24000.
        {12000, "probe-fail", "half-open>open probe-failed 10000"},
    });
}

TEST_CASE("a disabled breaker always passes and never moves", "[breaker]") {
    run("disabled", join({
        repeat(0, 50, "fail"),
        {{0, "fail", "", 30000}, {1, "admit", "pass"}, {1, "forced", "pass"}, {1, "state", "closed"},
         {1, "usable", "yes"}, {1, "half-open-at", "1"}, {2, "probe-fail", ""}, {2, "probe-ok", ""},
         {2, "inflight", "0"}, {100000, "admit", "pass"}},
    }));
}
