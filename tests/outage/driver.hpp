// The steps the simulation drivers (outage.cpp, load/load.cpp,
// fleet/fleet.cpp) share around their rows: the header's time, a file
// written whole, and the end of a run: the summary's notes, results.md and
// the table on stdout.
#pragma once

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::outage {

// The wall clock's minute in UTC, e.g. 2026-01-31T12:34Z.
std::string now_utc();

// Writes `text` as the whole of `path`.
void write_file(const std::filesystem::path& path, const std::string& text);

// Ends a run over `rows` (each with `kind`, `notes` and `not_started`, and
// to_string(kind)): appends to `report` (the summary table) a note a line,
// each row's notes and, for a row that did not start, its first line and how
// many lines results.md holds (`not_started` says how: "did not start",
// "not started"); writes dir/results.md (header, report, "## Per row" and
// details(row) for each row); prints the header and the report on stdout.
template <class Row, class Details>
void publish(const std::filesystem::path& dir, const std::string& header, std::string report,
             const std::vector<Row>& rows, std::string_view not_started, Details details) {
    std::string notes;
    for (const auto& row : rows) {
        for (const auto& n : row.notes) notes += "- " + n + "\n";
        if (!row.not_started.empty())
            notes += "- " + std::string(to_string(row.kind)) + " " + std::string(not_started) + ": " +
                     row.not_started.substr(0, row.not_started.find('\n')) + " (" +
                     std::to_string(std::count(row.not_started.begin(), row.not_started.end(), '\n')) +
                     " lines in results.md)\n";
    }
    if (!notes.empty()) report += "\n" + notes;
    std::string results = header + "\n" + report + "\n## Per row\n\n";
    for (const auto& row : rows) results += details(row) + "\n";
    write_file(dir / "results.md", results);
    std::fputs((header + "\n" + report).c_str(), stdout);
}

}  // namespace modelproxy::outage
