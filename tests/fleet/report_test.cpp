#include "fleet/callers.hpp"
#include "fleet/minute_window.hpp"
#include "fleet/report.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace modelproxy::fleet;

namespace {

Turn turn(double sent, double end, bool ok, unsigned status, std::string error = "") {
    return Turn{sent, end, status, ok, "", 1, ok ? "" : error};
}

// A request the provider read `ms` after t0, t0 being 0.25 s into a wall-clock second.
Attempt attempt(double ms, unsigned status, std::int64_t tokens) {
    return Attempt{ms, status, tokens, 1'700'000'000 + static_cast<std::int64_t>(std::floor((ms + 250) / 1000))};
}

// A shared row at scale 1 as section 15's fleet should run it against Q =
// 6000/min: the provider reads one request every 10 ms for the whole run
// (12000, each a 200 billing 70 tokens), and 50 more from 30 s answered
// 429; one ok turn per 200, each 100 ms long; 20 turns failed with the
// proxy's quota_timeout inside the outage window (from 60 s) and 5 outside
// it (at 10 s).
RowData shared_row() {
    RowData row;
    row.kind = RowKind::shared;
    row.end_ms = 120100;
    for (int k = 0; k < 12000; ++k) {
        row.attempts.push_back(attempt(10.0 * k, 200, 70));
        row.turns.push_back(turn(10.0 * k, 10.0 * k + 100, true, 200));
    }
    for (int j = 0; j < 50; ++j) row.attempts.push_back(attempt(30000.0 + j, 429, 0));
    for (int j = 0; j < 20; ++j)
        row.turns.push_back(turn(59000 + j, 60000 + j, false, 429, "status 429 rejected/queue_timeout_ms code quota_timeout"));
    for (int j = 0; j < 5; ++j) row.turns.push_back(turn(5000 + j, 10000 + j, false, 429, "status 429 code quota_timeout"));
    return row;
}

RowData killed_row() {
    RowData row = shared_row();
    row.kind = RowKind::killed;
    row.redis_killed_ms = 50010;
    row.redis_back_ms = 70020;
    return row;
}

std::string line_of(const std::string& table, const std::string& start) {
    const auto at = table.find(start);
    if (at == std::string::npos) return "";
    return table.substr(at, table.find('\n', at) - at);
}

}  // namespace

TEST_CASE("the provider's minute window admits Q in the current second and the 59 before it", "[fleet]") {
    MinuteWindow w(3);
    const double base = 1'700'000'000'000.0;  // a wall-clock second's start, in ms
    auto s = w.take(base + 100);
    CHECK(s.admitted);
    CHECK(s.limit == 3);
    CHECK(s.remaining == 2);
    CHECK(s.reset_ms == Approx(59900));  // its bucket leaves at base + 60 s
    CHECK(w.take(base + 30000).admitted);
    CHECK(w.take(base + 59999).remaining == 0);
    s = w.take(base + 59999.5);
    CHECK_FALSE(s.admitted);
    CHECK(s.remaining == 0);
    CHECK(s.reset_ms == Approx(0.5));
    CHECK(w.peek(base + 59999.5).remaining == 0);  // peeking counts nothing
    // At base + 60 s the first second's bucket leaves: one request of room.
    s = w.take(base + 60000);
    CHECK(s.admitted);
    CHECK(s.remaining == 0);
    CHECK(s.reset_ms == Approx(30000));  // then the bucket of base + 30 s is the oldest
    CHECK_FALSE(w.take(base + 60500).admitted);
    // A minute after the last request the window is empty again.
    CHECK(w.peek(base + 180000).remaining == 3);
    CHECK(w.peek(base + 180000).reset_ms == 0);
}

TEST_CASE("worst_window finds the largest sum inside any span", "[fleet]") {
    struct Case {
        std::vector<std::pair<double, std::int64_t>> points;
        double span;
        std::int64_t worst;
    };
    const std::vector<Case> cases{
        {{}, 60000, 0},
        {{{0, 1}}, 60000, 1},
        {{{0, 1}, {59999, 1}, {60000, 1}}, 60000, 2},  // [t, t + span): 0 and 60000 are never together
        {{{60000, 1}, {0, 1}, {59999, 1}}, 60000, 2},  // unsorted
        {{{0, 5}, {100, 70}, {60050, 70}, {60200, 1}}, 60000, 140},
        {{{0, 1}, {1, 1}, {2, 1}, {10, 1}, {11, 1}}, 10, 3},
    };
    for (const auto& c : cases) {
        CAPTURE(c.points.size(), c.span);
        CHECK(worst_window(c.points, c.span) == c.worst);
    }
}

TEST_CASE("worst_buckets counts as the provider's quota does, in whole seconds", "[fleet]") {
    CHECK(worst_buckets({}, 60) == 0);
    CHECK(worst_buckets({5}, 60) == 1);
    CHECK(worst_buckets({0, 59, 59, 60}, 60) == 3);  // 0..59, and 1..60 holds 59, 59, 60
    CHECK(worst_buckets({60, 0, 0, 0, 59}, 60) == 4);
    CHECK(worst_buckets({0, 1, 2, 3}, 2) == 2);
    // A second's burst at each end of an exact minute: 60 s sliding sees
    // both, the buckets never do.
    std::vector<std::pair<double, std::int64_t>> exact;
    std::vector<std::int64_t> seconds;
    for (const double ms : {999.0, 999.5, 60500.0, 60600.0}) {
        exact.emplace_back(ms, 1);
        seconds.push_back(static_cast<std::int64_t>(ms / 1000));
    }
    CHECK(worst_window(exact, 60000) == 4);
    CHECK(worst_buckets(seconds, 60) == 2);
}

TEST_CASE("the timeline scales the run and the outage's length, not its start", "[fleet]") {
    const Timeline full;
    CHECK(full.run_ms == 120000);
    CHECK(full.minutes_ms() == 120000);
    CHECK(full.window_start() == 50000);
    CHECK(full.window_end() == 75000);
    const Timeline quick = Timeline::scaled(0.75);
    CHECK(quick.run_ms == 90000);
    CHECK(quick.minutes_ms() == 60000);
    CHECK(quick.redis_down_start() == 50000);
    CHECK(quick.redis_down_end() == 65000);
    CHECK(quick.window_end() == 70000);
    CHECK(Timeline::scaled(0.5).redis_down_end() == Timeline::scaled(0.5).run_ms);
}

TEST_CASE("a failed turn is Redis's when it is a 5xx or names Redis or the fleet", "[fleet]") {
    struct Case {
        Turn t;
        bool redis;
    };
    const std::vector<Case> cases{
        {turn(0, 1, true, 200), false},
        {turn(0, 1, false, 429, "status 429 rejected/queue_timeout_ms code quota_timeout"), false},
        {turn(0, 1, false, 429, "status 429 exhausted code rate_limit_exceeded"), false},
        {turn(0, 1, false, 503, "status 503 rejected"), true},
        {turn(0, 1, false, 500, "status 500"), true},
        {turn(0, 1, false, 429, "status 429 code fleet_unavailable"), true},
        {turn(0, 1, false, 400, "status 400 code Redis_down"), true},
        {turn(0, 1, false, 0, "timeout"), false},
    };
    for (const auto& c : cases) {
        CAPTURE(c.t.status, c.t.error);
        CHECK(made_for_redis(c.t) == c.redis);
    }
}

TEST_CASE("error_code reads the error body's code", "[fleet]") {
    CHECK(error_code(R"({"error":{"message":"x","type":"rate_limit_error","code":"quota_timeout"}})") == "quota_timeout");
    CHECK(error_code(R"({"error":{"code" : "admission_timeout"}})") == "admission_timeout");
    CHECK(error_code(R"({"error":{"code":null}})").empty());
    CHECK(error_code("not json").empty());
}

TEST_CASE("measure takes each figure of a row over its own span", "[fleet]") {
    const ReportContext context;
    const RowData row = shared_row();
    const RowMetrics m = measure(row, context, outage_window(row));
    CHECK(outage_window(row) == std::pair<double, double>{50000, 75000});
    CHECK(m.received == 12050);
    CHECK(m.received_429 == 50);
    CHECK(m.worst_minute == 6050);  // 6000 in any minute, and the 429s at 30 s
    CHECK(m.worst_minute_share == Approx(6050.0 / 6000));
    CHECK(m.worst_buckets == 6050);
    CHECK(m.worst_buckets_share == Approx(6050.0 / 6000));
    CHECK(m.mean_minute_share == Approx(12050.0 / 2 / 6000));
    CHECK(m.share_429 == Approx(50.0 / 12050));
    CHECK(m.sent == 12025);
    CHECK(m.ok == 11990);  // the last 10 end after the run
    CHECK(m.per_ok_429 == Approx(50.0 / 11990));
    CHECK(m.goodput_share == Approx(11990.0 / 2 / 6000));
    CHECK(m.worst_minute_tokens == 6000 * 70);
    CHECK(m.tokens_share == Approx(420000.0 / 1200000));
    CHECK(m.window_failed == 20);
    CHECK(m.window_for_redis == 0);
    const RowData killed = killed_row();
    CHECK(outage_window(killed) == std::pair<double, double>{50010, 75020});
}

TEST_CASE("the summary judges the shared rows against each target, and not the per-replica row", "[fleet]") {
    const ReportContext context;
    RowData per_replica = shared_row();
    per_replica.kind = RowKind::per_replica;
    for (int j = 0; j < 5000; ++j) per_replica.attempts.push_back(attempt(20000 + j * 2.0, 429, 0));
    RowData missing;
    missing.kind = RowKind::shared;
    missing.not_started = "modelproxy check refused it\n";

    bool all_pass = true;
    std::string table = summary_table({per_replica, shared_row(), killed_row()}, context, all_pass);
    CHECK(all_pass);
    CHECK(table.find("failed turns ended 50..75 s (for Redis)") != std::string::npos);
    CHECK(line_of(table, "| shared |") ==
          "| shared | 6050 (100.8 %) PASS | 6050 (100.8 %) | 100.4 % | 0.00 (0.4 %) PASS | 99.9 % (11990 of 12025 turns ok) PASS | "
          "420000 (35.0 %) | 20 (0) |");
    CHECK(line_of(table, "| shared, Redis killed 20 s |") ==
          "| shared, Redis killed 20 s | 6050 (100.8 %) PASS | 6050 (100.8 %) | 100.4 % | 0.00 (0.4 %) PASS | 99.9 % (11990 of 12025 "
          "turns ok) PASS | 420000 (35.0 %) | 20 (0) PASS |");
    const std::string per = line_of(table, "| per replica |");
    CHECK(per.find("PASS") == std::string::npos);
    CHECK(per.find("FAIL") == std::string::npos);
    CHECK(per.find("| 11050 (184.2 %) |") != std::string::npos);  // 6050 + 5000 in the minute from 20 s

    SECTION("a row that did not start is said so and judges nothing") {
        all_pass = true;
        table = summary_table({missing}, context, all_pass);
        CHECK(all_pass);
        CHECK(table.find("| shared | not started") != std::string::npos);
        CHECK(table.find("failed turns ended 50..75 s") != std::string::npos);  // the timeline's window
    }
    SECTION("too many requests, too many 429s and too little goodput fail") {
        RowData row = shared_row();
        for (int j = 0; j < 150; ++j) row.attempts.push_back(attempt(40000.0 + j, 429, 0));
        std::erase_if(row.turns, [](const Turn& t) { return t.ok && t.due_ms >= 100000; });
        all_pass = true;
        table = summary_table({row}, context, all_pass);
        CHECK_FALSE(all_pass);
        CHECK(table.find("6200 (103.3 %) FAIL") != std::string::npos);
        CHECK(table.find("0.02 (1.6 %) FAIL") != std::string::npos);  // 200 of 12200; 200 per 10000 ok
        CHECK(table.find("83.3 % (10000 of 10025 turns ok) FAIL") != std::string::npos);
    }
    SECTION("the killed row fails on a turn failed for Redis, or on more failures than the shared row") {
        RowData killed = killed_row();
        killed.turns.push_back(turn(64000, 65000, false, 503, "status 503 rejected"));
        all_pass = true;
        table = summary_table({shared_row(), killed}, context, all_pass);
        CHECK_FALSE(all_pass);
        CHECK(line_of(table, "| shared, Redis killed").ends_with("| 21 (1) FAIL |"));

        killed = killed_row();
        killed.turns.push_back(turn(74000, 75010, false, 429, "status 429 code quota_timeout"));
        all_pass = true;
        table = summary_table({shared_row(), killed}, context, all_pass);
        CHECK_FALSE(all_pass);
        CHECK(line_of(table, "| shared, Redis killed").ends_with("| 21 (0) FAIL |"));
        CHECK(table.find("failed turns ended 50..75 s") != std::string::npos);  // rounded to tenths: 50.01 s

        all_pass = true;  // without the shared row, only the failures for Redis are judged
        table = summary_table({killed}, context, all_pass);
        CHECK(all_pass);
    }
}
