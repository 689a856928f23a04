// The connection of redis.hpp's client: a Link is one connection and the
// calls waiting on it, shared by the coroutines that use it (the connect,
// the reader, the writer, each waiting call), so it lives as long as any of
// them, and a closed Link is never reused: the next call makes a new one.
//
// A call appends its command to the Link's output and waits on its own timer
// until its deadline; the reader, given the reply, stores it in the call's
// slot and cancels that timer. A call that wakes with no reply has timed out.
// Once the Link is connected that closes it: the command may be on its way,
// and every later reply would be one call behind. While the Link is still
// being made nothing has been written, so the call takes its command back
// and the Link goes on (bounded by the connect timeout): a Redis a round
// trip or two away gets connected even when each call's timeout is shorter
// than the connect and TLS handshake together.
#include "transport/redis.hpp"

#include "transport/tls_io.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <array>
#include <deque>
#include <optional>
#include <utility>

namespace modelproxy::transport {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

RedisResult RedisResult::failure(std::string why) {
    RedisResult r;
    r.kind = Kind::failed;
    r.text = std::move(why);
    return r;
}

RedisScript::RedisScript(std::string text) : source(std::move(text)) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_Digest(source.data(), source.size(), digest, &size, EVP_sha1(), nullptr);
    static constexpr char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < size; ++i) {
        sha1 += hex[digest[i] >> 4];
        sha1 += hex[digest[i] & 0xf];
    }
}

struct RedisClient::Link {
    enum class Role { call, auth, select };
    // One command sent (or queued) on the link, waiting for its reply.
    struct Pending {
        Pending(Executor executor, Role r) : role(r), wake(executor) {}
        Role role;
        Timer wake;  // the call waits on it until its deadline; cancelled when `result` is set
        std::optional<RedisResult> result;
        std::size_t bytes = 0;  // its command's size in `out` (taken back only before anything is written)
    };
    struct ReaderFree {
        void operator()(redisReader* r) const { redisReaderFree(r); }
    };

    Link(Executor ex, const RedisOptions& options)
        : executor(ex),
          socket(ex),
          connect_timer(ex),
          url(options.url),
          tls_context(options.tls),
          where("Redis at " + options.url.to_string()),
          reader(redisReaderCreate()) {}

    Executor executor;
    Socket socket;
    Timer connect_timer;  // bounds resolve, connect and TLS handshake
    RedisUrl url;
    std::shared_ptr<asio::ssl::context> tls_context;
    std::string where;  // names the server in every error text
    tls::SslPtr ssl;    // null for redis://
    std::unique_ptr<redisReader, ReaderFree> reader;
    std::deque<std::shared_ptr<Pending>> waiting;  // in the order the commands go out
    std::string out;                               // commands not yet written
    bool connected = false;                        // connected (and TLS done): the writer may write
    bool writing = false;                          // a writer coroutine is running
    bool closed = false;                           // failed or closed: never used again
};

namespace {

using Link = RedisClient::Link;

// Closes the link and fails every call still waiting on it with `why`.
void fail(Link& link, const std::string& why) {
    if (link.closed) return;
    link.closed = true;
    link.connected = false;
    error_code ignored;
    link.socket.close(ignored);  // cancels the reader's, the writer's and the connect's waits
    link.connect_timer.cancel();
    link.out.clear();
    auto waiting = std::move(link.waiting);
    link.waiting.clear();
    for (auto& pending : waiting) {
        if (!pending->result) pending->result = RedisResult::failure(why);
        pending->wake.cancel();
    }
}

RedisResult copy_reply(const redisReply& reply) {
    RedisResult out;
    switch (reply.type) {
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS:
            out.kind = RedisResult::Kind::string;
            out.text.assign(reply.str, reply.len);
            break;
        case REDIS_REPLY_ERROR:
            out.kind = RedisResult::Kind::error;
            out.text.assign(reply.str, reply.len);
            break;
        case REDIS_REPLY_INTEGER:
            out.kind = RedisResult::Kind::integer;
            out.integer = reply.integer;
            break;
        case REDIS_REPLY_NIL: out.kind = RedisResult::Kind::nil; break;
        case REDIS_REPLY_ARRAY:
            out.kind = RedisResult::Kind::array;
            out.elements.reserve(reply.elements);
            for (std::size_t i = 0; i < reply.elements; ++i) out.elements.push_back(copy_reply(*reply.element[i]));
            break;
        default:
            out.kind = RedisResult::Kind::error;
            out.text = "a reply of a type this client does not read";
            break;
    }
    return out;
}

// Appends the command's protocol bytes (redisFormatCommandArgv) and its
// waiting slot; null when hiredis cannot format it.
std::shared_ptr<Link::Pending> enqueue(Link& link, const std::vector<std::string>& args, Link::Role role) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    argv.reserve(args.size());
    lengths.reserve(args.size());
    for (const auto& a : args) {
        argv.push_back(a.data());
        lengths.push_back(a.size());
    }
    char* command = nullptr;
    const int size = redisFormatCommandArgv(&command, static_cast<int>(args.size()), argv.data(), lengths.data());
    if (size < 0 || command == nullptr) return nullptr;
    link.out.append(command, static_cast<std::size_t>(size));
    redisFreeCommand(command);
    auto pending = std::make_shared<Link::Pending>(link.executor, role);
    pending->bytes = static_cast<std::size_t>(size);
    link.waiting.push_back(pending);
    return pending;
}

// Takes a command that timed out back, before the link was connected: while
// nothing is written, `out` holds every waiting command's bytes in order.
void withdraw(Link& link, const std::shared_ptr<Link::Pending>& pending) {
    std::size_t offset = 0;
    for (auto it = link.waiting.begin(); it != link.waiting.end(); ++it) {
        if (*it == pending) {
            link.out.erase(offset, pending->bytes);
            link.waiting.erase(it);
            return;
        }
        offset += (*it)->bytes;
    }
}

// Writes all of `bytes`; the error when the connection fails first.
Task<error_code> write_all(Link& link, const std::string& bytes) {
    if (!link.ssl) {
        auto [ec, n] = co_await asio::async_write(link.socket, asio::buffer(bytes), use_tuple);
        co_return ec;
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
        error_code ec;
        std::size_t n = 0;
        const tls::Step step = tls::write(link.ssl.get(), bytes.data() + done, bytes.size() - done, n, ec);
        if (step == tls::Step::done) {
            done += n;
            continue;
        }
        if (step == tls::Step::failed) co_return ec;
        auto [wait_ec] = co_await link.socket.async_wait(tls::wait_for(step), use_tuple);
        if (wait_ec) co_return wait_ec;
        if (link.closed) co_return asio::error::operation_aborted;
    }
    co_return error_code{};
}

// One read of what the connection holds: bytes, or the error that ended it.
Task<std::pair<error_code, std::size_t>> read_some(Link& link, char* data, std::size_t size) {
    if (!link.ssl) {
        auto [ec, n] = co_await link.socket.async_read_some(asio::buffer(data, size), use_tuple);
        co_return std::pair{ec, n};
    }
    for (;;) {
        error_code ec;
        std::size_t n = 0;
        const tls::Step step = tls::read(link.ssl.get(), data, size, n, ec);
        if (step == tls::Step::done) co_return std::pair{error_code{}, n};
        if (step == tls::Step::failed) co_return std::pair{ec, std::size_t{0}};
        auto [wait_ec] = co_await link.socket.async_wait(tls::wait_for(step), use_tuple);
        if (wait_ec) co_return std::pair{wait_ec, std::size_t{0}};
        if (link.closed) co_return std::pair{error_code(asio::error::operation_aborted), std::size_t{0}};
    }
}

Task<void> write_loop(std::shared_ptr<Link> link) {
    std::string sending;
    while (!link->closed && !link->out.empty()) {
        sending.clear();
        std::swap(sending, link->out);
        const error_code ec = co_await write_all(*link, sending);
        if (link->closed) break;
        if (ec) {
            fail(*link, "cannot write to " + link->where + ": " + ec.message());
            break;
        }
    }
    link->writing = false;
}

void kick_writer(const std::shared_ptr<Link>& link) {
    if (!link->connected || link->closed || link->writing || link->out.empty()) return;
    link->writing = true;
    asio::co_spawn(link->executor, write_loop(link), asio::detached);
}

// A reply for the oldest waiting command.
void deliver(Link& link, RedisResult result) {
    if (link.waiting.empty()) {
        fail(link, link.where + " sent a reply no command asked for");
        return;
    }
    auto pending = std::move(link.waiting.front());
    link.waiting.pop_front();
    switch (pending->role) {
        case Link::Role::auth:
            if (result.kind == RedisResult::Kind::error) fail(link, link.where + " refused AUTH: " + result.text);
            return;
        case Link::Role::select:
            if (result.kind == RedisResult::Kind::error)
                fail(link, link.where + " refused SELECT " + std::to_string(link.url.db) + ": " + result.text);
            return;
        case Link::Role::call:
            pending->result = std::move(result);
            pending->wake.cancel();
            return;
    }
}

Task<void> read_loop(std::shared_ptr<Link> link) {
    std::array<char, 16384> buffer;
    while (!link->closed) {
        auto [ec, n] = co_await read_some(*link, buffer.data(), buffer.size());
        if (link->closed) co_return;
        if (ec) {
            const bool ended = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
            fail(*link, ended ? link->where + " closed the connection"
                              : "the connection to " + link->where + " failed: " + ec.message());
            co_return;
        }
        redisReader* reader = link->reader.get();
        if (redisReaderFeed(reader, buffer.data(), n) != REDIS_OK) {
            fail(*link, link->where + " sent bytes that are not a reply: " + std::string(reader->errstr));
            co_return;
        }
        for (;;) {
            void* raw = nullptr;
            if (redisReaderGetReply(reader, &raw) != REDIS_OK) {
                fail(*link, link->where + " sent bytes that are not a reply: " + std::string(reader->errstr));
                co_return;
            }
            if (raw == nullptr) break;  // the rest of a reply is still to come
            RedisResult result = copy_reply(*static_cast<redisReply*>(raw));
            freeReplyObject(raw);
            deliver(*link, std::move(result));
            if (link->closed) co_return;
        }
    }
}

// The TLS handshake on the connected socket, verified like an upstream's
// (connect.cpp): a name is sent as SNI and required in the certificate, an
// IP address is required among its IP SANs. False when it failed (the link
// is failed then, or was closed meanwhile).
Task<bool> handshake(Link& link, bool host_is_address) {
    if (!link.tls_context) {
        fail(link, link.where + ": rediss:// needs a TLS context, and none was given");
        co_return false;
    }
    link.ssl = tls::make_client(link.tls_context->native_handle(), link.socket);
    if (!link.ssl) {
        fail(link, "cannot make a TLS connection to " + link.where);
        co_return false;
    }
    const std::string& host = link.url.host;
    if (host_is_address) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(link.ssl.get()), host.c_str());
    } else {
        SSL_set_tlsext_host_name(link.ssl.get(), host.c_str());
        X509_VERIFY_PARAM_set1_host(SSL_get0_param(link.ssl.get()), host.c_str(), 0);
    }
    for (;;) {
        error_code ec;
        const tls::Step step = tls::handshake(link.ssl.get(), ec);
        if (step == tls::Step::done) co_return true;
        if (step == tls::Step::failed) {
            const long verify = SSL_get_verify_result(link.ssl.get());
            fail(link, verify != X509_V_OK
                           ? "TLS verification of " + link.where + " failed: " + X509_verify_cert_error_string(verify)
                           : "the TLS handshake with " + link.where + " failed: " + ec.message());
            co_return false;
        }
        auto [wait_ec] = co_await link.socket.async_wait(tls::wait_for(step), use_tuple);
        if (link.closed) co_return false;
        if (wait_ec) {
            fail(link, "the TLS handshake with " + link.where + " failed: " + wait_ec.message());
            co_return false;
        }
    }
}

// Resolves, connects and (rediss://) handshakes, then starts the reader and
// the writer. Unbounded here: the calls waiting on the link bound it, and
// the first to time out closes it.
Task<void> establish(std::shared_ptr<Link> link, std::chrono::milliseconds connect_timeout) {
    if (link->closed) co_return;
    link->connect_timer.expires_after(connect_timeout);
    link->connect_timer.async_wait([weak = std::weak_ptr<Link>(link), connect_timeout](error_code ec) {
        const auto l = weak.lock();
        if (ec || !l || l->connected) return;
        fail(*l, "cannot connect to " + l->where + " within " + std::to_string(connect_timeout.count()) + " ms");
    });
    const RedisUrl& url = link->url;
    error_code address_ec;
    const auto address = asio::ip::make_address(url.host, address_ec);
    error_code connect_ec;
    if (!address_ec) {
        auto [ec] = co_await link->socket.async_connect(tcp::endpoint(address, url.port), use_tuple);
        connect_ec = ec;
    } else {
        Resolver resolver(link->executor);
        auto [resolve_ec, endpoints] = co_await resolver.async_resolve(url.host, std::to_string(url.port), use_tuple);
        if (link->closed) co_return;
        if (resolve_ec) {
            fail(*link, link->where + ": cannot resolve " + url.host + ": " + resolve_ec.message());
            co_return;
        }
        auto [ec, endpoint] = co_await asio::async_connect(link->socket, endpoints, use_tuple);
        connect_ec = ec;
    }
    if (link->closed) co_return;
    if (connect_ec) {
        fail(*link, "cannot connect to " + link->where + ": " + connect_ec.message());
        co_return;
    }
    error_code ignored;
    link->socket.set_option(tcp::no_delay(true), ignored);
    link->socket.non_blocking(true, ignored);  // for OpenSSL's own reads and writes; async ops are unaffected
    if (url.tls && !co_await handshake(*link, !address_ec)) co_return;
    link->connected = true;
    link->connect_timer.cancel();
    asio::co_spawn(link->executor, read_loop(link), asio::detached);
    kick_writer(link);
}

}  // namespace

RedisClient::RedisClient(Executor executor, RedisOptions options)
    : executor_(executor), options_(std::move(options)) {}

RedisClient::~RedisClient() { close(); }

void RedisClient::close() {
    if (link_) fail(*link_, link_->where + ": the client closed the connection");
    link_.reset();
}

bool RedisClient::connected() const { return link_ && link_->connected && !link_->closed; }

std::shared_ptr<RedisClient::Link> RedisClient::link() {
    if (link_ && !link_->closed) return link_;
    link_ = std::make_shared<Link>(executor_, options_);
    ++connections_made_;
    // AUTH and SELECT go first, pipelined with the calls behind them; a
    // refusal fails the link and with it those calls.
    const RedisUrl& url = options_.url;
    if (!options_.password.empty() || !url.user.empty()) {
        std::vector<std::string> auth{"AUTH"};
        if (!url.user.empty()) auth.push_back(url.user);
        auth.push_back(options_.password);
        enqueue(*link_, auth, Link::Role::auth);
    }
    if (url.db != 0) enqueue(*link_, {"SELECT", std::to_string(url.db)}, Link::Role::select);
    asio::co_spawn(executor_, establish(link_, options_.connect_timeout), asio::detached);
    return link_;
}

Task<RedisResult> RedisClient::call(std::vector<std::string> args, std::chrono::milliseconds timeout) {
    return call_until(std::move(args), Clock::now() + timeout, timeout);
}

Task<RedisResult> RedisClient::call_until(std::vector<std::string> args, Clock::time_point deadline,
                                          std::chrono::milliseconds timeout) {
    if (args.empty()) co_return RedisResult::failure("a Redis command needs a name");
    const std::shared_ptr<Link> link = this->link();
    const auto pending = enqueue(*link, args, Link::Role::call);
    if (!pending) co_return RedisResult::failure("hiredis cannot format the command " + args.front());
    kick_writer(link);
    if (!pending->result) {
        pending->wake.expires_at(deadline);
        co_await pending->wake.async_wait(use_tuple);
    }
    if (!pending->result) {
        pending->result =
            RedisResult::failure(link->where + " did not answer within " + std::to_string(timeout.count()) + " ms");
        if (link->connected) {
            fail(*link, link->where + ": an earlier call timed out, so its connection was closed");
        } else {
            withdraw(*link, pending);
        }
    }
    co_return std::move(*pending->result);
}

Task<RedisResult> RedisClient::eval_script(const RedisScript& script, std::vector<std::string> keys,
                                           std::vector<std::string> args, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::vector<std::string> command;
    command.reserve(3 + keys.size() + args.size());
    command.push_back("EVALSHA");
    command.push_back(script.sha1);
    command.push_back(std::to_string(keys.size()));
    for (auto& k : keys) command.push_back(std::move(k));
    for (auto& a : args) command.push_back(std::move(a));
    RedisResult result = co_await call_until(command, deadline, timeout);
    if (result.kind != RedisResult::Kind::error || !result.text.starts_with("NOSCRIPT")) co_return result;
    // Redis lost its script cache: EVAL sends the source, and loads it.
    command[0] = "EVAL";
    command[1] = script.source;
    co_return co_await call_until(std::move(command), deadline, timeout);
}

}  // namespace modelproxy::transport
