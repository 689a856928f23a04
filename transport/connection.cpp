// An upstream connection, and the per-worker pool of idle ones.
#include "transport/plain_io.hpp"
#include "transport/upstream.hpp"

#include <atomic>
#include <utility>

namespace modelproxy::transport {

namespace {

std::atomic<std::uint64_t> next_connection_id{1};

// An idle HTTP/1.1 connection has nothing to say. Bytes waiting on it (an
// answer longer than its framing said, a second answer nobody asked for, or a
// close) mean it must not carry another request: they would be read as that
// request's answer. One peek per reuse tells (plain_io.hpp).
bool quiet(Connection& c) {
    if (c.buffer().size() != 0) return false;
    // Bytes OpenSSL already read from the socket count as bytes waiting.
    if (!c.is_plain() && c.tls_holds_input()) return false;
    return plain::quiet(c.socket());
}

}  // namespace

std::string_view to_string(Fault fault) {
    switch (fault) {
        case Fault::none: return "none";
        case Fault::dns_failed: return "dns_failed";
        case Fault::tls_verify_failed: return "tls_verify_failed";
        case Fault::connect_refused: return "connect_refused";
        case Fault::connect_reset: return "connect_reset";
        case Fault::connect_timeout: return "connect_timeout";
        case Fault::dropped_before_head: return "dropped_before_head";
        case Fault::dropped_in_body: return "dropped_in_body";
        case Fault::deadline: return "deadline";
        case Fault::idle_timeout: return "idle_timeout";
        case Fault::first_byte_timeout: return "first_byte_timeout";
        case Fault::first_token_timeout: return "first_token_timeout";
        case Fault::body_too_large: return "body_too_large";
        case Fault::bad_response: return "bad_response";
        case Fault::unsupported_encoding: return "unsupported_encoding";
        case Fault::stale_connection: return "stale_connection";
    }
    return "unknown";
}

Connection::Connection(Socket socket, tls::SslPtr ssl, std::unique_ptr<tls::Input> input)
    : socket_(std::move(socket)),
      input_(std::move(input)),
      ssl_(std::move(ssl)),
      read_timer_(socket_),
      id_(next_connection_id.fetch_add(1, std::memory_order_relaxed)) {
    buffer_.reserve(read_buffer_bytes);
}

void Connection::bound_read(Clock::time_point until) { read_timer_.arm_at(until); }

boost::system::error_code Connection::end_read(boost::system::error_code ec) {
    const bool cut = read_timer_.disarm();
    return cut && ec == asio::error::operation_aborted ? beast::error::timeout : ec;
}

std::unique_ptr<Connection> Pool::take(Clock::time_point now) {
    while (!idle_.empty()) {
        auto connection = std::move(idle_.back());
        idle_.pop_back();
        if (now - connection->idle_since() < max_idle_age && quiet(*connection)) {
            connection->mark_reused();
            return connection;
        }
    }
    return nullptr;
}

void Pool::give_back(std::unique_ptr<Connection> connection, Clock::time_point now) {
    if (idle_.size() >= max_idle) idle_.pop_front();
    connection->set_idle_since(now);
    idle_.push_back(std::move(connection));
}

}  // namespace modelproxy::transport
