// The outage simulation (deploy/outage runs it): how a provider outage looks
// through the proxy, row by row, each row a freshly started modelproxy with
// its own config (rows.hpp) in front of the same two fake upstreams of this
// process (upstream.hpp): a primary that goes down for a while (503, then
// silent, then resetting connections; timeline.hpp) and a healthy fallback.
// An open-loop load (load.hpp) runs through each row; the report
// (report.hpp) prints the markdown table with the targets of
// docs/behaviour.md section 13's last row, and writes every row's per-second
// account, config and proxy records to --dir.
//
// A row whose config the binary refuses (a binary without section 13's keys)
// is reported as not started, with the refusal, and the run goes on.
#include "outage/driver.hpp"
#include "outage/load.hpp"
#include "outage/proxy_run.hpp"
#include "outage/report.hpp"
#include "outage/rows.hpp"
#include "outage/upstream.hpp"
#include "support/proxy_process.hpp"

#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <thread>

using namespace modelproxy::outage;
namespace test = modelproxy::test;
using namespace std::chrono_literals;

namespace {

const char* const usage =
    "usage: outage [--binary PATH] [--dir DIR] [--scale F | --quick] [--rate R] [--rows LIST] [--json]\n"
    "              [--workers N]\n"
    "  --binary PATH  the modelproxy to measure (default: the one built beside this tool)\n"
    "  --dir DIR      where configs, records and results.md go (default: a new /tmp/modelproxy-outage.*)\n"
    "  --scale F      every time of the timeline and of the proxy configs times F (default 1: 60 s of load,\n"
    "                 the primary down from 15 s to 45 s); 0.1 .. 10\n"
    "  --quick        --scale 0.25: 15 s per row, a smoke run\n"
    "  --rate R       turns per second (default 20)\n"
    "  --rows LIST    comma list of v1, fallback, breaker (default all three, in that order)\n"
    "  --json         non-stream turns (the first-byte timer applies to streams only, so the silent\n"
    "                 phase then waits for the turn deadline)\n"
    "  --workers N    the proxy's --workers (default 0: one per core)\n"
    "Exit 0 when every target of the \"fallback and breaker\" row passed or that row did not run;\n"
    "1 when one failed; 2 on a usage error.\n";

struct Options {
    std::filesystem::path binary = test::modelproxy_binary();
    std::filesystem::path dir;
    double scale = 1;
    double rate = 20;
    std::vector<RowKind> rows{RowKind::v1, RowKind::fallback, RowKind::breaker};
    bool stream = true;
    int workers = 0;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--binary") o.binary = value();
        else if (arg == "--dir") o.dir = value();
        else if (arg == "--scale") o.scale = std::stod(value());
        else if (arg == "--quick") o.scale = 0.25;
        else if (arg == "--rate") o.rate = std::stod(value());
        else if (arg == "--json") o.stream = false;
        else if (arg == "--workers") o.workers = std::stoi(value());
        else if (arg == "--rows") {
            o.rows.clear();
            std::string list = value() + ",";
            for (std::size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
                const std::string r = list.substr(at, comma - at);
                if (r == "v1") o.rows.push_back(RowKind::v1);
                else if (r == "fallback") o.rows.push_back(RowKind::fallback);
                else if (r == "breaker") o.rows.push_back(RowKind::breaker);
                else throw std::invalid_argument("--rows takes v1, fallback, breaker, not " + r);
            }
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else {
            throw std::invalid_argument("unknown option " + arg);
        }
    }
    if (!(o.scale >= 0.1 && o.scale <= 10) || !(o.rate > 0 && o.rate <= 1000) || o.workers < 0 || o.rows.empty())
        throw std::invalid_argument("--scale takes 0.1..10, --rate 0..1000, --workers >= 0, --rows at least one row");
    if (o.dir.empty()) {
        char templ[] = "/tmp/modelproxy-outage.XXXXXX";
        if (!::mkdtemp(templ)) throw std::runtime_error("cannot make a directory under /tmp");
        o.dir = templ;
    }
    std::filesystem::create_directories(o.dir);
    return o;
}

std::string slug(RowKind r) {
    switch (r) {
        case RowKind::v1: return "v1";
        case RowKind::fallback: return "fallback";
        case RowKind::breaker: return "breaker";
    }
    return "row";
}

void say(const std::string& line) { std::fprintf(stderr, "outage: %s\n", line.c_str()); }

// An io_context on a thread of its own for the upstreams, stopped and joined
// when it goes (the upstreams declared after it go first).
struct UpstreamThread {
    boost::asio::io_context io{1};
    std::thread thread;
    void start() {
        thread = std::thread([this] { io.run(); });
    }
    ~UpstreamThread() {
        io.stop();
        if (thread.joinable()) thread.join();
    }
};

// The same load straight to a healthy upstream: the latency the proxy adds to.
double direct_p99(const Options& o) {
    UpstreamThread loop;
    Upstream direct(loop.io, "direct", std::nullopt);
    loop.start();
    const auto t0 = Clock::now() + 50ms;
    direct.set_start(t0);
    LoadSpec spec{.port = direct.port(), .model = std::string(kModel), .stream = o.stream, .rate = o.rate,
                  .seconds = std::max(2.0, 10 * o.scale), .turn_timeout_ms = 5000};
    const auto turns = run_load(spec, t0);
    const auto failed = std::count_if(turns.begin(), turns.end(), [](const Turn& t) { return !t.ok; });
    if (failed) say(std::to_string(failed) + " of the direct baseline's turns failed");
    return latency_quantile(turns, 0.99);
}

RowData run_row(const Options& o, RowKind kind) {
    RowData row;
    row.kind = kind;
    row.scale = o.scale;
    row.timeline = Timeline::scaled(o.scale);
    UpstreamThread loop;
    Upstream primary(loop.io, "primary", row.timeline);
    Upstream fallback(loop.io, "fallback", std::nullopt);
    loop.start();

    RowSettings settings{.scale = o.scale, .primary_port = primary.port(), .fallback_port = fallback.port()};
    const auto config = o.dir / (slug(kind) + ".yaml");
    write_file(config, row_config(kind, settings));
    ProxyRun proxy(o.binary, config, o.workers);
    auto refused = proxy.check();
    if (refused && kind == RowKind::v1 && refused->find("breaker") != std::string::npos) {
        // A binary from before section 13 has no breaker and no such key;
        // the v1 row measures it without the key.
        settings.breaker_key = false;
        write_file(config, row_config(kind, settings));
        refused = proxy.check();
        row.notes.push_back("v1: this binary does not know `routes[].breaker`; the row ran without the key "
                            "(it has no breaker to turn off).");
    }
    if (refused) {
        row.not_started = "modelproxy check --config " + config.string() + " refused it:\n" + *refused;
        return row;
    }
    if (auto why = proxy.start(); !why.empty()) {
        row.not_started = "modelproxy did not start: " + why;
        return row;
    }
    say("row " + std::string(to_string(kind)) + ": proxy ready on port " + std::to_string(proxy.port()) + ", " +
        std::to_string(static_cast<int>(row.timeline.total() / 1000)) + " s of load");

    const auto t0 = Clock::now() + 100ms;
    primary.set_start(t0);
    fallback.set_start(t0);
    proxy.set_start(t0);
    LoadSpec spec{.port = proxy.port(), .model = std::string(kModel), .stream = o.stream, .rate = o.rate,
                  .seconds = row.timeline.total() / 1000,
                  .turn_timeout_ms = static_cast<double>(scaled_ms(RowTimes::turn_timeout, o.scale)) + 2000};
    row.turns = run_load(spec, t0);
    row.end_ms = ms_since(t0, Clock::now());
    row.exit_code = proxy.stop();
    row.primary = primary.requests();
    row.fallback = fallback.requests();
    const auto lines = proxy.stdout_lines();
    row.breaker = breaker_events(lines);
    std::string records, errors;
    for (const auto& [at, line] : lines) records += line + "\n";
    for (const auto& line : proxy.stderr_lines()) errors += line + "\n";
    write_file(o.dir / (slug(kind) + ".records.jsonl"), records);
    write_file(o.dir / (slug(kind) + ".stderr.log"), errors);
    const auto ok = std::count_if(row.turns.begin(), row.turns.end(), [](const Turn& t) { return t.ok; });
    say("row " + std::string(to_string(kind)) + ": " + std::to_string(ok) + " of " + std::to_string(row.turns.size()) +
        " turns ok; the primary read " + std::to_string(row.primary.size()) + " requests, the fallback " +
        std::to_string(row.fallback.size()));
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    try {
        o = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "outage: %s\n%s", e.what(), usage);
        return 2;
    }
    const auto version = test::run_command({o.binary.string(), "--version"});
    std::string header = "# modelproxy outage simulation, " + now_utc() + "\n\n";
    const Timeline tl = Timeline::scaled(o.scale);
    char line[512];
    std::snprintf(line, sizeof line,
                  "- %s (%s), %u cores; scale %g: %g s of load at %g turns/s, the primary down from %g s to "
                  "%g s (%g s each of 503, silent, reset)\n",
                  version.out.empty() ? "modelproxy" : version.out.substr(0, version.out.find('\n')).c_str(),
                  o.binary.c_str(), std::thread::hardware_concurrency(), o.scale, tl.total() / 1000, o.rate,
                  tl.down_start() / 1000, tl.down_end() / 1000, tl.phase_ms / 1000);
    header += line;
    say(std::string(line + 2, std::strlen(line) - 3) + "; writing to " + o.dir.string());

    ReportContext context{.scale = o.scale, .rate = o.rate, .stream = o.stream};
    try {
        context.direct_p99_ms = direct_p99(o);
        std::snprintf(line, sizeof line, "direct baseline: p99 %.1f ms", context.direct_p99_ms);
        say(line);
        std::vector<RowData> rows;
        for (const RowKind kind : o.rows) {
            rows.push_back(run_row(o, kind));
            if (!rows.back().not_started.empty())
                say("row " + std::string(to_string(kind)) + " did not start:\n" + rows.back().not_started);
        }
        bool all_pass = true;
        const std::string report = summary_table(rows, context, all_pass);
        publish(o.dir, header, report, rows, "did not start", [&](const RowData& row) { return row_details(row); });
        say("configs, records and the per-second account of each row: " + (o.dir / "results.md").string());
        const bool breaker_ran = std::any_of(rows.begin(), rows.end(), [](const RowData& r) {
            return r.kind == RowKind::breaker && r.not_started.empty();
        });
        return breaker_ran && !all_pass ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "outage: %s\n", e.what());
        return 1;
    }
}
