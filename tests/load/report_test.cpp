#include "load/report.hpp"

#include <catch2/catch.hpp>

using namespace modelproxy::load;

namespace {

Turn turn(double sent, double end, bool ok, unsigned status) { return Turn{sent, end, status, ok, "", 1, ok ? "" : "x"}; }

// A "budget+admission+pacing" row at scale 1 as section 14's proxy should
// run it against R = 100: one ok turn every 10 ms (200 ms each) until the
// outage; 4000 turns sent during it, each failed at once after one attempt,
// and 400 replays besides; no ok turn until 53 s, then one every 10 ms
// again; 20 upstream 429s in the last 10 s before the outage and 30 in the
// last 10 s of the run.
RowData pacing_row() {
    RowData row;
    row.kind = RowKind::pacing;
    row.end_ms = 90200;
    for (int sent = 0; sent < 29800; sent += 10) {
        row.turns.push_back(turn(sent, sent + 200, true, 200));
        row.attempts.push_back(Attempt{sent + 1.0, 200});
    }
    for (int k = 0; k < 4000; ++k) {
        const double sent = 30000 + 5.0 * k;
        row.turns.push_back(turn(sent, sent + 2, false, 503));
        row.attempts.push_back(Attempt{sent + 1, 503});
    }
    for (int j = 0; j < 400; ++j) row.attempts.push_back(Attempt{30000 + 50.0 * j, 503});
    for (int sent = 52800; sent < 90000; sent += 10) {
        row.turns.push_back(turn(sent, sent + 200, true, 200));
        row.attempts.push_back(Attempt{sent + 1.0, 200});
    }
    for (int j = 0; j < 20; ++j) row.attempts.push_back(Attempt{25000.0 + j, 429});
    for (int j = 0; j < 30; ++j) row.attempts.push_back(Attempt{85000.0 + j, 429});
    return row;
}

}  // namespace

TEST_CASE("go_duration writes Go's time.Duration syntax, rounded up to whole milliseconds", "[load]") {
    const std::vector<std::pair<double, std::string>> cases{
        {-5, "0s"},    {0, "0s"},        {0.2, "1ms"},       {37, "37ms"},           {999.5, "1s"},
        {1000, "1s"},  {1500, "1.5s"},   {2250, "2.25s"},    {59999, "59.999s"},     {360000, "6m0s"},
        {61001, "1m1.001s"},             {3600250, "1h0m0.25s"},
    };
    for (const auto& [ms, text] : cases) {
        CAPTURE(ms);
        CHECK(go_duration(ms) == text);
    }
}

TEST_CASE("the rate window admits its count per window and reports what is left and when the next opens",
          "[load]") {
    RateWindow w(10, 100);
    for (int i = 0; i < 10; ++i) {
        const auto s = w.take(200 + i);
        CHECK(s.admitted);
        CHECK(s.limit == 10);
        CHECK(s.remaining == 9 - i);
        CHECK(s.reset_ms == Approx(100 - i));
    }
    const auto refused = w.take(237.5);
    CHECK_FALSE(refused.admitted);
    CHECK(refused.remaining == 0);
    CHECK(refused.reset_ms == Approx(62.5));
    CHECK(go_duration(refused.reset_ms) == "63ms");
    CHECK(w.peek(299).remaining == 0);       // peeking counts nothing
    CHECK(w.peek(300).remaining == 10);      // the next window
    CHECK(w.take(300).remaining == 9);
    CHECK(w.take(-50).admitted);             // before t0: its own window
    CHECK(w.peek(-50).reset_ms == Approx(50));
}

TEST_CASE("the timeline scales as a whole", "[load]") {
    const Timeline tl;
    CHECK(tl.total() == 90000);
    CHECK_FALSE(tl.down(29999));
    CHECK(tl.down(30000));
    CHECK(tl.down(49999));
    CHECK_FALSE(tl.down(50000));
    const Timeline quick = Timeline::scaled(0.25);
    CHECK(quick.down_start() == 7500);
    CHECK(quick.down_end() == 12500);
    CHECK(quick.total() == 22500);
    CHECK(quick.settle_ms == 2500);
    CHECK(quick.tail_ms == 2500);
}

TEST_CASE("back_at finds the first of enough whole seconds in a row at the level", "[load]") {
    CHECK(back_at({0, 96, 96, 90, 95, 95, 100, 0}, 95, 3) == 4.0);
    CHECK(back_at({95, 95, 95}, 95, 3) == 0.0);
    CHECK_FALSE(back_at({95, 95, 0, 95, 95}, 95, 3));
    CHECK_FALSE(back_at({}, 1, 3));
    const std::vector<Turn> turns{turn(0, 999, true, 200), turn(0, 1000, true, 200), turn(0, 1500, false, 503),
                                  turn(0, 2999, true, 200), turn(0, 3000, true, 200)};
    // whole seconds from 0 before 3.5 s: the one ending at 3 s is in no whole second
    CHECK(goodput_per_second(turns, 0, 3500) == std::vector<std::size_t>{1, 1, 1});
}

TEST_CASE("measure takes each figure of a row over its own span", "[load]") {
    const RowMetrics m = measure(pacing_row());
    CHECK(m.sent == 2980 + 4000 + 3720);
    CHECK(m.ok == 2980 + 3700);                   // the 20 sent from 89.8 s end after the run
    CHECK(m.goodput == Approx(6680.0 / 90));
    CHECK(m.goodput_adapted == Approx(100));      // 2000 ended from 10 s to 30 s
    CHECK(m.upstream_429 == 50);
    CHECK(m.per_ok_429 == Approx(50.0 / 6680));
    CHECK(m.share_429_before == Approx(20.0 / 1000));
    CHECK(m.share_429_after == Approx(30.0 / 1030));
    CHECK(m.share_429 == Approx(50.0 / 2030));
    CHECK(m.outage_attempts == 4400);
    CHECK(m.outage_sent == 4000);
    CHECK(m.outage_per_turn == Approx(1.1));
    CHECK(m.p50_ms == Approx(200));
    REQUIRE(m.recovery_s);
    CHECK(*m.recovery_s == Approx(3));
}

TEST_CASE("the summary judges the pacing row against each target, and only that row", "[load]") {
    RowData v1 = pacing_row();
    v1.kind = RowKind::v1;
    for (int j = 0; j < 5000; ++j) v1.attempts.push_back(Attempt{20000 + j * 2.0, 429});
    RowData missing;
    missing.kind = RowKind::budget;
    missing.not_started = "modelproxy check refused it\n";
    const ReportContext context{.scale = 1, .rate = 100};

    bool all_pass = true;
    std::string table = summary_table({v1, missing, pacing_row()}, context, all_pass);
    CHECK(all_pass);
    CHECK(table.find("| budget | not started") != std::string::npos);
    CHECK(table.find("| budget+admission+pacing | 74.2 (6680 of 10700 turns ok) | 100.0 (100.0 % of R) PASS | "
                     "0.01 | 2.5 % (2.0 %, 2.9 %) PASS | 1.10 (4400 / 4000) PASS | 200 / 200 ms | 3 s PASS |") !=
          std::string::npos);
    CHECK(table.find("goodput, 10..30 s") != std::string::npos);
    CHECK(table.find("attempts, 20..30 s and 80..90 s") != std::string::npos);
    const auto v1_at = table.find("| v1 |");
    const auto v1_line = table.substr(v1_at, table.find('\n', v1_at) - v1_at);
    CHECK(v1_line.find("PASS") == std::string::npos);
    CHECK(v1_line.find("FAIL") == std::string::npos);
    CHECK(v1_line.find("71.8 % (83.7 %, 2.9 %)") != std::string::npos);  // 5050 of 7030; 5020 of 6000

    SECTION("too many 429s, too many replays, a late recovery and a short goodput fail") {
        RowData row = pacing_row();
        for (int j = 0; j < 1000; ++j) row.attempts.push_back(Attempt{21000 + j * 1.0, 429});
        for (int j = 0; j < 1000; ++j) row.attempts.push_back(Attempt{31000 + j * 1.0, 503});
        std::erase_if(row.turns, [](const Turn& t) { return t.due_ms >= 52800 && t.due_ms < 61800; });
        all_pass = true;
        table = summary_table({row}, ReportContext{.scale = 1, .rate = 200}, all_pass);
        CHECK_FALSE(all_pass);
        CHECK(table.find("100.0 (50.0 % of R) FAIL") != std::string::npos);
        CHECK(table.find("34.7 % (51.0 %, 2.9 %) FAIL") != std::string::npos);  // 1050 of 3030; 1020 of 2000
        CHECK(table.find("1.35 (5400 / 4000) FAIL") != std::string::npos);
        CHECK(table.find("| 12 s FAIL |") != std::string::npos);
    }
    SECTION("a goodput that never comes back fails as not within the run") {
        RowData row = pacing_row();
        std::erase_if(row.turns, [](const Turn& t) { return t.due_ms >= 50000; });
        all_pass = true;
        table = summary_table({row}, context, all_pass);
        CHECK_FALSE(all_pass);
        CHECK(table.find("not within the run FAIL") != std::string::npos);
    }
}
