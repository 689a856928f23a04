// transport/reactor_flag: Asio's per-socket read flag as the upstream reads
// use it. A read started with the flag clear must still complete when bytes
// come (no hang), and bytes that come while no read is pending must set it
// again (so a pooled connection that got bytes is peeked, not trusted).
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
