// What one row of the outage simulation measured, computed from what was
// recorded (the turns, the requests each upstream read, the proxy's breaker
// records), and the report: the summary table with the targets of the
// "fallback and breaker" row, and a per-second account of each row.
// Pure: every time is passed in.
#pragma once

#include "outage/load.hpp"
#include "outage/proxy_run.hpp"
#include "outage/rows.hpp"
#include "outage/timeline.hpp"
#include "outage/upstream.hpp"

#include <optional>
#include <string>
#include <vector>

namespace modelproxy::outage {

struct RowData {
    RowKind kind = RowKind::v1;
    std::string not_started;            // non-empty: why the row did not run
    std::vector<std::string> notes;     // said under the table
    Timeline timeline;
    double scale = 1;
    double end_ms = 0;                  // when the observation ended (every turn done)
    std::vector<Turn> turns;
    std::vector<Served> primary, fallback;
    std::vector<BreakerEvent> breaker;  // every route's; the primary's are those of route "primary"
    std::optional<int> exit_code;       // the proxy's, after SIGTERM
};

struct RowMetrics {
    std::size_t offered = 0, ok = 0;
    double success_pct = 0;
    double outage_per_turn = 0;             // primary requests / turns due, over the whole outage
    double first_phase_per_turn = 0;        // the same over the outage's first phase (503)
    std::optional<double> open_at_ms;       // the primary's first breaker open during the outage
    std::optional<double> open_per_turn;    // primary requests / turns due, from that open to the recovery
    std::optional<double> open_rate;        // primary requests per second, same window
    std::optional<double> open_rate_limit;  // max(1 per scaled second, 5 % of the turns due), per second
    double p99_ms = 0;                      // every turn's latency, failed ones included
    std::optional<double> recovery_s;       // recovery to the primary's first 200; nullopt: never
    std::optional<int> most_probes;         // most primary requests in flight at once while its
                                            // breaker was open or half-open; nullopt: no breaker record
};

RowMetrics measure(const RowData& row);

// The p-quantile (0..1) of the turns' latencies; 0 without turns.
double latency_quantile(const std::vector<Turn>& turns, double q);

// The most intervals [arrive, end) open at once among the requests that
// arrived inside one of `windows` ([from, to) pairs); a request that never
// ended lasts to `end_ms`.
int most_in_flight(const std::vector<Served>& requests, const std::vector<std::pair<double, double>>& windows,
                   double end_ms);

// The spans in which route `route`'s breaker was open or half-open, by its
// records in order; the last one open runs to `end_ms`.
std::vector<std::pair<double, double>> breaker_windows(const std::vector<BreakerEvent>& events,
                                                       std::string_view route, double end_ms);

struct ReportContext {
    double scale = 1;
    double rate = 20;
    bool stream = true;
    double direct_p99_ms = 0;
};

// The markdown summary: one row per row run (or not started), PASS/FAIL
// beside each target of "fallback and breaker", and how each figure is
// taken. `all_pass` is set false when a target of that row failed.
std::string summary_table(const std::vector<RowData>& rows, const ReportContext& context, bool& all_pass);

// Per second of a row: phase, turns due and ok, requests to each upstream,
// the routes the answers named, the breaker's state; then the failures by cause.
std::string row_details(const RowData& row);

}  // namespace modelproxy::outage
