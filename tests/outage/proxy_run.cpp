#include "outage/proxy_run.hpp"

#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <thread>

namespace modelproxy::outage {

using namespace std::chrono_literals;

std::vector<BreakerEvent> breaker_events(const std::vector<std::pair<double, std::string>>& lines) {
    std::vector<BreakerEvent> events;
    for (const auto& [at, line] : lines) {
        if (line.find("\"breaker\"") == std::string::npos) continue;
        const auto record = test::JsonRecord::parse(line);
        if (!record || record->event() != "breaker") continue;
        events.push_back(BreakerEvent{at, record->str("route").value_or(""), record->str("model").value_or(""),
                                      record->str("from").value_or(""), record->str("to").value_or(""),
                                      record->str("reason").value_or(""),
                                      static_cast<long>(record->integer("open_ms").value_or(0))});
    }
    return events;
}

// The child's two pipes, read line by line by a thread each; every stdout
// line keeps the moment it arrived.
struct ProxyRun::Output {
    mutable std::mutex mu;
    std::condition_variable cv;
    Clock::time_point t0 = Clock::now();
    std::vector<std::pair<Clock::time_point, std::string>> out;
    std::vector<std::string> err;
    std::thread out_reader, err_reader;

    void read_lines(int fd, bool is_err) {
        std::string partial;
        char buf[16384];
        for (;;) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            const auto now = Clock::now();
            if (n > 0) partial.append(buf, static_cast<std::size_t>(n));
            std::lock_guard lock(mu);
            std::size_t start = 0, nl;
            while ((nl = partial.find('\n', start)) != std::string::npos) {
                std::string line = partial.substr(start, nl - start);
                if (is_err) err.push_back(std::move(line));
                else out.emplace_back(now, std::move(line));
                start = nl + 1;
            }
            partial.erase(0, start);
            cv.notify_all();
            if (n <= 0) return;
        }
    }
    void join() {
        if (out_reader.joinable()) out_reader.join();
        if (err_reader.joinable()) err_reader.join();
    }
};

ProxyRun::ProxyRun(std::filesystem::path binary, std::filesystem::path config, int workers)
    : binary_(std::move(binary)), config_(std::move(config)), workers_(workers), output_(std::make_shared<Output>()) {}

ProxyRun::~ProxyRun() {
    if (child_) {
        child_->kill_group();
        child_->wait(10000ms);
    }
    output_->join();
}

std::optional<std::string> ProxyRun::check() const {
    const auto result = test::run_command({binary_.string(), "check", "--config", config_.string()});
    if (result.exit_code == 0) return std::nullopt;
    return result.out + result.err + (result.timed_out ? "(check timed out)\n" : "");
}

std::string ProxyRun::start() {
    test::ChildProcess::Spec spec;
    spec.argv = {binary_.string(), "--config", config_.string(), "--listen", "127.0.0.1:0", "--workers",
                 std::to_string(workers_)};
    child_ = std::make_unique<test::ChildProcess>(spec);
    output_->out_reader = std::thread([o = output_, fd = child_->stdout_fd()] { o->read_lines(fd, false); });
    output_->err_reader = std::thread([o = output_, fd = child_->stderr_fd()] { o->read_lines(fd, true); });

    const auto stderr_text = [this] {
        std::string text;
        for (const auto& line : stderr_lines()) text += "    " + line + "\n";
        return text;
    };
    static const std::regex listening(R"(listening on [^\s]*:([0-9]+))");
    const auto deadline = Clock::now() + 10s;
    while (port_ == 0) {
        {
            std::unique_lock lock(output_->mu);
            output_->cv.wait_for(lock, 20ms);
            for (const auto& line : output_->err) {
                std::smatch m;
                if (std::regex_search(line, m, listening)) port_ = static_cast<std::uint16_t>(std::stoi(m[1].str()));
            }
        }
        if (port_ != 0) break;
        if (auto code = child_->try_reap()) {
            std::this_thread::sleep_for(200ms);  // let the readers take the last lines
            return "exited with code " + std::to_string(*code) + " before listening:\n" + stderr_text();
        }
        if (Clock::now() >= deadline) return "no `listening on` line within 10 s:\n" + stderr_text();
    }
    // Ready: /readyz answers 200 (docs/behaviour.md section 4).
    while (Clock::now() < deadline) {
        try {
            test::HttpClient client(port_, {.connect_timeout = 1000ms, .timeout = 1000ms});
            if (client.get("/readyz").status == 200) return "";
        } catch (const std::exception&) {
            // not accepting yet
        }
        if (child_->try_reap()) return "exited before /readyz answered 200:\n" + stderr_text();
        std::this_thread::sleep_for(20ms);
    }
    return "/readyz did not answer 200 within 10 s:\n" + stderr_text();
}

void ProxyRun::set_start(Clock::time_point t0) {
    std::lock_guard lock(output_->mu);
    output_->t0 = t0;
}

std::optional<int> ProxyRun::stop() {
    if (!child_) return exit_code_;
    if (!exit_code_) {
        child_->signal(SIGTERM);
        exit_code_ = child_->wait(5000ms);
        if (!exit_code_) {
            child_->kill_group();
            child_->wait(5000ms);
        }
    }
    output_->join();
    return exit_code_;
}

std::vector<std::pair<double, std::string>> ProxyRun::stdout_lines() const {
    std::lock_guard lock(output_->mu);
    std::vector<std::pair<double, std::string>> lines;
    lines.reserve(output_->out.size());
    for (const auto& [at, line] : output_->out) lines.emplace_back(ms_since(output_->t0, at), line);
    return lines;
}

std::vector<std::string> ProxyRun::stderr_lines() const {
    std::lock_guard lock(output_->mu);
    return output_->err;
}

}  // namespace modelproxy::outage
