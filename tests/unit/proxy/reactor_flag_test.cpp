// transport/reactor_flag: Asio's per-socket read flag as the upstream reads
// use it. A read started with the flag clear must still complete when bytes
// come (no hang), and bytes that come while no read is pending must set it
// again (so a pooled connection that got bytes is peeked, not trusted). The
// client side clears it after a read that left nothing (TCP_INQ), and waits
// on it without re-arming epoll.
#include "transport/asio_memory.hpp"  // first, as in the product
#include "transport/reactor_flag.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <string>

namespace asio = boost::asio;
namespace reactor_flag = modelproxy::transport::reactor_flag;
using asio::ip::tcp;
using modelproxy::transport::Socket;
using namespace std::chrono_literals;

namespace {

// A connected pair: `client` on the io_context as a worker's socket is.
struct Pair {
    asio::io_context io{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};  // as a worker's
    tcp::acceptor acceptor{io, {asio::ip::address_v4::loopback(), 0}};
    Socket client{io.get_executor()};
    tcp::socket server{io};

    Pair() {
        client.connect(acceptor.local_endpoint());
        server = acceptor.accept();
    }
    // Runs the reactor for about `span` with no operation of the test's pending.
    void idle(std::chrono::milliseconds span) {
        io.restart();  // a run that ran out of work stopped the io_context
        asio::steady_timer timer(io, span);
        bool fired = false;
        timer.async_wait([&](boost::system::error_code) { fired = true; });
        while (!fired) io.run_one();
    }
};

}  // namespace

TEST_CASE("a read started on a drained socket waits, and completes when bytes come", "[reactor_flag]") {
    Pair p;
    CHECK(reactor_flag::read_may_find_bytes(p.client));  // registered, never read: a read tries at once
    reactor_flag::note_drained(p.client);
    CHECK_FALSE(reactor_flag::read_may_find_bytes(p.client));

    std::array<char, 16> buffer{};
    bool done = false;
    std::size_t got = 0;
    boost::system::error_code error;
    p.client.async_read_some(asio::buffer(buffer), [&](boost::system::error_code ec, std::size_t n) {
        done = true;
        error = ec;
        got = n;
    });
    p.idle(20ms);
    CHECK_FALSE(done);
    asio::write(p.server, asio::buffer(std::string_view("hello")));
    for (int i = 0; i < 200 && !done; ++i) p.io.run_one_for(10ms);
    REQUIRE(done);
    CHECK_FALSE(error);
    CHECK(std::string(buffer.data(), got) == "hello");
    // The readiness that completed it set the flag again.
    CHECK(reactor_flag::read_may_find_bytes(p.client));
}

TEST_CASE("bytes or a close that come while no read is pending set the flag again", "[reactor_flag]") {
    Pair p;
    reactor_flag::note_drained(p.client);
    p.idle(20ms);
    CHECK_FALSE(reactor_flag::read_may_find_bytes(p.client));  // nothing came

    SECTION("bytes") { asio::write(p.server, asio::buffer(std::string_view("late"))); }
    SECTION("a close") { p.server.close(); }
    p.idle(50ms);
    CHECK(reactor_flag::read_may_find_bytes(p.client));
}

// What a read leaves (read_with_rest), as the client's request read and the
// upstream's answer read use it, and the turn's client watch waiting with
// wait_readable (proxy/session.cpp, proxy/turn_watch.cpp).
TEST_CASE("a read says when it left the socket empty, and not when it left bytes or a FIN",
          "[reactor_flag]") {
    Pair p;
    REQUIRE(reactor_flag::report_rest(p.client));
    std::array<char, 64> buffer{};
    boost::system::error_code ec;

    int rest = -1;
    SECTION("all bytes read: nothing left") {
        asio::write(p.server, asio::buffer(std::string_view("request")));
        p.idle(20ms);
        const std::size_t n = reactor_flag::read_with_rest(p.client, asio::buffer(buffer), ec, rest);
        REQUIRE_FALSE(ec);
        CHECK(std::string(buffer.data(), n) == "request");
        CHECK(rest == 0);
    }
    SECTION("bytes left behind") {
        asio::write(p.server, asio::buffer(std::string_view("request and more")));
        p.idle(20ms);
        const std::size_t n = reactor_flag::read_with_rest(p.client, asio::buffer(buffer.data(), 7), ec, rest);
        REQUIRE_FALSE(ec);
        CHECK(n == 7);
        CHECK(rest == 9);
    }
    SECTION("a FIN behind the bytes is something left, and the next read sees the end") {
        // Both arrive before the read, so epoll has already reported them:
        // a wait that trusted a clear flag would never see this end.
        asio::write(p.server, asio::buffer(std::string_view("request")));
        p.server.shutdown(tcp::socket::shutdown_send);
        p.idle(20ms);
        const std::size_t n = reactor_flag::read_with_rest(p.client, asio::buffer(buffer), ec, rest);
        REQUIRE_FALSE(ec);
        CHECK(n == 7);
        CHECK(rest > 0);
        reactor_flag::read_with_rest(p.client, asio::buffer(buffer), ec, rest);
        CHECK(ec == asio::error::eof);
    }
    SECTION("a reset behind the bytes is not in the rest: only the next read reports it") {
        // Why a read of more of the same message sets the flag again first.
        asio::write(p.server, asio::buffer(std::string_view("request")));
        p.server.set_option(asio::socket_base::linger(true, 0));
        p.server.close();
        p.idle(20ms);
        const std::size_t n = reactor_flag::read_with_rest(p.client, asio::buffer(buffer), ec, rest);
        REQUIRE_FALSE(ec);
        CHECK(n == 7);
        CHECK(rest == 0);
        reactor_flag::read_with_rest(p.client, asio::buffer(buffer), ec, rest);
        CHECK(ec == asio::error::connection_reset);
    }
    SECTION("nothing there: would_block") {
        const std::size_t n = reactor_flag::read_with_rest(p.client, asio::buffer(buffer), ec, rest);
        CHECK(n == 0);
        CHECK(ec == asio::error::would_block);
    }
}

TEST_CASE("a wait on a drained socket completes on bytes, a close, a reset or a cancel", "[reactor_flag]") {
    Pair p;
    REQUIRE(reactor_flag::report_rest(p.client));
    asio::write(p.server, asio::buffer(std::string_view("request")));
    p.idle(20ms);
    std::array<char, 64> buffer{};
    boost::system::error_code ec;
    int rest = -1;
    reactor_flag::read_with_rest(p.client, asio::buffer(buffer), ec, rest);
    REQUIRE_FALSE(ec);
    REQUIRE(rest == 0);
    reactor_flag::note_drained(p.client);

    bool done = false;
    boost::system::error_code error;
    reactor_flag::wait_readable(p.client, [&](boost::system::error_code e) {
        done = true;
        error = e;
    });
    p.idle(30ms);
    CHECK_FALSE(done);  // nothing came: it waits

    bool expect_error = false;
    SECTION("bytes") { asio::write(p.server, asio::buffer(std::string_view("next"))); }
    SECTION("a close") { p.server.close(); }
    SECTION("a reset") {
        p.server.set_option(asio::socket_base::linger(true, 0));
        p.server.close();
    }
    SECTION("a cancel") {
        p.client.cancel();
        expect_error = true;
    }
    for (int i = 0; i < 200 && !done; ++i) p.io.run_one_for(10ms);
    REQUIRE(done);
    CHECK(static_cast<bool>(error) == expect_error);
    if (expect_error) CHECK(error == asio::error::operation_aborted);
}

TEST_CASE("a wait on a socket whose flag is set is Asio's own wait", "[reactor_flag]") {
    // Read to empty by a plain read: the flag stays set, though nothing is
    // there. A wait that took the set flag for readiness would complete at
    // once, and the turn's client would go unwatched.
    Pair p;
    asio::write(p.server, asio::buffer(std::string_view("request")));
    p.idle(20ms);
    std::array<char, 64> buffer{};
    p.client.read_some(asio::buffer(buffer));
    REQUIRE(reactor_flag::read_may_find_bytes(p.client));
    bool done = false;
    reactor_flag::wait_readable(p.client, [&](boost::system::error_code) { done = true; });
    p.idle(30ms);
    CHECK_FALSE(done);
    asio::write(p.server, asio::buffer(std::string_view("next")));
    for (int i = 0; i < 200 && !done; ++i) p.io.run_one_for(10ms);
    CHECK(done);
}
