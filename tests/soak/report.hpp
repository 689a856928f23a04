// The soak's end: the proxy's records checked against what the clients saw,
// and the printed summary with the pass/fail verdict.
#pragma once

#include "soak/faults.hpp"
#include "soak/stats.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::soak {

// The proxy's resources at a quiet moment: open fds, of which `upstream` are
// connections the fake still holds open (the proxy's idle pool), and RSS.
struct Resources {
    int fds = -1;
    int upstream = -1;
    std::int64_t rss_kib = -1;
};

// The records log (docs/behaviour.md section 10) against the clients' view: one turn
// record per turn issued, one attempt record per attempt the clients were
// told of, and outcome "ok" exactly for the turns answered with their success
// (turns judged wrong are already reported, their outcome is not compared).
// Section 16: the turn record's `resumed` and the attempts' `resume_offset`
// as `resumes` predicts (one attempt with decision `resume` per turn that
// has an offset), and neither on any other turn.
struct RecordCheck {
    bool readable = false;
    std::uint64_t turn_records = 0;
    std::uint64_t attempt_records = 0;
    std::uint64_t resume_attempts = 0;  // attempt records with decision `resume`
    std::uint64_t resumed_turns = 0;    // turn records with resumed > 0
    std::uint64_t problems = 0;
    std::string first_problems;  // a few, one per line
};
RecordCheck check_records(const std::filesystem::path& log, std::uint64_t turns_issued,
                          std::vector<std::uint64_t> successes, std::vector<std::uint64_t> wrong,
                          std::vector<ResumeTurn> resumes);

// One result of modelproxy_resumes_total: what the resume route counted
// (nullopt: no such series), the turns of the cases predicting it, and what
// the routes without resume counted (must be 0).
struct ResumeCount {
    std::string result;
    std::string cases;
    std::optional<double> counted;
    std::uint64_t turns = 0;
    double elsewhere = 0;
};

struct Summary {
    double load_s = 0, warmup_s = 0, active_s = 0;
    int clients = 0, workers = 0;
    double fault_rate = 0;
    std::uint64_t seed = 0;
    bool self_test = false;
    ClientStats stats;
    std::vector<std::pair<std::string, std::uint64_t>> per_case;
    std::uint64_t orphans = 0;
    std::uint64_t free_resends = 0;
    RecordCheck records;
    Resources cold, baseline, end;
    std::int64_t rss_min_kib = 0, rss_max_kib = 0;
    // The proxy's exit status after SIGTERM at the end (docs/behaviour.md section 11: an
    // idle proxy drains and exits 0); nullopt when it did not exit in time.
    bool ran_through = false;
    std::optional<int> exit_code;
    bool metrics_read = false;
    std::vector<ResumeCount> resumes;  // read from /metrics at the end, before SIGTERM
};

// Prints the summary to stdout; returns true when every check passed.
bool print_summary(const Summary& s);

}  // namespace modelproxy::soak
