#include "support/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace modelproxy::test {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

std::string resolve(const std::string& name) {
    if (name.find('/') != std::string::npos) return name;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        std::size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
        start = end + 1;
    }
    return name;  // execve reports ENOENT
}

int decode(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

}  // namespace

ChildProcess::ChildProcess(const Spec& spec) {
    if (spec.argv.empty()) throw std::runtime_error("ChildProcess: empty argv");

    // Everything the child needs is prepared before fork: between fork and
    // exec only async-signal-safe calls are allowed (the parent has threads).
    const std::string path = resolve(spec.argv[0]);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"})
        if (const char* v = std::getenv(name); v && !spec.env.count(name))
            env_strings.push_back(std::string(name) + "=" + v);
    std::vector<char*> argv, envp;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);

    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
    auto cleanup = [&] {
        for (int* p : {in, out, err, status}) {
            close_fd(p[0]);
            close_fd(p[1]);
        }
    };
    bool ok = ::pipe2(out, O_CLOEXEC) == 0 && ::pipe2(err, O_CLOEXEC) == 0 && ::pipe2(status, O_CLOEXEC) == 0;
    if (ok) {
        if (spec.pipe_stdin)
            ok = ::pipe2(in, O_CLOEXEC) == 0;
        else
            ok = (in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;
    }
    if (!ok) {
        const int e = errno;
        cleanup();
        throw std::runtime_error("ChildProcess: pipe: " + errno_text(e));
    }
    const long max_fd = ::sysconf(_SC_OPEN_MAX);
    const pid_t parent = ::getpid();

    const pid_t pid = ::fork();
    if (pid < 0) {
        const int e = errno;
        cleanup();
        throw std::runtime_error("ChildProcess: fork: " + errno_text(e));
    }
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);
        // Default dispositions and an empty mask, as a fresh program expects
        // (the test runner may ignore SIGPIPE or block signals).
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(err[1], 2) < 0 || ::dup2(status[1], 3) < 0)
            ::_exit(127);
        ::fcntl(3, F_SETFD, FD_CLOEXEC);
        // No other descriptor of the test process (sockets above all) may
        // leak into the child: it would keep connections half-alive.
        if (::syscall(SYS_close_range, 4u, ~0u, 0u) != 0)
            for (long fd = 4; fd < max_fd; ++fd) ::close(static_cast<int>(fd));
        ::execve(path.c_str(), argv.data(), envp.data());
        const int e = errno;
        [[maybe_unused]] auto n = ::write(3, &e, sizeof e);
        ::_exit(127);
    }

    pid_ = pid;
    close_fd(in[0]);
    close_fd(out[1]);
    close_fd(err[1]);
    close_fd(status[1]);
    stdin_fd_ = in[1];
    stdout_fd_ = out[0];
    stderr_fd_ = err[0];

    int exec_errno = 0;
    ssize_t n;
    do n = ::read(status[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    close_fd(status[0]);
    if (n == static_cast<ssize_t>(sizeof exec_errno)) {
        wait(std::chrono::milliseconds{5000});
        close_fd(stdin_fd_);
        close_fd(stdout_fd_);
        close_fd(stderr_fd_);
        throw std::runtime_error("ChildProcess: exec " + path + ": " + errno_text(exec_errno));
    }
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !exit_code_) {
        kill_group();
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
    close_fd(stdin_fd_);
    close_fd(stdout_fd_);
    close_fd(stderr_fd_);
}

void ChildProcess::close_stdin() { close_fd(stdin_fd_); }

bool ChildProcess::signal(int sig) {
    if (pid_ <= 0 || exit_code_) return false;
    return ::kill(pid_, sig) == 0;
}

void ChildProcess::kill_group() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);  // the group (setpgid in the child)
    if (!exit_code_) ::kill(pid_, SIGKILL);  // in case setpgid had not run yet
}

std::optional<int> ChildProcess::try_reap() {
    if (exit_code_ || pid_ <= 0) return exit_code_;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) exit_code_ = decode(status);
    return exit_code_;
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (try_reap()) return exit_code_;
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
}

}  // namespace modelproxy::test
