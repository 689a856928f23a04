// One freshly started modelproxy for one row of the simulation: its config
// written to a file, `modelproxy check` first, then the serve command with
// --listen 127.0.0.1:0, the port taken from its `listening on` line, and
// ready once GET /readyz answers 200. Its stdout records are kept with the
// time each line arrived (the records carry no clock), so that a breaker
// transition can be placed on the run's time axis. The child is killed with
// its process group when this object goes, and by the kernel when the
// driver dies (support/child_process.hpp).
#pragma once

#include "outage/timeline.hpp"
#include "support/child_process.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::outage {

struct BreakerEvent {
    double at_ms = 0;  // since t0, when the line arrived
    std::string route, model, from, to, reason;
    long open_ms = 0;
};

// The breaker records among `lines`, each with its arrival time.
std::vector<BreakerEvent> breaker_events(const std::vector<std::pair<double, std::string>>& lines);

class ProxyRun {
public:
    ProxyRun(std::filesystem::path binary, std::filesystem::path config, int workers);
    ~ProxyRun();
    ProxyRun(const ProxyRun&) = delete;
    ProxyRun& operator=(const ProxyRun&) = delete;

    // `modelproxy check --config FILE`: nullopt when valid, else its output.
    std::optional<std::string> check() const;
    // Starts and waits (10 s at most) for the listening line and a 200 from
    // /readyz. Returns "" when ready, else why not (with the stderr lines).
    std::string start();
    std::uint16_t port() const { return port_; }
    // Times of the stdout lines count from t0 (lines before it are negative).
    void set_start(Clock::time_point t0);
    // SIGTERM, then the process group's SIGKILL if it has not exited in 5 s.
    // Returns the exit code. Idempotent.
    std::optional<int> stop();

    std::vector<std::pair<double, std::string>> stdout_lines() const;  // (ms since t0, line)
    std::vector<std::string> stderr_lines() const;

private:
    struct Output;
    std::filesystem::path binary_, config_;
    int workers_;
    std::unique_ptr<test::ChildProcess> child_;
    std::shared_ptr<Output> output_;
    std::uint16_t port_ = 0;
    std::optional<int> exit_code_;
};

}  // namespace modelproxy::outage
