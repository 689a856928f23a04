// What one row of the load simulation measured, computed from what was
// recorded (the callers' turns and the requests the fake provider read), and
// the report: the summary table with the targets of the
// "budget+admission+pacing" row (docs/behaviour.md section 14), and a
// per-second account of each row. Pure: every time is passed in.
#pragma once

#include "load/callers.hpp"
#include "load/provider.hpp"
#include "load/rows.hpp"
#include "load/timeline.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::load {

struct RowData {
    RowKind kind = RowKind::v1;
    std::string not_started;          // non-empty: why the row did not run
    std::vector<std::string> notes;   // said under the table
    Timeline timeline;
    double end_ms = 0;                // when the observation ended (every turn done)
    std::vector<Turn> turns;
    std::vector<Attempt> attempts;    // what the fake provider read
    std::optional<int> exit_code;     // the proxy's, after SIGTERM
};

// Every figure is taken over [0, total) of the timeline unless it says
// otherwise; a turn counts as sent when it was sent and as done when it ended.
struct RowMetrics {
    std::size_t sent = 0, ok = 0;          // turns sent; ok turns done
    double goodput = 0;                    // ok turns done per second
    double goodput_adapted = 0;            // the same over [settle_ms, down_start)
    std::size_t upstream_429 = 0;
    double per_ok_429 = 0;                 // upstream 429s per ok turn
    double share_429 = 0;                  // of the attempts that arrived in the two tails, the share answered 429
    double share_429_before = 0;           // [down_start - tail_ms, down_start)
    double share_429_after = 0;            // [total - tail_ms, total)
    std::size_t outage_attempts = 0, outage_sent = 0;
    double outage_per_turn = 0;            // attempts / turns sent, over [down_start, down_end)
    double p50_ms = 0, p99_ms = 0;         // every turn's latency, failed ones and the drain's too
    std::optional<double> recovery_s;      // from down_end to the first of 3 seconds in a row at >= 95 % of
                                           // goodput_adapted; nullopt: not within the run
};

RowMetrics measure(const RowData& row);

// Ok turns done in [from + k s, from + (k+1) s) for each whole second k
// that fits before `to`.
std::vector<std::size_t> goodput_per_second(const std::vector<Turn>& turns, double from, double to);

// The seconds from the first bin until `per_second` is at least `level` for
// `run` bins in a row (the first of them); nullopt when it never is.
std::optional<double> back_at(const std::vector<std::size_t>& per_second, double level, int run);

struct ReportContext {
    double scale = 1;
    double rate = 100;        // R: what the provider admits per second
    double window_ms = 100;   // its rate window
    int callers = 200;
    double service_ms = 200;  // a 200's mean time at the provider (uniform over 0.5..1.5 x)
    bool stream = false;
};

// The markdown summary: one row per row run (or not started), PASS/FAIL
// beside each target of "budget+admission+pacing", and how each figure is
// taken. `all_pass` is set false when a target of that row failed.
std::string summary_table(const std::vector<RowData>& rows, const ReportContext& context, bool& all_pass);

// Per second of a row: the provider's state, turns sent, ok and failed
// turns done, the provider's attempts by status; then the failures by cause.
std::string row_details(const RowData& row);

}  // namespace modelproxy::load
