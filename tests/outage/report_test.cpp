#include "outage/report.hpp"

#include <catch2/catch.hpp>

using namespace modelproxy::outage;

namespace {

Served request(double arrive, std::optional<double> end, unsigned status, Phase phase = Phase::healthy) {
    return Served{arrive, end, phase, status};
}

BreakerEvent event(double at, std::string route, std::string from, std::string to, std::string reason) {
    return BreakerEvent{at, std::move(route), "gpt-4o", std::move(from), std::move(to), std::move(reason), 1000};
}

// A "fallback and breaker" row at scale 1 as the section 13 proxy should
// run it: 20 turns/s for 60 s, three failed; the primary down from 15 s to
// 45 s; five failures open its breaker 300 ms in; a probe now and then; the
// probe 300 ms after the recovery closes it.
RowData breaker_row() {
    RowData row;
    row.kind = RowKind::breaker;
    row.end_ms = 61000;
    for (int i = 0; i < 1200; ++i) {
        Turn t;
        t.due_ms = i * 50.0;
        t.end_ms = t.due_ms + 10;
        t.ok = i != 400 && i != 401 && i != 402;
        t.status = t.ok ? 200 : 502;
        row.turns.push_back(t);
        const bool via_primary = t.due_ms < 15000 || t.due_ms >= 45350;
        if (via_primary) row.primary.push_back(request(t.due_ms + 1, t.due_ms + 2, 200));
    }
    for (int i = 0; i < 5; ++i) row.primary.push_back(request(15001 + 50 * i, 15002 + 50 * i, 503, Phase::unavailable));
    for (double at : {16300.0, 18300.0, 22300.0}) row.primary.push_back(request(at, at + 1, 503, Phase::unavailable));
    row.primary.push_back(request(30300, 31300, 0, Phase::silent));
    row.primary.push_back(request(40300, 40301, 0, Phase::reset));
    row.primary.push_back(request(45300, 45310, 200));
    std::sort(row.primary.begin(), row.primary.end(), [](auto& a, auto& b) { return a.arrive_ms < b.arrive_ms; });
    row.breaker = {event(15300, "primary", "closed", "open", "consecutive"),
                   event(16300, "primary", "open", "half-open", "timer"),
                   event(16301, "primary", "half-open", "open", "probe-failed"),
                   event(45299, "primary", "open", "half-open", "timer"),
                   event(45311, "primary", "half-open", "closed", "probe-ok")};
    return row;
}

}  // namespace

TEST_CASE("the timeline's phases are healthy, 503, silent, reset, healthy, and scale as a whole", "[outage]") {
    const Timeline tl;
    CHECK(tl.at(-1) == Phase::healthy);
    CHECK(tl.at(14999) == Phase::healthy);
    CHECK(tl.at(15000) == Phase::unavailable);
    CHECK(tl.at(25000) == Phase::silent);
    CHECK(tl.at(35000) == Phase::reset);
    CHECK(tl.at(45000) == Phase::healthy);
    CHECK(tl.total() == 60000);
    const Timeline quick = Timeline::scaled(0.25);
    CHECK(quick.down_start() == 3750);
    CHECK(quick.down_end() == 11250);
    CHECK(quick.total() == 15000);
}

TEST_CASE("most_in_flight counts overlaps among the requests that arrived inside the windows", "[outage]") {
    const std::vector<Served> requests{request(0, 10, 200), request(10, 20, 200),  // back to back: one at once
                                       request(100, 150, 0), request(120, std::nullopt, 0),
                                       request(300, 400, 0)};
    CHECK(most_in_flight(requests, {{0, 50}}, 1000) == 1);
    CHECK(most_in_flight(requests, {{0, 200}}, 1000) == 2);
    CHECK(most_in_flight(requests, {{110, 200}}, 1000) == 1);  // the one from 100 arrived outside
    CHECK(most_in_flight(requests, {{0, 50}, {100, 500}}, 1000) == 2);  // 120 never ended: it lasts to 1000
    CHECK(most_in_flight(requests, {}, 1000) == 0);
}

TEST_CASE("breaker_windows spans each time the route's breaker left closed until it closed again", "[outage]") {
    const std::vector<BreakerEvent> events{event(100, "primary", "closed", "open", "consecutive"),
                                           event(200, "fallback", "closed", "open", "consecutive"),
                                           event(300, "primary", "open", "half-open", "timer"),
                                           event(310, "primary", "half-open", "closed", "probe-ok"),
                                           event(500, "primary", "closed", "open", "ratio")};
    const auto windows = breaker_windows(events, "primary", 900);
    REQUIRE(windows.size() == 2);
    CHECK(windows[0] == std::pair<double, double>{100, 310});
    CHECK(windows[1] == std::pair<double, double>{500, 900});
    CHECK(breaker_windows(events, "fallback", 900) == std::vector<std::pair<double, double>>{{200, 900}});
    CHECK(breaker_windows(events, "other", 900).empty());
}

TEST_CASE("measure takes each figure of a breaker row over its own span", "[outage]") {
    const RowMetrics m = measure(breaker_row());
    CHECK(m.offered == 1200);
    CHECK(m.ok == 1197);
    CHECK(m.success_pct == Approx(99.75));
    CHECK(m.first_phase_per_turn == Approx(8.0 / 200));     // 5 failures and 3 probes, 200 turns due
    CHECK(m.outage_per_turn == Approx(10.0 / 600));
    REQUIRE(m.open_at_ms);
    CHECK(*m.open_at_ms == 15300);
    CHECK(*m.open_per_turn == Approx(5.0 / 594));            // the probes from 15.3 s to 45 s
    CHECK(*m.open_rate == Approx(5.0 / 29.7));
    CHECK(*m.open_rate_limit == Approx(1.0));                // max(1/s, 5 % of 20/s)
    REQUIRE(m.recovery_s);
    CHECK(*m.recovery_s == Approx(0.31));
    REQUIRE(m.most_probes);
    CHECK(*m.most_probes == 1);
    CHECK(m.p99_ms == Approx(10));
}

TEST_CASE("the summary judges the breaker row against each target, and only that row", "[outage]") {
    RowData v1;
    v1.kind = RowKind::v1;
    v1.end_ms = 1000;
    v1.turns = {Turn{0, 10, 200, true, "", 1, ""}};
    v1.primary = {request(1, 2, 200)};
    RowData missing;
    missing.kind = RowKind::fallback;
    missing.not_started = "modelproxy check refused it\n";
    ReportContext context{.scale = 1, .rate = 20, .stream = true, .direct_p99_ms = 4};

    bool all_pass = true;
    std::string table = summary_table({v1, missing, breaker_row()}, context, all_pass);
    CHECK(all_pass);
    CHECK(table.find("| v1 | 100.00 % (1/1) | ") != std::string::npos);
    CHECK(table.find("| fallback only | did not start") != std::string::npos);
    CHECK(table.find("99.75 % (1197/1200) PASS") != std::string::npos);
    CHECK(table.find("0.31 s PASS") != std::string::npos);
    CHECK(table.find("+6 ms (p99 10 ms)") != std::string::npos);
    CHECK(table.find("FAIL") == std::string::npos);
    const auto v1_at = table.find("| v1 |");
    const auto v1_line = table.substr(v1_at, table.find('\n', v1_at) - v1_at);
    CHECK(v1_line.find("PASS") == std::string::npos);

    SECTION("two probes at once, a late recovery and too many attempts fail") {
        RowData row = breaker_row();
        row.primary.push_back(request(30500, 30600, 0, Phase::silent));  // while the silent probe from 30.3 s waits
        for (auto& r : row.primary)
            if (r.arrive_ms == 45300) r.arrive_ms = 51500, r.end_ms = 51510;  // 6.51 s after the recovery
        for (int i = 0; i < 300; ++i) row.primary.push_back(request(15400 + i, 15400.5 + i, 503, Phase::unavailable));
        all_pass = true;
        table = summary_table({row}, context, all_pass);
        CHECK_FALSE(all_pass);
        CHECK(table.find(" 2 FAIL |") != std::string::npos);
        CHECK(table.find("6.51 s FAIL") != std::string::npos);
        CHECK(table.find("| 1.54 FAIL |") != std::string::npos);  // (5 + 300 + 3 probes) / 200 turns
        // 300 + 5 probes + the second probe, per 594 turns due from 15.3 s to 45 s
        CHECK(table.find("0.515 (10.30/s, from 0.30 s into the outage) FAIL") != std::string::npos);
    }
    SECTION("without breaker records the breaker row's probe and open figures fail as n/a") {
        RowData row = breaker_row();
        row.breaker.clear();
        all_pass = true;
        table = summary_table({row}, context, all_pass);
        CHECK_FALSE(all_pass);
        CHECK(table.find("n/a FAIL") != std::string::npos);
    }
}
