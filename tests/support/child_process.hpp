// fork+execve of a test child with piped stdout/stderr (and optionally stdin)
// and an explicit environment. The child runs in its own process group and
// gets SIGKILL if the thread that started it exits (PR_SET_PDEATHSIG), so a
// crashed or killed test run leaves no proxy behind. Start children from the
// test's main thread: a worker thread's exit would kill them.
//
// Not thread-safe; one owner thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::test {

using Environment = std::map<std::string, std::string>;

class ChildProcess {
public:
    struct Spec {
        std::vector<std::string> argv;  // argv[0]: a path, or a name searched in the parent's PATH
        Environment env;                // the child's whole environment (see below)
        bool pipe_stdin = false;        // else stdin is /dev/null
    };

    // Spawns. The child's environment is exactly `env`, plus ASAN_OPTIONS,
    // UBSAN_OPTIONS, LSAN_OPTIONS and TSAN_OPTIONS from the parent when set
    // there and not in `env` (they configure the build, not the program:
    // deploy/test's TSan pass sets halt_on_error and the reports' path
    // there, and a proxy without them went on after a report and wrote it
    // only to its own stderr). Throws
    // std::runtime_error when it cannot spawn or exec fails (with errno text).
    explicit ChildProcess(const Spec& spec);
    ~ChildProcess();  // kill_group(), reap, close the pipes
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return pid_; }
    int stdin_fd() const { return stdin_fd_; }
    int stdout_fd() const { return stdout_fd_; }
    int stderr_fd() const { return stderr_fd_; }
    void close_stdin();

    // Sends `sig` to the child alone; false once it has been reaped.
    bool signal(int sig);
    // SIGKILL to the whole process group (the child and anything it started).
    void kill_group();

    // Exit code once reaped: the status for a normal exit, 128 + signal
    // number for a signal death (the shell convention).
    std::optional<int> exit_code() const { return exit_code_; }
    std::optional<int> try_reap();
    std::optional<int> wait(std::chrono::milliseconds timeout);

private:
    pid_t pid_ = -1;
    int stdin_fd_ = -1;
    int stdout_fd_ = -1;
    int stderr_fd_ = -1;
    std::optional<int> exit_code_;
};

}  // namespace modelproxy::test
