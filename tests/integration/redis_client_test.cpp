// transport/redis: the fleet's Redis client (docs/behaviour.md section 15)
// against a real redis-server (tests/support/redis_server.hpp): round trips,
// replies matched to calls under pipelining, AUTH, SELECT, TLS, and the
// failures section 15 counts: a server that is down fails a call at once, a
// server that does not answer fails it at its timeout, and the next call
// after either uses a new connection.
#include "support/redis_server.hpp"

#include "support/ports.hpp"
#include "support/run_task.hpp"
#include "support/test_ca.hpp"
#include "transport/redis.hpp"
#include "transport/upstream.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <set>

using namespace modelproxy::test;
using namespace modelproxy::transport;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Kind = RedisResult::Kind;
using Strings = std::vector<std::string>;
using Clock = std::chrono::steady_clock;

namespace {

std::shared_ptr<boost::asio::ssl::context> tls_for(const std::filesystem::path& ca_file) {
    auto made = make_tls_context(modelproxy::config::Tls{.ca_file = ca_file.string()});
    REQUIRE(std::holds_alternative<TlsContext>(made));
    return std::get<TlsContext>(made).context;
}

constexpr auto slow = 5000ms;  // a timeout no healthy call comes near

RedisOptions options_for(const RedisServer& server, int db = 0, std::string password = {}, bool tls = false) {
    RedisOptions options;
    options.url = std::get<RedisUrl>(parse_redis_url(server.url(db, tls)));
    options.password = std::move(password);
    return options;
}

struct Client {
    boost::asio::io_context io{1};
    RedisClient client;
    explicit Client(RedisOptions options) : client(io.get_executor(), std::move(options)) {}
    RedisResult call(Strings args, std::chrono::milliseconds timeout = slow) {
        return run_task(io, client.call(std::move(args), timeout));
    }
};

// The server's count of connections it ever accepted (INFO stats).
long long connections_received(Client& c) {
    const RedisResult info = c.call({"INFO", "stats"});
    REQUIRE(info.kind == Kind::string);
    const std::string field = "total_connections_received:";
    const auto at = info.text.find(field);
    REQUIRE(at != std::string::npos);
    return std::stoll(info.text.substr(at + field.size()));
}

}  // namespace

TEST_CASE("SET, GET, INCR, DEL and nil round trip through a real redis-server", "[redis]") {
    RedisServer server;
    Client c(options_for(server));
    CHECK_FALSE(c.client.connected());
    const RedisResult set = c.call({"SET", "greeting", "hello"});
    CHECK(set.kind == Kind::string);
    CHECK(set.text == "OK");
    CHECK(c.client.connected());
    const RedisResult get = c.call({"GET", "greeting"});
    CHECK(get.kind == Kind::string);
    CHECK(get.text == "hello");
    CHECK(c.call({"INCR", "n"}).integer == 1);
    const RedisResult incr = c.call({"INCRBY", "n", "41"});
    CHECK(incr.kind == Kind::integer);
    CHECK(incr.integer == 42);
    CHECK(c.call({"DEL", "greeting"}).integer == 1);
    CHECK(c.call({"GET", "greeting"}).kind == Kind::nil);
}

TEST_CASE("binary values, a 1 MB value, arrays with nil and error replies come back as sent", "[redis]") {
    RedisServer server;
    Client c(options_for(server));
    constexpr char raw[] = "a\0b\r\n$3\r\n*1\r\n";  // a NUL, and CRLF framing inside the value
    const std::string binary(raw, sizeof raw - 1);
    REQUIRE(c.call({"SET", "bin", binary}).ok());
    CHECK(c.call({"GET", "bin"}).text == binary);

    std::string big(1 << 20, 'x');
    for (std::size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
    REQUIRE(c.call({"SET", "big", big}).ok());
    const RedisResult got = c.call({"GET", "big"});
    CHECK(got.kind == Kind::string);
    CHECK(got.text == big);

    const RedisResult many = c.call({"MGET", "bin", "absent", "big"});
    REQUIRE(many.kind == Kind::array);
    REQUIRE(many.elements.size() == 3);
    CHECK(many.elements[0].text == binary);
    CHECK(many.elements[1].kind == Kind::nil);
    CHECK(many.elements[2].text.size() == big.size());

    // An error reply is an answer: the connection goes on.
    const RedisResult wrong = c.call({"LPUSH", "bin", "x"});
    CHECK(wrong.kind == Kind::error);
    CHECK_THAT(wrong.text, Contains("WRONGTYPE"));
    CHECK_FALSE(wrong.ok());
    CHECK_FALSE(wrong.failed());
    CHECK(c.client.connected());
    CHECK(c.call({"PING"}).text == "PONG");
}

TEST_CASE("calls from 200 coroutines at once are pipelined on one connection and each gets its own reply",
          "[redis]") {
    RedisServer server;
    Client c(options_for(server));
    REQUIRE(c.call({"PING"}).ok());
    const long long before = connections_received(c);

    constexpr int n = 200;
    std::vector<std::string> got(n);
    std::vector<long long> counts(n, -1);
    int done = 0;
    // Values of many sizes, up to 40 kB: replies end in the middle of reads.
    auto value_of = [](int i) { return std::to_string(i) + ":" + std::string(static_cast<std::size_t>(i) * 200, 'v'); };
    for (int i = 0; i < n; ++i) {
        const std::string value = value_of(i);
        boost::asio::co_spawn(
            c.io,
            [&, i, value]() -> Task<void> {
                // Named argument lists: GCC 12 cannot compile a braced list
                // of strings as a coroutine call's argument.
                Strings set_args{"SET", "k" + std::to_string(i), value};
                Strings incr_args{"INCR", "counter"};
                Strings get_args{"GET", "k" + std::to_string(i)};
                const RedisResult set = co_await c.client.call(std::move(set_args), slow);
                const RedisResult count = co_await c.client.call(std::move(incr_args), slow);
                const RedisResult get = co_await c.client.call(std::move(get_args), slow);
                if (set.ok() && get.kind == Kind::string && get.text == value) got[i] = get.text.substr(0, 8);
                if (count.kind == Kind::integer) counts[i] = count.integer;
                ++done;
            },
            boost::asio::detached);
    }
    while (done < n) c.io.run_one();

    std::set<long long> distinct;
    for (int i = 0; i < n; ++i) {
        CAPTURE(i);
        CHECK(got[i] == value_of(i).substr(0, 8));
        distinct.insert(counts[i]);
    }
    // Each INCR's reply went to the call that sent it: 1..200, once each.
    CHECK(distinct.size() == n);
    CHECK(*distinct.begin() == 1);
    CHECK(*distinct.rbegin() == n);
    CHECK(connections_received(c) == before);
}

TEST_CASE("AUTH: the right password works, none gets NOAUTH, a wrong one fails clearly without repeating it",
          "[redis]") {
    RedisServer server(RedisServer::Options{.password = "s3cret-pass"});
    {
        Client c(options_for(server, 0, "s3cret-pass"));
        CHECK(c.call({"PING"}).text == "PONG");
        CHECK(c.call({"SET", "a", "1"}).ok());
    }
    {
        Client c(options_for(server));
        const RedisResult r = c.call({"GET", "a"});
        CHECK(r.kind == Kind::error);
        CHECK_THAT(r.text, Contains("NOAUTH"));
    }
    {
        Client c(options_for(server, 0, "wrong-guess"));
        const auto start = Clock::now();
        const RedisResult r = c.call({"GET", "a"});
        CHECK(Clock::now() - start < 1s);
        CHECK(r.kind == Kind::failed);
        CHECK_THAT(r.text, Contains("refused AUTH"));
        CHECK_THAT(r.text, Contains("127.0.0.1:" + std::to_string(server.port())));
        CHECK_THAT(r.text, !Contains("wrong-guess"));
        CHECK_FALSE(c.client.connected());
    }
    {
        // The `default` user named in the URL: AUTH default <password>.
        RedisOptions options = options_for(server, 0, "s3cret-pass");
        options.url.user = "default";
        Client c(std::move(options));
        CHECK(c.call({"GET", "a"}).text == "1");
    }
}

TEST_CASE("SELECT: the URL's db is its own keyspace, and a db the server lacks fails clearly", "[redis]") {
    RedisServer server;
    Client three(options_for(server, 3));
    Client zero(options_for(server, 0));
    REQUIRE(three.call({"SET", "where", "three"}).ok());
    CHECK(zero.call({"GET", "where"}).kind == Kind::nil);
    CHECK(three.call({"GET", "where"}).text == "three");
    Client beyond(options_for(server, 99999));
    const RedisResult r = beyond.call({"GET", "where"});
    CHECK(r.kind == Kind::failed);
    CHECK_THAT(r.text, Contains("refused SELECT 99999"));
}

TEST_CASE("a stopped server fails a call at once, with or without a connection, and is used again once restarted",
          "[redis]") {
    RedisServer server;
    Client connected(options_for(server));
    REQUIRE(connected.call({"SET", "k", "v"}).ok());
    server.stop();

    Client fresh(options_for(server));
    auto start = Clock::now();
    const RedisResult refused = fresh.call({"GET", "k"});
    CHECK(Clock::now() - start < 1s);
    CHECK(refused.kind == Kind::failed);
    CHECK_THAT(refused.text, Contains("cannot connect to Redis at redis://127.0.0.1:"));
    CHECK_THAT(refused.text, Contains("refused"));

    start = Clock::now();
    const RedisResult closed = connected.call({"GET", "k"});
    CHECK(Clock::now() - start < 1s);
    CHECK(closed.kind == Kind::failed);
    CHECK_FALSE(connected.client.connected());

    server.start();
    CHECK(connected.call({"GET", "k"}).kind == Kind::nil);  // nothing persisted
    CHECK(connected.call({"SET", "k", "again"}).ok());
    CHECK(fresh.call({"GET", "k"}).text == "again");
}

TEST_CASE("a paused server fails a call at its timeout, and the next call after it wakes works", "[redis]") {
    RedisServer server;
    Client c(options_for(server));
    REQUIRE(c.call({"SET", "k", "v"}).ok());
    server.pause();

    auto start = Clock::now();
    const RedisResult slow_reply = c.call({"GET", "k"}, 50ms);
    auto took = Clock::now() - start;
    CHECK(slow_reply.kind == Kind::failed);
    CHECK_THAT(slow_reply.text, Contains("did not answer within 50 ms"));
    CHECK(took >= 50ms);
    CHECK(took < 400ms);
    CHECK_FALSE(c.client.connected());

    // A new connection to a paused server: the kernel accepts it, nothing answers.
    start = Clock::now();
    const RedisResult fresh = c.call({"GET", "k"}, 50ms);
    took = Clock::now() - start;
    CHECK(fresh.kind == Kind::failed);
    CHECK(took >= 50ms);
    CHECK(took < 400ms);

    server.resume();
    const RedisResult woke = c.call({"GET", "k"});
    CHECK(woke.kind == Kind::string);
    CHECK(woke.text == "v");
    CHECK(c.client.connections_made() == 3);  // each timeout closed its connection
}

TEST_CASE("calls waiting on a connection that times out all fail, and the next ones use a new connection",
          "[redis]") {
    RedisServer server;
    Client c(options_for(server));
    REQUIRE(c.call({"PING"}).ok());
    const long long before = connections_received(c);
    server.pause();
    std::vector<RedisResult> results(3);
    int done = 0;
    for (int i = 0; i < 3; ++i) {
        boost::asio::co_spawn(
            c.io,
            [&, i]() -> Task<void> {
                Strings ping{"PING"};
                results[i] = co_await c.client.call(std::move(ping), i == 0 ? 50ms : slow);
                ++done;
            },
            boost::asio::detached);
    }
    const auto start = Clock::now();
    while (done < 3) c.io.run_one();
    CHECK(Clock::now() - start < 1s);  // the two slow calls failed with the first, not at their own timeout
    CHECK_THAT(results[0].text, Contains("did not answer within 50 ms"));
    CHECK(results[1].kind == Kind::failed);
    CHECK_THAT(results[1].text, Contains("an earlier call timed out"));
    CHECK(results[2].kind == Kind::failed);
    server.resume();
    CHECK(c.call({"PING"}).text == "PONG");
    CHECK(connections_received(c) == before + 1);
}

TEST_CASE("eval_script runs EVALSHA and, after SCRIPT FLUSH, falls back to EVAL once", "[redis]") {
    RedisServer server;
    Client c(options_for(server));
    const RedisScript script("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) * 2}");
    CHECK(script.sha1.size() == 40);
    const RedisResult loaded = c.call({"SCRIPT", "LOAD", script.source});
    CHECK(loaded.text == script.sha1);  // Redis's SHA-1 is ours
    for (int round = 0; round < 2; ++round) {
        CAPTURE(round);
        REQUIRE(c.call({"SCRIPT", "FLUSH"}).ok());
        CHECK(c.call({"SCRIPT", "EXISTS", script.sha1}).elements.at(0).integer == 0);
        const RedisResult r = run_task(c.io, c.client.eval_script(script, {"key"}, {"arg", "21"}, slow));
        REQUIRE(r.kind == Kind::array);
        REQUIRE(r.elements.size() == 3);
        CHECK(r.elements[0].text == "key");
        CHECK(r.elements[1].text == "arg");
        CHECK(r.elements[2].integer == 42);
        CHECK(c.call({"SCRIPT", "EXISTS", script.sha1}).elements.at(0).integer == 1);
        // Now cached: EVALSHA alone answers.
        CHECK(run_task(c.io, c.client.eval_script(script, {"k2"}, {"a", "1"}, slow)).elements.at(0).text == "k2");
    }
}

TEST_CASE("rediss:// is verified against the CA by IP address and by name, and an unknown CA fails clearly",
          "[redis][tls]") {
    TestCa ca;
    const CertFiles certs = ca.issue_server();
    RedisServer server(RedisServer::Options{
        .tls = RedisServer::Tls{.cert_file = certs.cert, .key_file = certs.key, .ca_file = ca.cert_file()}});
    {
        RedisOptions options = options_for(server, 2, {}, true);
        options.tls = tls_for(ca.cert_file());
        Client c(std::move(options));
        CHECK(c.call({"SET", "over", "tls"}).ok());
        CHECK(c.call({"GET", "over"}).text == "tls");
    }
    {
        RedisOptions options = options_for(server, 2, {}, true);
        options.url.host = "localhost";
        options.tls = tls_for(ca.cert_file());
        Client c(std::move(options));
        CHECK(c.call({"GET", "over"}).text == "tls");
    }
    {
        TestCa other("another CA");
        RedisOptions options = options_for(server, 0, {}, true);
        options.tls = tls_for(other.cert_file());
        Client c(std::move(options));
        const RedisResult r = c.call({"PING"});
        CHECK(r.kind == Kind::failed);
        CHECK_THAT(r.text, Contains("TLS verification of Redis at rediss://127.0.0.1:"));
    }
    {
        // rediss:// with no TLS context is a clear failure, not a plain connection.
        Client c(options_for(server, 0, {}, true));
        CHECK_THAT(c.call({"PING"}).text, Contains("needs a TLS context"));
    }
}

TEST_CASE("a call that times out before the connection is made takes its command back, and the connection goes on "
          "for the next call",
          "[redis][tls]") {
    TestCa ca;
    const CertFiles certs = ca.issue_server();
    RedisServer server(RedisServer::Options{
        .tls = RedisServer::Tls{.cert_file = certs.cert, .key_file = certs.key, .ca_file = ca.cert_file()}});
    RedisOptions options = options_for(server, 0, {}, true);
    options.tls = tls_for(ca.cert_file());
    Client c(std::move(options));
    // Paused, the server's kernel accepts the TCP connection but nobody
    // answers the TLS handshake: the connection is still being made.
    server.pause();
    const RedisResult early = c.call({"SET", "k", "sent too early"}, 50ms);
    CHECK(early.kind == Kind::failed);
    CHECK_THAT(early.text, Contains("did not answer within 50 ms"));
    CHECK_FALSE(c.client.connected());
    CHECK(c.client.connections_made() == 1);
    server.resume();

    CHECK(c.call({"GET", "k"}).kind == Kind::nil);  // the SET never went out
    CHECK(c.client.connected());
    CHECK(c.client.connections_made() == 1);  // the connection of the first call, made once
}

TEST_CASE("a connection not made within connect_timeout fails the calls waiting on it", "[redis][tls]") {
    TestCa ca;
    SilentListener silent;  // accepts TCP, never answers the TLS handshake
    RedisOptions options;
    options.url = std::get<RedisUrl>(parse_redis_url("rediss://127.0.0.1:" + std::to_string(silent.port())));
    options.tls = tls_for(ca.cert_file());
    options.connect_timeout = 200ms;
    Client c(std::move(options));
    const auto start = Clock::now();
    const RedisResult r = c.call({"PING"}, slow);
    const auto took = Clock::now() - start;
    CHECK(r.kind == Kind::failed);
    CHECK_THAT(r.text, Contains("cannot connect to Redis at rediss://127.0.0.1:" + std::to_string(silent.port()) +
                                "/0 within 200 ms"));
    CHECK(took >= 200ms);
    CHECK(took < 1s);
}
