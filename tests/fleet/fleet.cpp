// The fleet simulation (deploy/fleet runs it): what a fleet of modelproxy
// replicas sends to one provider key with a per-minute quota, with the
// quota kept by each replica alone or shared through Redis, and what a
// Redis outage costs (docs/behaviour.md section 15). Each row starts a
// fake provider of this process (provider.hpp), for a shared row a real
// redis-server (tests/support/redis_server.hpp), and `--replicas`
// modelproxy processes with the row's config (rows.hpp), one worker each;
// the callers (callers.hpp) run through the row on a thread of their own,
// the provider on another, while the main thread (which started every
// child: they die with it) kills and restarts redis-server in the killed
// row. The report (report.hpp) prints the markdown table with the targets
// of the shared rows, and writes every row's per-second account, config,
// records, /metrics, stderr and turns and provider requests (CSV) to --dir.
//
// A row whose config the binary refuses (no section 15 keys) is reported as
// not started, with the refusal, and the run goes on.
#include "fleet/callers.hpp"
#include "fleet/provider.hpp"
#include "fleet/report.hpp"
#include "fleet/rows.hpp"
#include "outage/driver.hpp"
#include "outage/proxy_run.hpp"
#include "support/http_client.hpp"
#include "support/proxy_process.hpp"
#include "support/redis_server.hpp"

#include <sys/resource.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace modelproxy::fleet;
using modelproxy::outage::now_utc;
using modelproxy::outage::ProxyRun;
using modelproxy::outage::publish;
using modelproxy::outage::write_file;
namespace test = modelproxy::test;
using namespace std::chrono_literals;

namespace {

const char* const usage =
    "usage: fleet [--binary PATH] [--dir DIR] [--scale F | --quick] [--replicas N] [--rpm Q] [--tpm T]\n"
    "             [--callers N] [--think-ms MS] [--rows LIST]\n"
    "  --binary PATH   the modelproxy to measure (default: the one built beside this tool)\n"
    "  --dir DIR       where configs, records and results.md go (default: a new /tmp/modelproxy-fleet.*)\n"
    "  --scale F       the run and the outage times F (default 1: 120 s of load, redis-server killed\n"
    "                  from 50 s to 70 s in the killed row; the kill stays at 50 s); 0.5 .. 10\n"
    "  --quick         --scale 0.75: 90 s of load per row, redis-server killed from 50 s to 65 s\n"
    "  --replicas N    modelproxy processes, one worker each (default 50)\n"
    "  --rpm Q         requests per minute the provider's key allows (default 6000)\n"
    "  --tpm T         the shared rows' tokens_per_minute (default 200 x Q)\n"
    "  --callers N     closed-loop callers in all (default: enough to offer 3 x Q unhindered)\n"
    "  --think-ms MS   a caller's pause after an ok turn (default 900)\n"
    "  --rows LIST     comma list of per-replica, shared, killed (default all three, in that order)\n"
    "Exit 0 when every target of the shared rows passed or none ran; 1 when one failed; 2 on a usage error.\n";

constexpr double kMeanServiceMs = 100;  // the provider's 50..150 ms
constexpr double kOffered = 3;          // the callers' offered load, unhindered, in Q

struct Options {
    std::filesystem::path binary = test::modelproxy_binary();
    std::filesystem::path dir;
    double scale = 1;
    int replicas = 50;
    std::int64_t rpm = 6000;
    std::int64_t tpm = 0;  // 0: 200 x rpm
    int callers = 0;       // 0: enough for kOffered x Q
    double think_ms = 900;
    std::vector<RowKind> rows{RowKind::per_replica, RowKind::shared, RowKind::killed};
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
        else if (arg == "--quick") o.scale = 0.75;
        else if (arg == "--replicas") o.replicas = std::stoi(value());
        else if (arg == "--rpm") o.rpm = std::stoll(value());
        else if (arg == "--tpm") o.tpm = std::stoll(value());
        else if (arg == "--callers") o.callers = std::stoi(value());
        else if (arg == "--think-ms") o.think_ms = std::stod(value());
        else if (arg == "--rows") {
            o.rows.clear();
            std::string list = value() + ",";
            for (std::size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
                const std::string r = list.substr(at, comma - at);
                bool known = false;
                for (const RowKind k : {RowKind::per_replica, RowKind::shared, RowKind::killed})
                    if (r == slug(k)) o.rows.push_back(k), known = true;
                if (!known) throw std::invalid_argument("--rows takes per-replica, shared, killed, not " + r);
            }
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else {
            throw std::invalid_argument("unknown option " + arg);
        }
    }
    if (o.tpm == 0) o.tpm = 200 * o.rpm;
    if (o.callers == 0)
        o.callers = static_cast<int>(std::lround(kOffered * static_cast<double>(o.rpm) / 60 *
                                                 (o.think_ms + kMeanServiceMs) / 1000));
    if (!(o.scale >= 0.5 && o.scale <= 10) || o.replicas < 1 || o.replicas > 500 || o.rpm < 1 ||
        o.rpm > 100000000 || o.tpm < 1 || o.tpm > 10000000000 || o.callers < 1 || o.callers > 20000 ||
        !(o.think_ms >= 0 && o.think_ms <= 60000) || o.rows.empty())
        throw std::invalid_argument("--scale takes 0.5..10, --replicas 1..500, --rpm 1..100000000, --tpm "
                                    "1..10000000000, --callers 1..20000, --think-ms 0..60000, --rows at least one");
    if (o.dir.empty()) {
        char templ[] = "/tmp/modelproxy-fleet.XXXXXX";
        if (!::mkdtemp(templ)) throw std::runtime_error("cannot make a directory under /tmp");
        o.dir = templ;
    }
    std::filesystem::create_directories(o.dir);
    return o;
}

void say(const std::string& line) { std::fprintf(stderr, "fleet: %s\n", line.c_str()); }

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
    std::string out = "arrive_ms,status,tokens\n";
    char line[80];
    for (const auto& a : attempts) {
        std::snprintf(line, sizeof line, "%.1f,%u,%lld\n", a.arrive_ms, a.status, static_cast<long long>(a.tokens));
        out += line;
    }
    return out;
}

double cpu_seconds(int who) {
    rusage u{};
    ::getrusage(who, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void sleep_until(Clock::time_point t) { std::this_thread::sleep_until(t); }

Clock::time_point at(Clock::time_point t0, double ms) {
    return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

RowData run_row(const Options& o, RowKind kind) {
    RowData row;
    row.kind = kind;
    row.timeline = Timeline::scaled(o.scale);
    const double cpu_self = cpu_seconds(RUSAGE_SELF), cpu_children = cpu_seconds(RUSAGE_CHILDREN);
    const auto started = Clock::now();
    ProviderThread loop;
    Provider provider(loop.io, ProviderSpec{.requests_per_minute = o.rpm});
    loop.start();

    std::optional<test::RedisServer> redis;
    if (is_shared(kind)) {
        try {
            redis.emplace();
        } catch (const std::exception& e) {
            row.not_started = std::string("redis-server did not start: ") + e.what() + "\n";
            return row;
        }
    }
    const RowSettings settings{.provider_port = provider.port(), .redis_url = redis ? redis->url() : "",
                               .requests_per_minute = o.rpm, .tokens_per_minute = o.tpm, .replicas = o.replicas};
    const std::string name(slug(kind));
    const auto config = o.dir / (name + ".yaml");
    write_file(config, row_config(kind, settings));
    std::vector<std::unique_ptr<ProxyRun>> proxies;
    proxies.push_back(std::make_unique<ProxyRun>(o.binary, config, 1));
    if (auto refused = proxies.front()->check()) {
        row.not_started = "modelproxy check --config " + config.string() + " refused it:\n" + *refused;
        return row;
    }
    while (static_cast<int>(proxies.size()) < o.replicas) proxies.push_back(std::make_unique<ProxyRun>(o.binary, config, 1));
    std::vector<std::uint16_t> ports;
    for (std::size_t i = 0; i < proxies.size(); ++i) {
        if (auto why = proxies[i]->start(); !why.empty()) {
            row.not_started = "modelproxy replica " + std::to_string(i) + " did not start: " + why;
            return row;
        }
        ports.push_back(proxies[i]->port());
    }
    say("row " + std::string(to_string(kind)) + ": " + std::to_string(ports.size()) + " replicas ready in " +
        std::to_string(static_cast<int>(ms_since(started, Clock::now()))) + " ms, " +
        std::to_string(static_cast<int>(row.timeline.run_ms / 1000)) + " s of load");

    const auto t0 = Clock::now() + 200ms;
    provider.set_start(t0);
    for (auto& p : proxies) p->set_start(t0);
    const CallerSpec spec{.ports = ports, .model = std::string(kModel), .callers = o.callers,
                          .think_ms = o.think_ms, .seconds = row.timeline.run_ms / 1000,
                          .turn_timeout_ms = static_cast<double>(kTurnTimeoutMs) + 5000};
    std::thread callers([&] { row.turns = run_callers(spec, t0); });
    if (kind == RowKind::killed) {
        // The main thread started redis-server, so it kills and restarts it
        // (a child dies with the thread that started it).
        sleep_until(at(t0, row.timeline.redis_down_start()));
        redis->stop();
        row.redis_killed_ms = ms_since(t0, Clock::now());
        say("row " + std::string(to_string(kind)) + ": redis-server killed");
        sleep_until(at(t0, row.timeline.redis_down_end()));
        try {
            redis->start();
            row.redis_back_ms = ms_since(t0, Clock::now());
            say("row " + std::string(to_string(kind)) + ": redis-server answering again");
        } catch (const std::exception& e) {
            row.notes.push_back(std::string(to_string(kind)) + ": redis-server did not start again: " + e.what());
        }
    }
    callers.join();
    row.end_ms = ms_since(t0, Clock::now());

    std::string metrics, records, errors;
    for (std::size_t i = 0; i < proxies.size(); ++i)
        metrics += "# replica " + std::to_string(i) + ", port " + std::to_string(ports[i]) + "\n" +
                   metrics_text(ports[i]);
    for (std::size_t i = 0; i < proxies.size(); ++i) {
        row.exit_codes.push_back(proxies[i]->stop());
        for (const auto& [when, line] : proxies[i]->stdout_lines()) records += line + "\n";
        for (const auto& line : proxies[i]->stderr_lines()) errors += "[replica " + std::to_string(i) + "] " + line + "\n";
    }
    row.attempts = provider.attempts();
    write_file(o.dir / (name + ".metrics.txt"), metrics);
    write_file(o.dir / (name + ".records.jsonl"), records);
    write_file(o.dir / (name + ".stderr.log"), errors);
    write_file(o.dir / (name + ".turns.csv"), turns_csv(row.turns));
    write_file(o.dir / (name + ".attempts.csv"), attempts_csv(row.attempts));
    if (redis) write_file(o.dir / (name + ".redis.log"), redis->log());
    redis.reset();
    const auto ok = std::count_if(row.turns.begin(), row.turns.end(), [](const Turn& t) { return t.ok; });
    const double wall = ms_since(started, Clock::now()) / 1000;
    const double self = cpu_seconds(RUSAGE_SELF) - cpu_self, children = cpu_seconds(RUSAGE_CHILDREN) - cpu_children;
    char cpu[256];
    std::snprintf(cpu, sizeof cpu,
                  "%s: %.0f s in all; CPU %.0f s for the replicas and redis-server, %.0f s for this driver "
                  "(%.0f %% of %u cores)",
                  std::string(to_string(kind)).c_str(), wall, children, self,
                  100 * (self + children) / wall / std::max(1u, std::thread::hardware_concurrency()),
                  std::thread::hardware_concurrency());
    row.notes.push_back(cpu);
    say("row " + std::string(to_string(kind)) + ": " + std::to_string(ok) + " of " + std::to_string(row.turns.size()) +
        " turns ok; the provider read " + std::to_string(row.attempts.size()) + " requests; " + cpu);
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    try {
        o = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fleet: %s\n%s", e.what(), usage);
        return 2;
    }
    const auto version = test::run_command({o.binary.string(), "--version"});
    std::string header = "# modelproxy fleet simulation, " + now_utc() + "\n\n";
    const Timeline tl = Timeline::scaled(o.scale);
    char line[640];
    std::snprintf(line, sizeof line,
                  "- %s (%s), %u cores; scale %g: %g s of load from %d closed-loop callers over %d replicas, the "
                  "provider's key allowing Q = %lld requests/min; the killed row's redis-server down from %g s "
                  "to %g s\n",
                  version.out.empty() ? "modelproxy" : version.out.substr(0, version.out.find('\n')).c_str(),
                  o.binary.c_str(), std::thread::hardware_concurrency(), o.scale, tl.run_ms / 1000, o.callers,
                  o.replicas, static_cast<long long>(o.rpm), tl.redis_down_start() / 1000,
                  tl.redis_down_end() / 1000);
    header += line;
    say(std::string(line + 2, std::strlen(line) - 3) + "; writing to " + o.dir.string());

    const ReportContext context{.scale = o.scale, .replicas = o.replicas, .callers = o.callers,
                                .think_ms = o.think_ms, .requests_per_minute = o.rpm, .tokens_per_minute = o.tpm};
    try {
        std::vector<RowData> rows;
        for (const RowKind kind : o.rows) {
            rows.push_back(run_row(o, kind));
            if (!rows.back().not_started.empty())
                say("row " + std::string(to_string(kind)) + " not started:\n" + rows.back().not_started);
        }
        bool all_pass = true;
        const std::string report = summary_table(rows, context, all_pass);
        publish(o.dir, header, report, rows, "not started", [&](const RowData& row) { return row_details(row, context); });
        say("configs, records, /metrics and the per-second account of each row: " + (o.dir / "results.md").string());
        const bool shared_ran = std::any_of(rows.begin(), rows.end(), [](const RowData& r) {
            return is_shared(r.kind) && r.not_started.empty();
        });
        return shared_ran && !all_pass ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fleet: %s\n", e.what());
        return 1;
    }
}
