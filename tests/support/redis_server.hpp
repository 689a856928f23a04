// A real `redis-server` (docs/behaviour.md section 15: tests use the real
// server, never a stand-in) on a free 127.0.0.1 port, in a temporary
// directory, with no persistence (`--save "" --appendonly no`), optionally
// with a password (`--requirepass`) and a TLS port besides the plain one.
// The constructor returns once the server answers PING on its plain port
// (hiredis's blocking client asks); the destructor stops it.
//
// For "Redis down" tests: stop() and start() again on the same ports (the
// data is gone: nothing is persisted), pause() and resume() freeze and thaw
// the process (SIGSTOP, SIGCONT): its sockets stay open and accept
// connections, but nothing is answered.
//
// Start it from the test's main thread (child_process.hpp). Not thread-safe.
#pragma once

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace modelproxy::test {

class RedisServer {
public:
    struct Tls {
        std::filesystem::path cert_file;  // the server's certificate (PEM)
        std::filesystem::path key_file;
        std::filesystem::path ca_file;    // Redis wants one; clients are not asked for certificates
    };
    struct Options {
        std::string password;    // non-empty: --requirepass
        std::optional<Tls> tls;  // set: also a TLS port (tls_port())
    };

    // Throws std::runtime_error (with the server's log) when it does not
    // start or answer within 10 s.
    explicit RedisServer(Options options = {});
    ~RedisServer();
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    std::uint16_t port() const { return port_; }
    std::uint16_t tls_port() const { return tls_port_; }  // 0 without Options::tls
    // redis://127.0.0.1:<port>/<db> (rediss:// and the TLS port with `tls`).
    std::string url(int db = 0, bool tls = false) const;

    // Kills the server (SIGKILL) and waits until it is gone: its ports
    // refuse connections. A no-op when stopped.
    void stop();
    // Starts it again on the same ports and waits for PING; a no-op when
    // running.
    void start();
    bool running() const { return process_ != nullptr; }

    // SIGSTOP / SIGCONT.
    void pause();
    void resume();

    // The server's log so far (for a failing test's message).
    std::string log() const;

private:
    Options options_;
    TempDir dir_{"redis"};
    std::uint16_t port_ = 0;
    std::uint16_t tls_port_ = 0;
    std::unique_ptr<ChildProcess> process_;
};

}  // namespace modelproxy::test
