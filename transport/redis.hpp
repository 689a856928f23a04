// The Redis client of the fleet (docs/behaviour.md section 15): one
// connection per client, made on the first call (TCP; for rediss:// TLS
// verified like an upstream's, tls_io.hpp on the connection's own socket),
// then AUTH when a password or user is given and SELECT when the db is not 0,
// then commands pipelined: each call's command is written as soon as it is
// made, and replies are matched to calls in the order they were sent.
//
// hiredis does the protocol, nothing else: redisFormatCommandArgv writes a
// command's bytes and its reader (redisReaderCreate, redisReaderFeed,
// redisReaderGetReply, freeReplyObject) reads replies; the bytes travel over
// the project's own socket on the caller's executor. Callers see only
// RedisResult, a copy of each reply.
//
// Failures are values, never exceptions:
//   - a call slower than its timeout fails, and the connection is closed
//     (its later replies would answer the wrong calls); the next call makes
//     a new one, as does a call after any other failure of the connection.
//     A call that times out before the connection is made (connected, TLS
//     done) takes its command back unsent, and the connection goes on being
//     made, within RedisOptions::connect_timeout, for the calls after it;
//   - a refused, closed or reset connection, a TLS failure, AUTH or SELECT
//     refused: every call waiting on that connection fails at once, with a
//     sentence saying which;
//   - an error reply (`-ERR ...`, `-NOSCRIPT ...`) is an answer, not a
//     failure of the connection: Kind::error.
// Kind::failed is what section 15 counts as a failed or slow Redis call.
//
// One reply per command: not for SUBSCRIBE, MONITOR or `HELLO 3` (RESP3),
// which hiredis 0.14's reader does not read.
//
// Threading: a client and its calls belong to one executor (one thread);
// nothing is locked. The client must outlive the calls made on it.
#pragma once

#include "transport/executor.hpp"
#include "transport/redis_url.hpp"

#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::transport {

// One Redis reply, copied out of hiredis's, or why there is none.
struct RedisResult {
    enum class Kind {
        failed,   // no reply: timeout, connect/TLS/AUTH/SELECT failure, connection closed
        error,    // an error reply; `text` is Redis's message (`ERR ...`, `NOSCRIPT ...`)
        nil,      // a nil bulk string or nil array
        integer,  // `integer`
        string,   // a bulk string or a status reply (`OK`, `PONG`) in `text`
        array,    // `elements`
    };
    Kind kind = Kind::nil;
    long long integer = 0;
    std::string text;                   // failed: the reason; error: the message; string: the bytes
    std::vector<RedisResult> elements;  // array

    bool failed() const { return kind == Kind::failed; }
    // An answer that is neither a failure nor an error reply.
    bool ok() const { return kind != Kind::failed && kind != Kind::error; }

    static RedisResult failure(std::string why);
};

// How to reach one Redis server.
struct RedisOptions {
    RedisUrl url;
    // Sent with AUTH (`AUTH [user] password`); empty with no user in the
    // URL: no AUTH. Never logged, never part of an error text.
    std::string password;
    // Required for rediss:// (make_tls_context in upstream.hpp, from
    // fleet.tls: the system trust store or a CA file); unused for redis://.
    // The server's name is sent as SNI and required in its certificate; an
    // IP address is required among its IP SANs.
    std::shared_ptr<boost::asio::ssl::context> tls;
    // Resolve, connect and TLS handshake together; past it the connection
    // fails, and the calls waiting on it with it.
    std::chrono::milliseconds connect_timeout{2000};
};

// A Lua script and its SHA-1 (hex, as EVALSHA wants it).
struct RedisScript {
    explicit RedisScript(std::string source);
    std::string source;
    std::string sha1;
};

class RedisClient {
public:
    RedisClient(Executor executor, RedisOptions options);
    // Closes the connection; calls still waiting on it fail.
    ~RedisClient();
    RedisClient(const RedisClient&) = delete;
    RedisClient& operator=(const RedisClient&) = delete;

    // Sends one command (`args[0]` the command's name, binary-safe
    // arguments) and waits for its reply, at most `timeout` (connecting
    // included when this call makes the connection). From inside a
    // coroutine, name the vector first: GCC 12 does not compile a braced
    // list of strings as a coroutine call's argument there.
    Task<RedisResult> call(std::vector<std::string> args, std::chrono::milliseconds timeout);

    // EVALSHA of `script` with `keys` and `args`; when Redis does not know
    // the script (NOSCRIPT: a restart, SCRIPT FLUSH, a failover) EVAL with
    // its source, which also loads it for the next EVALSHA. Both within one
    // `timeout`. `script` must outlive the call (a constant, in practice).
    Task<RedisResult> eval_script(const RedisScript& script, std::vector<std::string> keys,
                                  std::vector<std::string> args, std::chrono::milliseconds timeout);

    // Drops the connection now (calls waiting on it fail); the next call
    // makes a new one.
    void close();

    // Whether a connection is made (connected, TLS done) and open.
    bool connected() const;
    // How many connections this client has started, the first included.
    std::uint64_t connections_made() const { return connections_made_; }
    const RedisOptions& options() const { return options_; }

    struct Link;  // one connection and the calls waiting on it (redis.cpp)

private:
    Task<RedisResult> call_until(std::vector<std::string> args, std::chrono::steady_clock::time_point deadline,
                                 std::chrono::milliseconds timeout);
    std::shared_ptr<Link> link();

    Executor executor_;
    RedisOptions options_;
    std::shared_ptr<Link> link_;
    std::uint64_t connections_made_ = 0;
};

}  // namespace modelproxy::transport
