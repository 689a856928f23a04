// The real modelproxy binary as a child process, driven through its command
// line only (docs/behaviour.md section 2): serve with --config FILE --listen 127.0.0.1:0,
// stdout captured as JSON-lines records, stderr as human lines.
//
// Readiness contract: the proxy prints a stderr line containing
// `listening on <host>:<port>` once it accepts connections; start() takes the
// port from the first such line.
//
// Threading: the line accessors and waits may be called from any thread;
// start/signal/wait_exit/destruction from the test's main thread (see
// child_process.hpp for why).
#pragma once

#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/temp_dir.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::test {

// The built binary (MODELPROXY_BINARY) and the source tree.
std::filesystem::path modelproxy_binary();
std::filesystem::path source_dir();

class ProxyProcess {
public:
    struct Options {
        std::string config_yaml;                 // written to <tmp>/modelproxy.yaml, passed as --config;
                                                 // empty: no --config (embedded default)
        std::string listen = "127.0.0.1:0";      // passed as --listen; empty: none
        std::vector<std::string> args;           // appended after --config/--listen
        Environment env;                         // the child's whole environment: nothing is inherited
                                                 // (no OPENAI_API_KEY leaks in), see ChildProcess
        std::chrono::milliseconds start_timeout{10000};
        std::filesystem::path binary;            // empty: modelproxy_binary()
        std::vector<std::string> command;        // non-empty: the serve command instead of
                                                 // {binary} (e.g. {"/bin/sh", script})
    };

    explicit ProxyProcess(Options options);  // writes the config; does not start
    ~ProxyProcess();                         // SIGKILL (whole group), reap, join the readers
    ProxyProcess(const ProxyProcess&) = delete;
    ProxyProcess& operator=(const ProxyProcess&) = delete;

    // Spawns and waits (bounded by start_timeout) for the listening line.
    // Throws std::runtime_error when exec fails, the process exits first, or
    // the time runs out; the message carries the exit code and all stdout and
    // stderr captured so far.
    void start();

    std::uint16_t port() const { return port_; }
    const std::string& host() const { return host_; }
    pid_t pid() const;
    // What /proc says of the running proxy, for resource-bound tests: its
    // resident set size (VmRSS) in KiB and its open file descriptors (the
    // entries of /proc/<pid>/fd). -1 when the process is not running or
    // /proc cannot be read.
    std::int64_t rss_kib() const;
    int open_fds() const;
    const std::filesystem::path& config_path() const { return config_path_; }
    const TempDir& dir() const { return dir_; }
    // Atomically replaces the config file (then signal(SIGHUP) to reload).
    void write_config(std::string_view yaml);
    // A new connection to the proxy.
    HttpClient client(HttpClient::Options options = {}) const;

    std::vector<std::string> stdout_lines() const;
    std::vector<std::string> stderr_lines() const;
    std::string stderr_text() const;  // joined with '\n'
    // stdout lines parsed as records; unparseable lines go to *bad.
    std::vector<JsonRecord> records(std::vector<std::string>* bad = nullptr) const;

    // The first line (already captured or arriving within `timeout`) that
    // satisfies `pred`; nullopt on timeout or when the stream ended without one.
    std::optional<std::string> wait_for_stdout_line(const std::function<bool(const std::string&)>& pred,
                                                    std::chrono::milliseconds timeout) const;
    std::optional<std::string> wait_for_stderr_line(const std::function<bool(const std::string&)>& pred,
                                                    std::chrono::milliseconds timeout) const;
    std::optional<JsonRecord> wait_for_record(const std::function<bool(const JsonRecord&)>& pred,
                                              std::chrono::milliseconds timeout) const;
    // True once stdout holds at least n records with event == `event`.
    bool wait_for_records(std::string_view event, std::size_t n, std::chrono::milliseconds timeout) const;

    // Sends `sig` (SIGTERM, SIGHUP, SIGINT, ...) to the proxy; false if it is gone.
    bool signal(int sig);
    // Exit code (128 + n for a death by signal n); nullopt on timeout. Once it
    // returns a code, stdout_lines()/stderr_lines() hold everything the process
    // wrote (waits up to 2 s more for the pipes to drain, unless a child of the
    // process still holds them).
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);
    bool running();

private:
    struct Streams;
    Options options_;
    TempDir dir_;
    std::filesystem::path config_path_;
    std::unique_ptr<ChildProcess> child_;
    std::shared_ptr<Streams> streams_;
    std::uint16_t port_ = 0;
    std::string host_;
};

struct CommandResult {
    int exit_code = -1;      // 128 + n for a death by signal n; -1 when timed out
    std::string out;         // all of stdout
    std::string err;         // all of stderr
    bool timed_out = false;  // killed after `timeout`
};

// One-shot command (`modelproxy check --config F`, `--version`): runs
// `args` (args[0] a path or a name in the parent's PATH) with exactly `env`,
// feeds `stdin_data` (else /dev/null), collects both outputs, and kills the
// process group after `timeout`.
CommandResult run_command(const std::vector<std::string>& args, const Environment& env = {},
                          const std::optional<std::string>& stdin_data = std::nullopt,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds{10000});

// Shorthands the integration tests share.
// A started proxy serving `yaml`, with exactly `env` and `args` (appended
// after --config/--listen). Throws as ProxyProcess::start does.
std::unique_ptr<ProxyProcess> start_proxy(const std::string& yaml, Environment env = {},
                                          std::vector<std::string> args = {});
// The first turn record, already written or arriving within `timeout`.
std::optional<JsonRecord> turn_record(const ProxyProcess& proxy,
                                      std::chrono::milliseconds timeout = std::chrono::seconds{5});
// The attempt records written so far, in order.
std::vector<JsonRecord> attempt_records(const ProxyProcess& proxy);
// The value of the sample written exactly as `series` (name and labels) in
// a /metrics text, or nullopt.
std::optional<double> metric_value(const std::string& metrics, const std::string& series);

// run_command with modelproxy_binary() prepended to `args`.
CommandResult run_modelproxy(const std::vector<std::string>& args, const Environment& env = {},
                             std::chrono::milliseconds timeout = std::chrono::milliseconds{10000});

}  // namespace modelproxy::test
