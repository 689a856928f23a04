// The soak command: many concurrent clients, streaming
// and not, against the real binary and the in-process FakeProvider, which
// injects every fault class of docs/behaviour.md sections 5, 7 and 8, and cut streams
// a resume continues or gives up (section 16), at a configurable
// rate. Every turn must end with the outcome docs/behaviour.md predicts for its fault
// script (faults.cpp, check.cpp), no response may carry another turn's bytes,
// the proxy's resume counts must match the resume cases' turns,
// and the proxy's open fds and RSS must come back to their baseline. Prints
// turns/s, outcome and resume counts and p50/p99 turn duration; exits 1 on any failure.
// Run it through deploy/soak; `soak --help` lists the options.
#include "soak/check.hpp"
#include "soak/faults.hpp"
#include "soak/registry.hpp"
#include "soak/report.hpp"
#include "soak/stats.hpp"
#include "support/fake_provider.hpp"
#include "support/ports.hpp"
#include "support/proxy_process.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace modelproxy::soak;
using namespace modelproxy::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const char* const usage =
    "usage: soak [--minutes M] [--fault-rate R] [--clients N] [--seed S] [--workers W]\n"
    "            [--self-test-crosstalk]\n"
    "  --minutes M      load duration, after a warm-up of max(10 s, 5 %) (default 10; fractions allowed)\n"
    "  --fault-rate R   share of turns given a fault script, 0..1 (default 0.10)\n"
    "  --clients N      concurrent client connections (default 32)\n"
    "  --seed S         random seed (default: from the clock; printed)\n"
    "  --workers W      the proxy's --workers (default 0: one per core)\n"
    "  --self-test-crosstalk  answer one turn with another turn's bytes: the soak must fail\n";

struct Options {
    double minutes = 10;
    double fault_rate = 0.10;
    int clients = 32;
    std::uint64_t seed = 0;
    int workers = 0;
    bool self_test = false;
};

Options parse(int argc, char** argv) {
    Options o;
    o.seed = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) % 1000000007u;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--minutes") o.minutes = std::stod(value());
        else if (arg == "--fault-rate") o.fault_rate = std::stod(value());
        else if (arg == "--clients") o.clients = std::stoi(value());
        else if (arg == "--seed") o.seed = std::stoull(value());
        else if (arg == "--workers") o.workers = std::stoi(value());
        else if (arg == "--self-test-crosstalk") o.self_test = true;
        else if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else {
            throw std::invalid_argument("unknown option " + arg);
        }
    }
    if (!(o.minutes > 0) || !(o.fault_rate >= 0 && o.fault_rate <= 1) || o.clients < 1 || o.workers < 0)
        throw std::invalid_argument("--minutes > 0, 0 <= --fault-rate <= 1, --clients >= 1, --workers >= 0");
    return o;
}

// The proxy's config: tiny waits and timeouts so every fault resolves in
// milliseconds (a hang until the 2.5 s deadline is the slowest; the 500 ms
// stream idle timeout leaves room for a loaded machine); the bounds are
// the ones the fault table predicts with.
std::string config(const FakeProvider& fake, const Bounds& bounds, int clients) {
    return "limits: {idle_timeout_ms: 5000, header_timeout_ms: 5000}\n"
           "retry: {max_attempts: " + std::to_string(bounds.max_attempts) +
           ", throttled_max_attempts: " + std::to_string(bounds.throttled_max_attempts) +
           ", base_delay_ms: 1, max_delay_ms: 4, max_total_delay_ms: 10000,"
           " throttled_max_total_delay_ms: 10000, min_attempt_ms: 50}\n"
           "routes:\n"
           "  - name: soak\n"
           "    upstream: " + fake.base_url("/v1") + "\n"
           "    models: [\"*\"]\n"
           "    timeout_ms: 2500\n"
           "    stream_idle_timeout_ms: 500\n"
           "    connect_timeout_ms: 1000\n"
           // One model, one candidate for every turn sent here: the retry
           // budget (section 14) would refuse a replay whenever more than 3
           // of them are replaying at once, which a loaded run sees now and
           // then; the table predicts max_attempts, so the budget allows a
           // replay per client.
           "  - name: refused\n"
           "    upstream: http://127.0.0.1:" + std::to_string(unused_port()) + "/v1\n"
           "    models: [" + std::string(refused_model) + "]\n"
           "    timeout_ms: 2500\n"
           "    connect_timeout_ms: 1000\n"
           "    retry: {budget_min_concurrency: " + std::to_string(std::max(3, clients)) + "}\n"
           // The resume cases' route (section 16). Its one model is one
           // candidate for all of them, so what would make a resume's
           // outcome depend on the other turns is off: the breaker (half the
           // attempts here are cuts, by design) and the retry budget's
           // limit below one replay per client.
           "  - name: " + std::string(resume_route) + "\n"
           "    upstream: " + fake.base_url("/v1") + "\n"
           "    models: [" + std::string(resume_model) + "]\n"
           "    timeout_ms: 2500\n"
           "    stream_idle_timeout_ms: 500\n"
           "    connect_timeout_ms: 1000\n"
           "    resume: {enabled: true}\n"
           "    breaker: {enabled: false}\n"
           "    retry: {budget_min_concurrency: " + std::to_string(std::max(3, clients)) + "}\n";
}

// Clients run until `stop`; `pause` parks them with their connections
// closed, so resources can be read with no client connected.
struct Control {
    std::atomic<bool> stop{false};
    std::atomic<bool> pause{false};
    std::atomic<std::uint64_t> next_turn{1};
    std::mutex mu;
    std::condition_variable cv;
    int parked = 0;

    void park() {
        std::unique_lock lock(mu);
        ++parked;
        cv.notify_all();
        cv.wait(lock, [&] { return !pause.load() || stop.load(); });
        --parked;
    }
    void wait_parked(int clients) {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return parked == clients; });
    }
    void resume() {
        std::lock_guard lock(mu);
        pause = false;
        cv.notify_all();
    }
};

struct Shared {
    const Options& options;
    const Bounds& bounds;
    const std::vector<FaultCase>& cases;
    std::vector<std::size_t> plain_cases, stream_cases;  // indexes into `cases`
    Registry& registry;
    Control& control;
    std::uint16_t port;
    std::vector<std::atomic<std::uint64_t>> per_case;  // turns drawn per case
};

std::string describe(const TurnPlan& plan, const std::string& id, const UpstreamCount& up, const Verdict& v,
                     const Response& r) {
    std::string s = id + (plan.stream ? " stream" : " plain") + ", case '" + (plan.fault ? plan.fault->name : "none") +
                    "'" + (plan.fault && plan.fault->transient ? " k=" + std::to_string(plan.k) : "") +
                    ", provider saw " + std::to_string(up.requests) + " requests (" + std::to_string(up.free) +
                    " free): " + v.why + "\n      got: " + r.wire.substr(0, 700);
    return s;
}

void client_loop(Shared& sh, int index, ClientStats& stats) {
    std::mt19937_64 rng(sh.options.seed * 1000003u + static_cast<std::uint64_t>(index));
    std::uniform_real_distribution<double> unit(0, 1);
    std::unique_ptr<HttpClient> client;
    HttpClient::Options client_options;
    client_options.timeout = 20s;
    while (!sh.control.stop.load()) {
        if (sh.control.pause.load()) {
            client.reset();
            sh.control.park();
            continue;
        }
        TurnPlan plan;
        plan.turn = sh.control.next_turn.fetch_add(1);
        plan.stream = unit(rng) < 0.5;
        if (unit(rng) < sh.options.fault_rate) {
            const auto& pool = plan.stream ? sh.stream_cases : sh.plain_cases;
            const std::size_t c = pool[rng() % pool.size()];
            plan.fault = &sh.cases[c];
            plan.k = 1 + static_cast<int>(rng() % 2);
            ++sh.per_case[c];
        }
        const std::string id = turn_id(plan.turn);
        const bool refused = plan.fault && plan.fault->refused_route;
        const Expectation expected = !plan.fault ? expect_success(id, plan.turn, plan.stream, 1)
                                                 : plan.fault->expect(id, plan.turn, plan.stream, plan.k);
        const std::string body = turn_request(plan.fault, id, plan.stream);

        sh.registry.open(plan);
        const auto start = Clock::now();
        Response r;
        try {
            if (!client || rng() % 64 == 0) client = std::make_unique<HttpClient>(sh.port, client_options);
            r = client->post_json("/v1/chat/completions", body, {{"x-request-id", id}});
        } catch (const std::exception& e) {
            r.error = boost::asio::error::make_error_code(boost::asio::error::connection_refused);
            r.wire = std::string("client: ") + e.what();
        }
        stats.durations.add(Clock::now() - start);
        const UpstreamCount upstream = sh.registry.close(plan.turn);
        if (!r.ok() || !r.keep_alive) client.reset();

        ++stats.turns;
        if (plan.stream) ++stats.stream_turns;
        const Verdict v = judge(r, expected, id, plan.stream, upstream, refused);
        const int foreign = foreign_ids(r.wire, id);
        if (foreign > 0) ++stats.crosstalk;
        if (v.right && foreign == 0) {
            ++stats.outcomes[v.label];
            // The records count a resume's attempts too, sent after the header.
            stats.attempts += static_cast<std::uint64_t>(
                std::atoi(r.header("x-modelproxy-attempts").value_or("0").c_str()) + expected.unheaded);
            if (expected.shape == Shape::ok || expected.shape == Shape::resumed) stats.successes.push_back(plan.turn);
            if (expected.resumed > 0 || expected.resume_offset >= 0)
                stats.resume_turns.push_back({plan.turn, expected.resumed, expected.resume_offset});
        } else {
            ++stats.wrong;
            stats.wrong_turns.push_back(plan.turn);
            if (stats.first_wrong.size() < 10) {
                Verdict shown = v;
                if (foreign > 0) shown.why = std::to_string(foreign) + " foreign turn id(s) in the response; " + v.why;
                stats.first_wrong.push_back({plan.turn, describe(plan, id, upstream, shown, r)});
            }
        }
    }
    client.reset();
}

// Reads the proxy's fds and the fake's open connections until both hold
// still for half a second (connections closing on either side settle first).
Resources settle(const ProxyProcess& proxy, const FakeProvider& fake) {
    Resources last{proxy.open_fds(), static_cast<int>(fake.connections_open()), proxy.rss_kib()};
    int same = 0;
    const auto until = Clock::now() + 15s;
    while (same < 5 && Clock::now() < until) {
        std::this_thread::sleep_for(100ms);
        Resources now{proxy.open_fds(), static_cast<int>(fake.connections_open()), proxy.rss_kib()};
        same = (now.fds == last.fds && now.upstream == last.upstream) ? same + 1 : 0;
        last = now;
    }
    return last;
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    try {
        options = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "soak: %s\n%s", e.what(), usage);
        return 2;
    }
    const Bounds bounds;
    const std::vector<FaultCase> cases = fault_cases(bounds);
    const int workers = options.workers > 0 ? options.workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    Registry registry(options.self_test);  // outlives the fake, whose thread calls it
    FakeProvider::Options fake_options;
    fake_options.keep_records = false;  // a long run must not grow this process
    FakeProvider fake(fake_options);
    fake.set_responder([&registry](const RequestRecord& request) { return registry.respond(request); });

    // Records go to a file: captured from stdout they would fill this
    // process's memory; at the end they are checked against the clients' view.
    TempDir dir("soak");
    const auto log = dir.path() / "records.jsonl";
    ProxyProcess::Options proxy_options;
    proxy_options.config_yaml = config(fake, bounds, options.clients);
    proxy_options.args = {"--log", log.string(), "--workers", std::to_string(options.workers)};
    ProxyProcess proxy(proxy_options);
    try {
        proxy.start();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "soak: the proxy did not start: %s\n", e.what());
        return 1;
    }

    Summary summary;
    summary.cold = settle(proxy, fake);
    Control control;
    Shared shared{options, bounds, cases, {}, {}, registry, control, proxy.port(),
                  std::vector<std::atomic<std::uint64_t>>(cases.size())};
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (cases[i].kinds != Kinds::stream) shared.plain_cases.push_back(i);
        if (cases[i].kinds != Kinds::plain) shared.stream_cases.push_back(i);
    }
    std::vector<ClientStats> stats(static_cast<std::size_t>(options.clients));
    std::vector<std::thread> threads;
    for (int i = 0; i < options.clients; ++i)
        threads.emplace_back([&, i] { client_loop(shared, i, stats[static_cast<std::size_t>(i)]); });

    const double load_s = options.minutes * 60.0;
    const double warmup_s = std::max(10.0, load_s * 0.05);
    std::fprintf(stderr, "soak: %d clients, fault rate %.2f, seed %llu; warm-up %.0f s, then %.1f min\n",
                 options.clients, options.fault_rate, static_cast<unsigned long long>(options.seed), warmup_s,
                 options.minutes);
    const auto warmup_start = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(warmup_s));

    // The baseline: clients parked with their connections closed.
    control.pause = true;
    control.wait_parked(options.clients);
    const auto paused_at = Clock::now();
    summary.baseline = settle(proxy, fake);
    std::fprintf(stderr, "soak: baseline %d fds (%d upstream conns), RSS %lld KiB after %llu turns\n",
                 summary.baseline.fds, summary.baseline.upstream, static_cast<long long>(summary.baseline.rss_kib),
                 static_cast<unsigned long long>(control.next_turn.load() - 1));
    control.resume();

    const auto load_start = Clock::now();
    const auto load_end = load_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(load_s));
    summary.rss_min_kib = summary.rss_max_kib = summary.baseline.rss_kib;
    auto next_progress = load_start + 30s;
    while (Clock::now() < load_end) {
        std::this_thread::sleep_for(std::min<Clock::duration>(1s, load_end - Clock::now()));
        if (const auto rss = proxy.rss_kib(); rss > 0) {
            summary.rss_min_kib = std::min(summary.rss_min_kib, rss);
            summary.rss_max_kib = std::max(summary.rss_max_kib, rss);
        }
        if (Clock::now() >= next_progress) {
            next_progress += 30s;
            std::fprintf(stderr, "soak: %.0f s of %.0f, %llu turns, RSS %lld KiB, %d fds\n",
                         std::chrono::duration<double>(Clock::now() - load_start).count(), load_s,
                         static_cast<unsigned long long>(control.next_turn.load() - 1),
                         static_cast<long long>(proxy.rss_kib()), proxy.open_fds());
        }
        if (!proxy.running()) break;
    }
    control.stop = true;
    control.resume();
    for (auto& t : threads) t.join();
    const auto stopped_at = Clock::now();
    summary.end = settle(proxy, fake);

    summary.load_s = load_s;
    summary.warmup_s = warmup_s;
    summary.active_s = std::chrono::duration<double>((paused_at - warmup_start) + (stopped_at - load_start)).count();
    summary.clients = options.clients;
    summary.workers = workers;
    summary.fault_rate = options.fault_rate;
    summary.seed = options.seed;
    summary.self_test = options.self_test;
    for (const auto& s : stats) summary.stats.merge(s);
    for (std::size_t i = 0; i < cases.size(); ++i) summary.per_case.emplace_back(cases[i].name, shared.per_case[i].load());
    summary.orphans = registry.orphans();
    summary.free_resends = registry.free_resends();
    const std::uint64_t issued = control.next_turn.load() - 1;
    summary.records = check_records(log, issued, summary.stats.successes, summary.stats.wrong_turns,
                                    summary.stats.resume_turns);
    summary.ran_through = proxy.running();
    // The resumes the proxy counted (docs/behaviour.md section 16), by
    // result: each must equal the turns of the resume case predicting it;
    // the routes without resume count none.
    if (summary.ran_through) {
        Response metrics;
        try {
            metrics = proxy.client().get("/metrics");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "soak: /metrics: %s\n", e.what());
        }
        summary.metrics_read = metrics.ok() && metrics.status == 200;
        for (const std::string_view result : resume_results) {
            ResumeCount count;
            count.result = std::string(result);
            for (std::size_t i = 0; i < cases.size(); ++i)
                if (cases[i].resume == result) {
                    count.cases += (count.cases.empty() ? "" : ", ") + cases[i].name;
                    count.turns += shared.per_case[i].load();
                }
            const auto series = [&](std::string_view route) {
                return "modelproxy_resumes_total{route=\"" + std::string(route) + "\",result=\"" + count.result + "\"}";
            };
            count.counted = metric_value(metrics.body, series(resume_route));
            for (const std::string_view route : {std::string_view("soak"), std::string_view("refused")})
                count.elsewhere += metric_value(metrics.body, series(route)).value_or(0);
            summary.resumes.push_back(std::move(count));
        }
    }
    if (!summary.ran_through)
        std::fprintf(stderr, "soak: the proxy exited during the run:\n%s\n", proxy.stderr_text().c_str());
    // The end of a deployment: SIGTERM, which an idle proxy answers by
    // draining and exiting 0. The clean exit also lets an instrumented build
    // write its profile (deploy/build trains the release build on this run).
    if (summary.ran_through && proxy.signal(SIGTERM)) summary.exit_code = proxy.wait_exit(std::chrono::seconds(15));
    const bool pass = print_summary(summary) && summary.ran_through && issued == summary.stats.turns;
    if (options.self_test && !registry.crosstalk_injected())
        std::fprintf(stderr, "soak: the self-test never injected its mistake (too few turns)\n");
    return pass ? 0 : 1;
}
