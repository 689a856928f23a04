// transport/plain_io: the upstream's plain reads in non-blocking steps, with
// Asio's async_wait for readiness between them, and the pool's check that an
// idle connection has nothing to say. A wait started on an empty socket must
// wait (even right after a read that emptied it) and complete when bytes, a
// close or a reset come, so that the read after it finds them.
#include "transport/plain_io.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <string>

namespace asio = boost::asio;
namespace plain = modelproxy::transport::plain;
namespace tls = modelproxy::transport::tls;
using asio::ip::tcp;
using modelproxy::transport::Socket;
using namespace std::chrono_literals;

namespace {

// A connected pair: `client` non-blocking on the io_context, as an upstream
// connection's socket is.
struct Pair {
    asio::io_context io{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};  // as a worker's
    tcp::acceptor acceptor{io, {asio::ip::address_v4::loopback(), 0}};
    Socket client{io.get_executor()};
    tcp::socket server{io};

    Pair() {
        client.connect(acceptor.local_endpoint());
        server = acceptor.accept();
        client.non_blocking(true);
    }
    // Runs the reactor for about `span` with no operation of the test's pending.
    void idle(std::chrono::milliseconds span) {
        io.restart();  // a run that ran out of work stopped the io_context
        asio::steady_timer timer(io, span);
        bool fired = false;
        timer.async_wait([&](boost::system::error_code) { fired = true; });
        while (!fired) io.run_one();
    }
    void reset_by_server() {
        server.set_option(asio::socket_base::linger(true, 0));
        server.close();
    }
};

}  // namespace

TEST_CASE("a read of an empty socket asks for a wait, and a wait started then completes when bytes come",
          "[plain_io]") {
    Pair p;
    asio::write(p.server, asio::buffer(std::string_view("first")));
    p.idle(20ms);
    std::array<char, 64> buffer{};
    std::size_t n = 0;
    boost::system::error_code ec;
    REQUIRE(plain::read(p.client, asio::buffer(buffer), n, ec) == tls::Step::done);
    CHECK(std::string_view(buffer.data(), n) == "first");
    // Emptied by that read: Asio still takes the socket for readable, but a
    // wait is no read and must not complete on that alone.
    CHECK(plain::read(p.client, asio::buffer(buffer), n, ec) == tls::Step::want_read);
    CHECK_FALSE(ec);
    bool done = false;
    boost::system::error_code error;
    p.client.async_wait(Socket::wait_read, [&](boost::system::error_code e) {
        done = true;
        error = e;
    });
    p.idle(30ms);
    CHECK_FALSE(done);

    asio::write(p.server, asio::buffer(std::string_view("next")));
    for (int i = 0; i < 200 && !done; ++i) p.io.run_one_for(10ms);
    REQUIRE(done);
    CHECK_FALSE(error);
    REQUIRE(plain::read(p.client, asio::buffer(buffer), n, ec) == tls::Step::done);
    CHECK(std::string_view(buffer.data(), n) == "next");
}

TEST_CASE("a wait on an empty socket completes on a close, a reset or a cancel, and the read says which",
          "[plain_io]") {
    Pair p;
    bool done = false;
    boost::system::error_code error;
    p.client.async_wait(Socket::wait_read, [&](boost::system::error_code e) {
        done = true;
        error = e;
    });
    p.idle(30ms);
    REQUIRE_FALSE(done);

    boost::system::error_code want_wait;  // the wait's own error
    boost::system::error_code want_read;  // the read's after it
    SECTION("a close") {
        p.server.close();
        want_read = asio::error::eof;
    }
    SECTION("a reset") {
        p.reset_by_server();
        want_read = asio::error::connection_reset;
    }
    SECTION("a cancel") {
        p.client.cancel();
        want_wait = asio::error::operation_aborted;
    }
    for (int i = 0; i < 200 && !done; ++i) p.io.run_one_for(10ms);
    REQUIRE(done);
    CHECK(error == want_wait);
    if (want_wait) return;
    std::array<char, 64> buffer{};
    std::size_t n = 0;
    boost::system::error_code ec;
    CHECK(plain::read(p.client, asio::buffer(buffer), n, ec) == tls::Step::failed);
    CHECK(n == 0);
    CHECK(ec == want_read);
}

TEST_CASE("an idle connection is quiet only with nothing on it: no byte, no close, no reset", "[plain_io]") {
    Pair p;
    CHECK(plain::quiet(p.client));
    SECTION("bytes nobody asked for") {
        asio::write(p.server, asio::buffer(std::string_view("HTTP/1.1 200 OK\r\n")));
        p.idle(20ms);
        CHECK_FALSE(plain::quiet(p.client));
        // A peek: the bytes are still there for a read.
        std::array<char, 64> buffer{};
        std::size_t n = 0;
        boost::system::error_code ec;
        REQUIRE(plain::read(p.client, asio::buffer(buffer), n, ec) == tls::Step::done);
        CHECK(n == 17);
        CHECK(plain::quiet(p.client));
    }
    SECTION("the provider's close") {
        p.server.close();
        p.idle(20ms);
        CHECK_FALSE(plain::quiet(p.client));
    }
    SECTION("a reset") {
        p.reset_by_server();
        p.idle(20ms);
        CHECK_FALSE(plain::quiet(p.client));
    }
}
