#include "support/proxy_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifndef MODELPROXY_BINARY
#define MODELPROXY_BINARY "modelproxy"
#endif
#ifndef MODELPROXY_SOURCE_DIR
#define MODELPROXY_SOURCE_DIR "."
#endif

namespace modelproxy::test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// MODELPROXY_TEST_BINARY runs the tests against another build of the binary
// (deploy/test: the ThreadSanitizer build).
std::filesystem::path modelproxy_binary() {
    const char* other = std::getenv("MODELPROXY_TEST_BINARY");
    return other && *other ? std::filesystem::path(other) : std::filesystem::path(MODELPROXY_BINARY);
}
std::filesystem::path source_dir() { return MODELPROXY_SOURCE_DIR; }

namespace {

bool verbose() {
    const char* v = std::getenv("MODELPROXY_TEST_VERBOSE");
    return v && *v && std::string_view(v) != "0";
}

std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) {
        if (!out.empty()) out += '\n';
        out += l;
    }
    return out;
}

}  // namespace

// Captured output, filled by one reader thread per pipe.
struct ProxyProcess::Streams {
    mutable std::mutex mu;
    mutable std::condition_variable cv;
    std::vector<std::string> out;
    std::vector<std::string> err;
    bool out_done = false;
    bool err_done = false;
    std::thread out_reader;
    std::thread err_reader;

    void read_lines(int fd, bool is_err) {
        const bool echo = is_err && verbose();
        std::string partial;
        char buf[8192];
        for (;;) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            std::vector<std::string> complete;
            if (n > 0) {
                partial.append(buf, static_cast<std::size_t>(n));
                std::size_t start = 0, nl;
                while ((nl = partial.find('\n', start)) != std::string::npos) {
                    complete.push_back(partial.substr(start, nl - start));
                    start = nl + 1;
                }
                partial.erase(0, start);
            } else if (!partial.empty()) {
                complete.push_back(std::move(partial));
                partial.clear();
            }
            {
                std::lock_guard lock(mu);
                auto& lines = is_err ? err : out;
                for (auto& l : complete) {
                    if (echo) std::fprintf(stderr, "[modelproxy] %s\n", l.c_str());
                    lines.push_back(std::move(l));
                }
                if (n <= 0) (is_err ? err_done : out_done) = true;
            }
            cv.notify_all();
            if (n <= 0) return;
        }
    }

    void start(int out_fd, int err_fd) {
        out_reader = std::thread([this, out_fd] { read_lines(out_fd, false); });
        err_reader = std::thread([this, err_fd] { read_lines(err_fd, true); });
    }

    void join() {
        if (out_reader.joinable()) out_reader.join();
        if (err_reader.joinable()) err_reader.join();
    }

    // Waits for a line of `lines` (scanning from the start) that satisfies pred.
    std::optional<std::string> wait_line(const std::vector<std::string> Streams::*lines, const bool Streams::*done,
                                         const std::function<bool(const std::string&)>& pred,
                                         milliseconds timeout) const {
        std::unique_lock lock(mu);
        std::size_t scanned = 0;
        std::optional<std::string> found;
        cv.wait_for(lock, timeout, [&] {
            const auto& v = this->*lines;
            for (; scanned < v.size(); ++scanned)
                if (pred(v[scanned])) {
                    found = v[scanned];
                    return true;
                }
            return this->*done;
        });
        return found;
    }
};

ProxyProcess::ProxyProcess(Options options)
    : options_(std::move(options)), dir_("proxy"), streams_(std::make_shared<Streams>()) {
    if (!options_.config_yaml.empty()) config_path_ = dir_.write("modelproxy.yaml", options_.config_yaml);
}

ProxyProcess::~ProxyProcess() {
    if (child_) {
        // Kill the whole group even when the leader was reaped: a straggler
        // holding the pipes would keep the readers from ever finishing.
        child_->kill_group();
        child_->wait(milliseconds{10000});
    }
    streams_->join();
}

void ProxyProcess::write_config(std::string_view yaml) { config_path_ = dir_.write("modelproxy.yaml", yaml); }

void ProxyProcess::start() {
    if (child_) throw std::runtime_error("ProxyProcess: already started");
    ChildProcess::Spec spec;
    if (!options_.command.empty())
        spec.argv = options_.command;
    else
        spec.argv = {(options_.binary.empty() ? modelproxy_binary() : options_.binary).string()};
    if (!config_path_.empty()) spec.argv.insert(spec.argv.end(), {"--config", config_path_.string()});
    if (!options_.listen.empty()) spec.argv.insert(spec.argv.end(), {"--listen", options_.listen});
    spec.argv.insert(spec.argv.end(), options_.args.begin(), options_.args.end());
    spec.env = options_.env;
    child_ = std::make_unique<ChildProcess>(spec);
    streams_->start(child_->stdout_fd(), child_->stderr_fd());

    static const std::regex listening(R"(listening on (\[[^\]]*\]|[^\s:]+):([0-9]+))");
    const auto deadline = Clock::now() + options_.start_timeout;
    std::size_t scanned = 0;
    std::string command_line;
    for (const auto& a : spec.argv) command_line += (command_line.empty() ? "" : " ") + a;
    auto failure = [this, &command_line](const std::string& what) {
        std::lock_guard lock(streams_->mu);
        return std::runtime_error("ProxyProcess: " + what + "\n--- command: " + command_line +
                                  "\n--- stderr:\n" + join(streams_->err) + "\n--- stdout:\n" + join(streams_->out));
    };
    for (;;) {
        {
            std::unique_lock lock(streams_->mu);
            streams_->cv.wait_for(lock, milliseconds{20}, [&] { return streams_->err.size() > scanned; });
            for (; scanned < streams_->err.size(); ++scanned) {
                std::smatch m;
                if (std::regex_search(streams_->err[scanned], m, listening)) {
                    const long port = std::stol(m[2].str());
                    if (port <= 0 || port > 65535) continue;
                    host_ = m[1].str();
                    port_ = static_cast<std::uint16_t>(port);
                    return;
                }
            }
        }
        if (auto code = child_->try_reap()) {
            // Let the readers drain what the process wrote before it exited.
            std::unique_lock lock(streams_->mu);
            streams_->cv.wait_for(lock, milliseconds{1000}, [&] { return streams_->out_done && streams_->err_done; });
            lock.unlock();
            throw failure("process exited with code " + std::to_string(*code) +
                          " before printing `listening on HOST:PORT`");
        }
        if (Clock::now() >= deadline)
            throw failure("no `listening on HOST:PORT` line on stderr within " +
                          std::to_string(options_.start_timeout.count()) + " ms");
    }
}

pid_t ProxyProcess::pid() const { return child_ ? child_->pid() : -1; }

std::int64_t ProxyProcess::rss_kib() const {
    if (!child_) return -1;
    std::ifstream status("/proc/" + std::to_string(child_->pid()) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        // "VmRSS:\t   12345 kB"
        if (!line.starts_with("VmRSS:")) continue;
        try {
            return std::stoll(line.substr(6));
        } catch (const std::exception&) {
            return -1;
        }
    }
    return -1;
}

int ProxyProcess::open_fds() const {
    if (!child_) return -1;
    std::error_code ec;
    std::filesystem::directory_iterator it("/proc/" + std::to_string(child_->pid()) + "/fd", ec);
    if (ec) return -1;
    int n = 0;
    for (const auto& entry : it) {
        (void)entry;
        ++n;
    }
    return n;
}

HttpClient ProxyProcess::client(HttpClient::Options options) const { return HttpClient(port_, std::move(options)); }

std::vector<std::string> ProxyProcess::stdout_lines() const {
    std::lock_guard lock(streams_->mu);
    return streams_->out;
}

std::vector<std::string> ProxyProcess::stderr_lines() const {
    std::lock_guard lock(streams_->mu);
    return streams_->err;
}

std::string ProxyProcess::stderr_text() const { return join(stderr_lines()); }

std::vector<JsonRecord> ProxyProcess::records(std::vector<std::string>* bad) const {
    return parse_records(stdout_lines(), bad);
}

std::optional<std::string> ProxyProcess::wait_for_stdout_line(const std::function<bool(const std::string&)>& pred,
                                                              milliseconds timeout) const {
    return streams_->wait_line(&Streams::out, &Streams::out_done, pred, timeout);
}

std::optional<std::string> ProxyProcess::wait_for_stderr_line(const std::function<bool(const std::string&)>& pred,
                                                              milliseconds timeout) const {
    return streams_->wait_line(&Streams::err, &Streams::err_done, pred, timeout);
}

std::optional<JsonRecord> ProxyProcess::wait_for_record(const std::function<bool(const JsonRecord&)>& pred,
                                                        milliseconds timeout) const {
    std::optional<JsonRecord> found;
    wait_for_stdout_line(
        [&](const std::string& line) {
            auto r = JsonRecord::parse(line);
            if (r && pred(*r)) {
                found = std::move(r);
                return true;
            }
            return false;
        },
        timeout);
    return found;
}

bool ProxyProcess::wait_for_records(std::string_view event, std::size_t n, milliseconds timeout) const {
    std::size_t seen = 0;
    return wait_for_stdout_line(
               [&](const std::string& line) {
                   auto r = JsonRecord::parse(line);
                   return r && r->event() == event && ++seen >= n;
               },
               timeout)
        .has_value();
}

bool ProxyProcess::signal(int sig) { return child_ && child_->signal(sig); }

std::optional<int> ProxyProcess::wait_exit(milliseconds timeout) {
    if (!child_) return std::nullopt;
    const auto code = child_->wait(timeout);
    if (code) {
        // The process is gone, but its last lines may still sit in the pipes:
        // let the readers reach EOF so that the captured output is complete.
        std::unique_lock lock(streams_->mu);
        streams_->cv.wait_for(lock, milliseconds{2000}, [&] { return streams_->out_done && streams_->err_done; });
    }
    return code;
}

bool ProxyProcess::running() { return child_ && !child_->try_reap(); }

// ---------------------------------------------------------------------------

namespace {

// Writes to a pipe whose reader may be gone, without SIGPIPE killing the
// test: SIGPIPE is thread-directed, so blocking it here and consuming a
// pending one is enough (no process-wide disposition change).
ssize_t write_no_sigpipe(int fd, const char* data, std::size_t size) {
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    const ssize_t n = ::write(fd, data, size);
    const int err = errno;
    if (n < 0 && err == EPIPE) {
        timespec zero{};
        sigtimedwait(&pipe_set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = err;
    return n;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& args, const Environment& env,
                          const std::optional<std::string>& stdin_data, milliseconds timeout) {
    ChildProcess child({args, env, stdin_data.has_value()});
    const auto deadline = Clock::now() + timeout;
    CommandResult result;
    std::size_t written = 0;
    if (stdin_data) ::fcntl(child.stdin_fd(), F_SETFL, ::fcntl(child.stdin_fd(), F_GETFL) | O_NONBLOCK);
    if (stdin_data && stdin_data->empty()) child.close_stdin();
    bool out_open = true, err_open = true;
    char buf[8192];
    while (out_open || err_open) {
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) break;
        pollfd fds[3];
        nfds_t count = 0;
        int out_i = -1, err_i = -1, in_i = -1;
        if (out_open) fds[out_i = count++] = {child.stdout_fd(), POLLIN, 0};
        if (err_open) fds[err_i = count++] = {child.stderr_fd(), POLLIN, 0};
        if (child.stdin_fd() >= 0) fds[in_i = count++] = {child.stdin_fd(), POLLOUT, 0};
        if (::poll(fds, count, static_cast<int>(std::min<long long>(left, 100))) < 0 && errno != EINTR) break;
        auto drain = [&](int i, int fd, std::string& into, bool& open) {
            if (i < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) return;
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0)
                into.append(buf, static_cast<std::size_t>(n));
            else if (n == 0 || errno != EINTR)
                open = false;
        };
        drain(out_i, child.stdout_fd(), result.out, out_open);
        drain(err_i, child.stderr_fd(), result.err, err_open);
        if (in_i >= 0 && (fds[in_i].revents & (POLLOUT | POLLERR | POLLHUP))) {
            const ssize_t n = write_no_sigpipe(child.stdin_fd(), stdin_data->data() + written,
                                               stdin_data->size() - written);
            if (n > 0) written += static_cast<std::size_t>(n);
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == stdin_data->size()) child.close_stdin();
        }
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (auto code = child.wait(std::max(left, milliseconds{0}))) {
        result.exit_code = *code;
    } else {
        child.kill_group();
        child.wait(milliseconds{5000});
        result.timed_out = true;
        result.exit_code = -1;
    }
    return result;
}

CommandResult run_modelproxy(const std::vector<std::string>& args, const Environment& env, milliseconds timeout) {
    std::vector<std::string> all{modelproxy_binary().string()};
    all.insert(all.end(), args.begin(), args.end());
    return run_command(all, env, std::nullopt, timeout);
}

std::unique_ptr<ProxyProcess> start_proxy(const std::string& yaml, Environment env,
                                          std::vector<std::string> args) {
    ProxyProcess::Options options;
    options.config_yaml = yaml;
    options.env = std::move(env);
    options.args = std::move(args);
    auto proxy = std::make_unique<ProxyProcess>(std::move(options));
    proxy->start();
    return proxy;
}

std::optional<JsonRecord> turn_record(const ProxyProcess& proxy, std::chrono::milliseconds timeout) {
    return proxy.wait_for_record([](const JsonRecord& r) { return r.event() == "turn"; }, timeout);
}

std::vector<JsonRecord> attempt_records(const ProxyProcess& proxy) {
    std::vector<JsonRecord> attempts;
    for (auto& record : proxy.records())
        if (record.event() == "attempt") attempts.push_back(std::move(record));
    return attempts;
}

std::optional<double> metric_value(const std::string& metrics, const std::string& series) {
    std::istringstream in(metrics);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return std::nullopt;
}

}  // namespace modelproxy::test
