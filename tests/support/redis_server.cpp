#include "support/redis_server.hpp"

#include "support/ports.hpp"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace modelproxy::test {

namespace {

// Whether a server answers PING on 127.0.0.1:port: PONG, or NOAUTH from a
// server with a password (it answers; it wants AUTH first).
bool answers_ping(std::uint16_t port) {
    const timeval limit{0, 200000};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, limit);
    if (c == nullptr) return false;
    bool ok = false;
    if (c->err == 0) {
        redisSetTimeout(c, limit);
        auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
        if (reply != nullptr) {
            const std::string text(reply->str ? reply->str : "", reply->str ? reply->len : 0);
            ok = (reply->type == REDIS_REPLY_STATUS && text == "PONG") ||
                 (reply->type == REDIS_REPLY_ERROR && text.starts_with("NOAUTH"));
            freeReplyObject(reply);
        }
    }
    redisFree(c);
    return ok;
}

// What a child that exited wrote to stderr (a bad option is reported there,
// before the log file is opened).
std::string drain(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0 || out.size() > 65536) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

}  // namespace

RedisServer::RedisServer(Options options) : options_(std::move(options)) {
    port_ = unused_port();
    if (options_.tls) tls_port_ = unused_port();
    start();
}

RedisServer::~RedisServer() { stop(); }

std::string RedisServer::url(int db, bool tls) const {
    return std::string(tls ? "rediss" : "redis") + "://127.0.0.1:" + std::to_string(tls ? tls_port_ : port_) + "/" +
           std::to_string(db);
}

std::string RedisServer::log() const {
    try {
        return read_file(dir_.path() / "redis.log");
    } catch (const std::exception&) {
        return {};
    }
}

void RedisServer::start() {
    if (process_) return;
    std::vector<std::string> argv = {"redis-server", "--port",      std::to_string(port_),
                                     "--bind",       "127.0.0.1",   "--save",
                                     "",             "--appendonly", "no",
                                     "--dir",        dir_.path(),   "--logfile",
                                     dir_.path() / "redis.log",     "--daemonize", "no"};
    if (!options_.password.empty()) {
        argv.push_back("--requirepass");
        argv.push_back(options_.password);
    }
    if (options_.tls) {
        argv.push_back("--tls-port");
        argv.push_back(std::to_string(tls_port_));
        for (const auto& [flag, path] : {std::pair{"--tls-cert-file", options_.tls->cert_file},
                                         std::pair{"--tls-key-file", options_.tls->key_file},
                                         std::pair{"--tls-ca-cert-file", options_.tls->ca_file}}) {
            argv.push_back(flag);
            argv.push_back(path);
        }
        argv.push_back("--tls-auth-clients");
        argv.push_back("no");
    }
    process_ = std::make_unique<ChildProcess>(ChildProcess::Spec{.argv = argv, .env = {}});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        if (process_->try_reap()) {
            const std::string err = drain(process_->stderr_fd());
            process_.reset();
            throw std::runtime_error("redis-server exited at start: " + err + log());
        }
        if (answers_ping(port_)) return;
        if (std::chrono::steady_clock::now() >= deadline) {
            process_.reset();
            throw std::runtime_error("redis-server did not answer PING within 10 s: " + log());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

void RedisServer::stop() {
    if (!process_) return;
    process_->signal(SIGCONT);  // a paused server dies as well, but reap it running
    process_.reset();           // SIGKILL to the group, reaped
}

void RedisServer::pause() {
    if (process_) process_->signal(SIGSTOP);
}

void RedisServer::resume() {
    if (process_) process_->signal(SIGCONT);
}

}  // namespace modelproxy::test
