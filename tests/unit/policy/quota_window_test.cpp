// A replica's own quota window (docs/behaviour.md section 15): 60 one-second
// buckets, reservations refused with the wait until they fit, settlements.
#include "policy/quota_window.hpp"

#include <catch2/catch.hpp>

using namespace modelproxy::policy;
using namespace std::chrono_literals;

namespace {
const QuotaWindow::Time t0 = QuotaWindow::Time{} + 1000000s;  // a whole second
}

TEST_CASE("quota window: requests up to the limit, then the wait until the oldest bucket leaves", "[quota]") {
    QuotaWindow w;
    const QuotaAsk ask{3, 0, 10};
    CHECK(w.reserve(ask, t0).reserved);
    CHECK(w.reserve(ask, t0 + 10s).reserved);
    CHECK(w.reserve(ask, t0 + 20s + 500ms).reserved);
    const QuotaAnswer refused = w.reserve(ask, t0 + 30s);
    CHECK_FALSE(refused.reserved);
    CHECK(refused.wait_ms == 31000);  // the bucket of t0 leaves at t0 + 61 s
    CHECK(w.requests(t0 + 30s) == 3);
    CHECK_FALSE(w.reserve(ask, t0 + 60s + 999ms).reserved);  // any 60 s span holds at most 3
    CHECK(w.reserve(ask, t0 + 61s).reserved);  // t0's bucket is out
    CHECK(w.requests(t0 + 61s) == 3);
}

TEST_CASE("quota window: tokens, capped at the limit, charged and given back by settlements", "[quota]") {
    QuotaWindow w;
    const QuotaAnswer a = w.reserve({0, 1000, 600}, t0);
    REQUIRE(a.reserved);
    CHECK(a.tokens == 600);
    CHECK_FALSE(w.reserve({0, 1000, 600}, t0 + 1s).reserved);
    w.settle(a.second, -400, t0 + 2s);  // the answer's usage was 200
    CHECK(w.tokens(t0 + 2s) == 200);
    CHECK(w.reserve({0, 1000, 600}, t0 + 2s).reserved);
    // An ask above the limit is charged the limit, and fits an empty window.
    QuotaWindow empty;
    const QuotaAnswer big = empty.reserve({0, 1000, 5000}, t0);
    REQUIRE(big.reserved);
    CHECK(big.tokens == 1000);
    // A settlement after the bucket left the window changes nothing.
    empty.settle(big.second, 500, t0 + 62s);
    CHECK(empty.tokens(t0 + 62s) == 0);
    // Never below 0.
    QuotaWindow w2;
    const QuotaAnswer r = w2.reserve({0, 1000, 100}, t0);
    w2.settle(r.second, -500, t0);
    CHECK(w2.tokens(t0) == 0);
}

TEST_CASE("quota window: no limits always reserve", "[quota]") {
    QuotaWindow w;
    for (int i = 0; i < 1000; ++i) REQUIRE(w.reserve({0, 0, 50}, t0 + std::chrono::milliseconds(i)).reserved);
    CHECK(w.requests(t0 + 1s) == 1000);
}

TEST_CASE("quota window: a reservation taken back frees its request and tokens", "[quota]") {
    QuotaWindow w;
    const QuotaAnswer a = w.reserve({1, 0, 100}, t0);
    REQUIRE(a.reserved);
    CHECK_FALSE(w.reserve({1, 0, 100}, t0).reserved);
    w.cancel(a.second, a.tokens, t0);
    CHECK(w.requests(t0) == 0);
    CHECK(w.tokens(t0) == 0);
    CHECK(w.reserve({1, 0, 100}, t0).reserved);
}
