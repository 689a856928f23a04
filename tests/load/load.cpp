// The load simulation (deploy/load runs it): what a fleet of closed-loop
// callers costs a rate-limited provider through the proxy, and what an
// outage of that provider costs, row by row (docs/behaviour.md section 14),
// each row a freshly started modelproxy with its own config (rows.hpp) in
// front of a fake provider of this process (provider.hpp) that admits R
// requests/s, answers 429 with OpenAI's rate-limit headers above that, and
// answers 503 for a while (timeline.hpp). The callers (callers.hpp) run
// through each row; the report (report.hpp) prints the markdown table with
// the targets of the last row, and writes every row's per-second account,
// config, records, /metrics, turns and provider attempts (CSV) to --dir.
//
// A row whose config the binary refuses (a binary without section 14's
// keys) is reported as not started, with the refusal, and the run goes on.
#include "load/callers.hpp"
#include "load/provider.hpp"
#include "load/report.hpp"
#include "load/rows.hpp"
#include "outage/driver.hpp"
#include "outage/proxy_run.hpp"
#include "support/http_client.hpp"
#include "support/proxy_process.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <thread>

using namespace modelproxy::load;
using modelproxy::outage::now_utc;
using modelproxy::outage::ProxyRun;
using modelproxy::outage::publish;
using modelproxy::outage::write_file;
namespace test = modelproxy::test;
using namespace std::chrono_literals;

namespace {

const char* const usage =
    "usage: load [--binary PATH] [--dir DIR] [--scale F | --quick] [--rate R] [--callers N] [--service-ms MS]\n"
    "            [--rows LIST] [--stream] [--workers N]\n"
    "  --binary PATH    the modelproxy to measure (default: the one built beside this tool)\n"
    "  --dir DIR        where configs, records and results.md go (default: a new /tmp/modelproxy-load.*)\n"
    "  --scale F        every length of the timeline times F (default 1: 90 s of load, the provider\n"
    "                   answering 503 from 30 s to 50 s); 0.1 .. 10\n"
    "  --quick          --scale 0.25: 22.5 s of load per row, a smoke run\n"
    "  --rate R         requests/s the provider admits, a multiple of 10 (default 100)\n"
    "  --callers N      closed-loop callers (default 200)\n"
    "  --service-ms MS  how long the provider takes over an admitted request, on average: each takes\n"
    "                   0.5..1.5 x MS (default 200)\n"
    "  --rows LIST      comma list of v1, budget, admission, pacing (default all four, in that order)\n"
    "  --stream         streamed turns (default: JSON answers)\n"
    "  --workers N      the proxy's --workers (default 0: one per core)\n"
    "Exit 0 when every target of the \"budget+admission+pacing\" row passed or that row did not run;\n"
    "1 when one failed; 2 on a usage error.\n";

constexpr double kWindowMs = 100;  // the provider's rate window

struct Options {
    std::filesystem::path binary = test::modelproxy_binary();
    std::filesystem::path dir;
    double scale = 1;
    double rate = 100;
    int callers = 200;
    double service_ms = 200;
    std::vector<RowKind> rows{RowKind::v1, RowKind::budget, RowKind::admission, RowKind::pacing};
    bool stream = false;
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
        else if (arg == "--callers") o.callers = std::stoi(value());
        else if (arg == "--service-ms") o.service_ms = std::stod(value());
        else if (arg == "--stream") o.stream = true;
        else if (arg == "--workers") o.workers = std::stoi(value());
        else if (arg == "--rows") {
            o.rows.clear();
            std::string list = value() + ",";
            for (std::size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
                const std::string r = list.substr(at, comma - at);
                bool known = false;
                for (const RowKind k : {RowKind::v1, RowKind::budget, RowKind::admission, RowKind::pacing})
                    if (r == slug(k)) o.rows.push_back(k), known = true;
                if (!known) throw std::invalid_argument("--rows takes v1, budget, admission, pacing, not " + r);
            }
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else {
            throw std::invalid_argument("unknown option " + arg);
        }
    }
    const double per_window = o.rate * kWindowMs / 1000;
    if (!(o.scale >= 0.1 && o.scale <= 10) || !(per_window >= 1 && per_window <= 1000) ||
        per_window != std::floor(per_window) || o.callers < 1 || o.callers > 10000 ||
        !(o.service_ms >= 0 && o.service_ms <= 60000) || o.workers < 0 || o.rows.empty())
        throw std::invalid_argument("--scale takes 0.1..10, --rate a multiple of 10 in 10..10000, --callers "
                                    "1..10000, --service-ms 0..60000, --workers >= 0, --rows at least one row");
    if (o.dir.empty()) {
        char templ[] = "/tmp/modelproxy-load.XXXXXX";
        if (!::mkdtemp(templ)) throw std::runtime_error("cannot make a directory under /tmp");
        o.dir = templ;
    }
    std::filesystem::create_directories(o.dir);
    return o;
}

void say(const std::string& line) { std::fprintf(stderr, "load: %s\n", line.c_str()); }

// An io_context on a thread of its own for the provider, stopped and joined
// when it goes (the provider declared after it goes first).
struct ProviderThread {
    boost::asio::io_context io{1};
    std::thread thread;
    void start() {
        thread = std::thread([this] { io.run(); });
    }
    ~ProviderThread() {
        io.stop();
        if (thread.joinable()) thread.join();
    }
};

std::string metrics_text(std::uint16_t port) {
    try {
        test::HttpClient client(port, {.connect_timeout = 2000ms, .timeout = 5000ms});
        const auto res = client.get("/metrics");
        return res.ok() ? res.body : "GET /metrics failed: status " + std::to_string(res.status) + "\n";
    } catch (const std::exception& e) {
        return std::string("GET /metrics failed: ") + e.what() + "\n";
    }
}

// The raw figures of a row, for a look the report does not take.
std::string turns_csv(const std::vector<Turn>& turns) {
    std::string out = "sent_ms,end_ms,status,ok,attempts,error\n";
    char line[160];
    for (const auto& t : turns) {
        std::snprintf(line, sizeof line, "%.1f,%.1f,%u,%d,%d,", t.due_ms, t.end_ms, t.status, t.ok ? 1 : 0, t.attempts);
        out += line + t.error + "\n";
    }
    return out;
}

std::string attempts_csv(const std::vector<Attempt>& attempts) {
    std::string out = "arrive_ms,status\n";
    char line[64];
    for (const auto& a : attempts) {
        std::snprintf(line, sizeof line, "%.1f,%u\n", a.arrive_ms, a.status);
        out += line;
    }
    return out;
}

bool names(const std::string& refusal, const char* key) { return refusal.find(key) != std::string::npos; }

RowData run_row(const Options& o, RowKind kind) {
    RowData row;
    row.kind = kind;
    row.timeline = Timeline::scaled(o.scale);
    ProviderThread loop;
    Provider provider(loop.io, row.timeline, RateWindow(static_cast<int>(o.rate * kWindowMs / 1000), kWindowMs),
                      o.service_ms);
    loop.start();

    RowSettings settings{.provider_port = provider.port()};
    const std::string name(slug(kind));
    const auto config = o.dir / (name + ".yaml");
    write_file(config, row_config(kind, settings));
    ProxyRun proxy(o.binary, config, o.workers);
    auto refused = proxy.check();
    if (refused && kind == RowKind::v1 && (names(*refused, "budget") || names(*refused, "admission"))) {
        // A binary from before section 14 has no budget or no admission, nor
        // their keys; the v1 row measures it without the keys it refuses
        // (there is nothing of theirs to turn off).
        settings.budget_keys = !names(*refused, "budget");
        settings.admission_keys = !names(*refused, "admission");
        write_file(config, row_config(kind, settings));
        refused = proxy.check();
        std::string left_out = settings.budget_keys ? "" : "`retry.budget_min_concurrency`";
        if (!settings.admission_keys) left_out += std::string(left_out.empty() ? "" : " and ") + "`admission`";
        row.notes.push_back("v1: this binary does not know " + left_out + "; the row ran without " +
                            (settings.budget_keys == settings.admission_keys ? "them" : "it") +
                            " (it has nothing of theirs to turn off).");
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
    provider.set_start(t0);
    proxy.set_start(t0);
    const CallerSpec spec{.port = proxy.port(), .model = std::string(kModel), .stream = o.stream,
                          .callers = o.callers, .seconds = row.timeline.total() / 1000,
                          .turn_timeout_ms = static_cast<double>(kTurnTimeoutMs) + 5000};
    row.turns = run_callers(spec, t0);
    row.end_ms = ms_since(t0, Clock::now());
    write_file(o.dir / (name + ".metrics.txt"), metrics_text(proxy.port()));
    row.exit_code = proxy.stop();
    row.attempts = provider.attempts();
    std::string records, errors;
    for (const auto& [at, line] : proxy.stdout_lines()) records += line + "\n";
    for (const auto& line : proxy.stderr_lines()) errors += line + "\n";
    write_file(o.dir / (name + ".records.jsonl"), records);
    write_file(o.dir / (name + ".turns.csv"), turns_csv(row.turns));
    write_file(o.dir / (name + ".attempts.csv"), attempts_csv(row.attempts));
    write_file(o.dir / (name + ".stderr.log"), errors);
    const auto ok = std::count_if(row.turns.begin(), row.turns.end(), [](const Turn& t) { return t.ok; });
    say("row " + std::string(to_string(kind)) + ": " + std::to_string(ok) + " of " + std::to_string(row.turns.size()) +
        " turns ok; the provider read " + std::to_string(row.attempts.size()) + " requests; " +
        std::to_string(static_cast<int>(row.end_ms / 1000)) + " s with the drain");
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    try {
        o = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "load: %s\n%s", e.what(), usage);
        return 2;
    }
    const auto version = test::run_command({o.binary.string(), "--version"});
    std::string header = "# modelproxy load simulation, " + now_utc() + "\n\n";
    const Timeline tl = Timeline::scaled(o.scale);
    char line[512];
    std::snprintf(line, sizeof line,
                  "- %s (%s), %u cores; scale %g: %g s of load from %d closed-loop callers, the provider admitting "
                  "R = %g requests/s, answering 503 from %g s to %g s\n",
                  version.out.empty() ? "modelproxy" : version.out.substr(0, version.out.find('\n')).c_str(),
                  o.binary.c_str(), std::thread::hardware_concurrency(), o.scale, tl.total() / 1000, o.callers,
                  o.rate, tl.down_start() / 1000, tl.down_end() / 1000);
    header += line;
    say(std::string(line + 2, std::strlen(line) - 3) + "; writing to " + o.dir.string());

    const ReportContext context{.scale = o.scale, .rate = o.rate, .window_ms = kWindowMs, .callers = o.callers,
                                .service_ms = o.service_ms, .stream = o.stream};
    try {
        std::vector<RowData> rows;
        for (const RowKind kind : o.rows) {
            rows.push_back(run_row(o, kind));
            if (!rows.back().not_started.empty())
                say("row " + std::string(to_string(kind)) + " not started:\n" + rows.back().not_started);
        }
        bool all_pass = true;
        const std::string report = summary_table(rows, context, all_pass);
        publish(o.dir, header, report, rows, "not started", [&](const RowData& row) { return row_details(row); });
        say("configs, records, /metrics and the per-second account of each row: " + (o.dir / "results.md").string());
        const bool pacing_ran = std::any_of(rows.begin(), rows.end(), [](const RowData& r) {
            return r.kind == RowKind::pacing && r.not_started.empty();
        });
        return pacing_ran && !all_pass ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "load: %s\n", e.what());
        return 1;
    }
}
