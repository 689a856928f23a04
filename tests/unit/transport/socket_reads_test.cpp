// transport/plain_io and tls_io's Input: how an upstream connection reads
// its socket. Reads are Asio's async_read_some into the connection's buffer
// (plain) or into the Input that OpenSSL reads (TLS); the Input keeps what a
// read brought, notes the end of stream for OpenSSL, and hands any other
// error back. The pool's check that an idle connection has nothing to say
// is a peek that leaves the bytes for the read after it.
#include "transport/plain_io.hpp"
#include "transport/tls_io.hpp"

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
    // One async_read_some of the client into `input`'s room, run to its end
    // (at most 2 s); what Input::took made of it.
    boost::system::error_code read_into(tls::Input& input) {
        io.restart();
        bool done = false;
        boost::system::error_code result;
        client.async_read_some(input.room(), [&](boost::system::error_code ec, std::size_t n) {
            done = true;
            result = input.took(ec, n);
        });
        for (int i = 0; i < 200 && !done; ++i) io.run_one_for(10ms);
        REQUIRE(done);
        return result;
    }
};

std::string take_all(tls::Input& input) {
    std::string out(input.size(), '\0');
    out.resize(input.take(out.data(), out.size()));
    return out;
}

}  // namespace

TEST_CASE("the TLS input keeps what each read brought, in order, until OpenSSL takes it", "[socket_reads]") {
    Pair p;
    tls::Input input;
    CHECK(input.size() == 0);
    CHECK(input.room().size() == tls::Input::capacity);
    asio::write(p.server, asio::buffer(std::string_view("first ")));
    CHECK_FALSE(p.read_into(input));
    asio::write(p.server, asio::buffer(std::string_view("second")));
    CHECK_FALSE(p.read_into(input));
    REQUIRE(input.size() == 12);
    // OpenSSL takes in pieces of its own size.
    std::array<char, 4> piece{};
    CHECK(input.take(piece.data(), piece.size()) == 4);
    CHECK(std::string_view(piece.data(), 4) == "firs");
    CHECK(take_all(input) == "t second");
    CHECK(input.take(piece.data(), piece.size()) == 0);
    // Emptied: the next read's room is the whole of it again.
    CHECK(input.room().size() == tls::Input::capacity);
    CHECK_FALSE(input.ended());
}

TEST_CASE("a read that fills the TLS input moves what is not taken to the front for the next one",
          "[socket_reads]") {
    Pair p;
    tls::Input input;
    const std::string first(tls::Input::capacity, 'a');
    asio::write(p.server, asio::buffer(first));
    while (input.size() < tls::Input::capacity) REQUIRE_FALSE(p.read_into(input));
    CHECK(input.size() == tls::Input::capacity);
    std::array<char, 100> piece{};
    CHECK(input.take(piece.data(), piece.size()) == 100);
    CHECK(input.room().size() == 100);
    CHECK(input.size() == tls::Input::capacity - 100);
    asio::write(p.server, asio::buffer(std::string_view("tail")));
    CHECK_FALSE(p.read_into(input));
    const std::string all = take_all(input);
    CHECK(all.size() == tls::Input::capacity - 100 + 4);
    CHECK(all.substr(all.size() - 5) == "atail");
}

TEST_CASE("the end of stream is kept for OpenSSL after the bytes before it, and a reset or a cancel is handed back",
          "[socket_reads]") {
    Pair p;
    tls::Input input;
    SECTION("the provider's close, after a last answer") {
        asio::write(p.server, asio::buffer(std::string_view("last")));
        p.server.close();
        CHECK_FALSE(p.read_into(input));
        CHECK_FALSE(input.ended());
        CHECK_FALSE(p.read_into(input));  // the end: no error for the caller
        CHECK_FALSE(input.ended());       // "last" is still to be taken
        CHECK(take_all(input) == "last");
        CHECK(input.ended());
    }
    SECTION("a reset") {
        p.reset_by_server();
        CHECK(p.read_into(input) == asio::error::connection_reset);
        CHECK_FALSE(input.ended());
    }
    SECTION("a cancel, as the read timer's") {
        p.io.restart();
        bool done = false;
        boost::system::error_code result;
        p.client.async_read_some(input.room(), [&](boost::system::error_code ec, std::size_t n) {
            done = true;
            result = input.took(ec, n);
        });
        p.idle(30ms);
        REQUIRE_FALSE(done);
        p.client.cancel();
        for (int i = 0; i < 200 && !done; ++i) p.io.run_one_for(10ms);
        REQUIRE(done);
        CHECK(result == asio::error::operation_aborted);
        CHECK(input.size() == 0);
        CHECK_FALSE(input.ended());
    }
}

TEST_CASE("an idle connection is quiet only with nothing on it: no byte, no close, no reset", "[socket_reads]") {
    Pair p;
    CHECK(plain::quiet(p.client));
    SECTION("bytes nobody asked for") {
        asio::write(p.server, asio::buffer(std::string_view("HTTP/1.1 200 OK\r\n")));
        p.idle(20ms);
        CHECK_FALSE(plain::quiet(p.client));
        // A peek: the bytes are still there for a read.
        std::array<char, 64> buffer{};
        boost::system::error_code ec;
        CHECK(p.client.read_some(asio::buffer(buffer), ec) == 17);
        CHECK_FALSE(ec);
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
