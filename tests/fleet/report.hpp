// What one row of the fleet simulation measured, computed from what was
// recorded (the callers' turns and the requests the fake provider read),
// and the report: the summary table with the targets of the shared rows
// (docs/behaviour.md section 15), and a per-second account of each row.
// Pure: every time is passed in.
#pragma once

#include "fleet/callers.hpp"
#include "fleet/provider.hpp"
#include "fleet/rows.hpp"
#include "fleet/timeline.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace modelproxy::fleet {

struct RowData {
    RowKind kind = RowKind::per_replica;
    std::string not_started;          // non-empty: why the row did not run
    std::vector<std::string> notes;   // said under the table
    Timeline timeline;
    double end_ms = 0;                // when the observation ended (every turn done)
    std::vector<Turn> turns;
    std::vector<Attempt> attempts;    // what the fake provider read
    std::optional<double> redis_killed_ms, redis_back_ms;  // the killed row: when it really happened
    std::vector<std::optional<int>> exit_codes;            // each replica's, after SIGTERM
};

struct ReportContext {
    double scale = 1;
    int replicas = 50;
    int callers = 300;
    double think_ms = 900;
    std::int64_t requests_per_minute = 6000;   // Q
    std::int64_t tokens_per_minute = 1200000;  // T
    double min_service_ms = 50, max_service_ms = 150;
    int usage_tokens = 70;                     // each 200's usage (prompt + completion)
};

// The span failed turns are counted in: the killed row's own kill and
// restart when it recorded them, else the timeline's (timeline.hpp).
std::pair<double, double> outage_window(const RowData& row);

// Every figure is taken over the whole observation unless it says
// otherwise; the means over the run's whole minutes, [0, minutes_ms).
struct RowMetrics {
    std::size_t received = 0, received_429 = 0;  // the provider's requests
    std::int64_t worst_minute = 0;               // most requests it received in any 60 s
    double worst_minute_share = 0;               // ... / Q
    std::int64_t worst_buckets = 0;              // most in any 60 of its one-second buckets, as its quota counts
    double worst_buckets_share = 0;              // ... / Q
    double mean_minute_share = 0;                // requests received per minute / Q
    double share_429 = 0;                        // of its requests, the share answered 429
    double per_ok_429 = 0;                       // its 429s per ok turn
    std::size_t sent = 0, ok = 0;                // turns sent; ok turns done (whole minutes)
    double goodput_share = 0;                    // ok turns done per minute / Q (whole minutes)
    std::int64_t worst_minute_tokens = 0;        // most tokens its 200s billed in any 60 s
    double tokens_share = 0;                     // ... / T
    std::size_t window_failed = 0;               // turns failed (not ok) that ended in outage_window
    std::size_t window_for_redis = 0;            // ... of them with a status the proxy made for Redis
};

// `window`: the span the window figures are taken over (outage_window of
// the killed row, so that every row is counted over the same span).
RowMetrics measure(const RowData& row, const ReportContext& context, std::pair<double, double> window);

// The largest sum of weights over the (time, weight) points inside any
// [t, t + span_ms); points need not be sorted.
std::int64_t worst_window(std::vector<std::pair<double, std::int64_t>> points, double span_ms);

// The largest count of `seconds` (each a bucket's second, unsorted) in
// any `width` consecutive seconds.
std::int64_t worst_buckets(std::vector<std::int64_t> seconds, std::int64_t width);

// A failed turn the proxy ended for Redis: any 5xx (the fake provider
// answers only 200 and 429, so a 5xx is the proxy's own), or an error that
// names Redis or the fleet.
bool made_for_redis(const Turn& turn);

// The markdown summary: one row per row run (or not started), PASS/FAIL
// beside each target of the shared rows, and how each figure is taken.
// `all_pass` is set false when a target of a shared row failed.
std::string summary_table(const std::vector<RowData>& rows, const ReportContext& context, bool& all_pass);

// Per second of a row: Redis up or down, turns sent, ok and failed turns
// done, the provider's requests by status and its trailing minute; then the
// failures by cause and the replicas' exit codes.
std::string row_details(const RowData& row, const ReportContext& context);

}  // namespace modelproxy::fleet
