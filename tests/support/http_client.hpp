// A blocking HTTP/1.1 test client over one plain TCP connection to
// 127.0.0.1:port. Every call is bounded by a timeout and reports a timeout as
// an error value (boost::asio::error::timed_out), never by blocking or
// throwing; only the constructor throws (when it cannot connect).
//
// Responses are parsed with Beast's response_parser fed from the client's own
// buffer, so the exact wire bytes of each message are kept, and bytes that
// arrive after one response (pipelining) stay for the next read.
// Parsed reads (read_response, read_head/read_body_some/read_rest) and raw
// reads (read_some_raw, read_raw_until) must not be mixed within one message.
// Not thread-safe: one test thread per client.
#pragma once

#include "support/http_text.hpp"

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace modelproxy::test {

struct Response {
    // Empty when complete. Otherwise: timed_out; eof (the peer closed before
    // any byte); connection_reset; http::error::partial_message (closed mid
    // message); or a parse error.
    boost::system::error_code error;
    bool head_complete = false;
    bool complete = false;
    unsigned status = 0;
    unsigned version = 11;
    std::string reason;
    Headers headers;            // original case and order
    std::string body;           // de-chunked body bytes (so far, when incomplete)
    bool chunked = false;
    bool keep_alive = false;    // what the head says
    std::string wire;           // exact bytes of this message as received

    bool ok() const { return complete && !error; }
    std::optional<std::string> header(std::string_view name) const { return find_header(headers, name); }
    std::size_t header_count(std::string_view name) const { return count_header(headers, name); }
};

struct RawRead {
    std::string bytes;
    boost::system::error_code error;  // timed_out, eof, connection_reset, ... or empty
    bool timed_out() const;
    bool closed() const;              // eof or reset: the peer is gone
};

class HttpClient {
public:
    struct Options {
        std::chrono::milliseconds connect_timeout{2000};
        std::chrono::milliseconds timeout{5000};  // default bound of every other call
        std::string host = "127.0.0.1";
    };

    // Connects; throws std::runtime_error naming the address when it cannot.
    explicit HttpClient(std::uint16_t port);
    HttpClient(std::uint16_t port, Options options);
    ~HttpClient();
    HttpClient(HttpClient&&) noexcept;
    HttpClient& operator=(HttpClient&&) noexcept;

    std::uint16_t port() const;
    std::uint16_t local_port() const;  // this connection's source port
    bool is_open() const;

    // Writes exactly `bytes`.
    boost::system::error_code send_raw(std::string_view bytes);
    // Writes a request, adding Host when absent and Content-Length when absent
    // and the body is non-empty or the method is POST/PUT/PATCH (unless a
    // Transfer-Encoding header is given).
    boost::system::error_code send_request(std::string_view method, std::string_view target,
                                           const Headers& headers = {}, std::string_view body = {});
    // send_request + read_response, on this same connection (keep-alive reuse).
    Response request(std::string_view method, std::string_view target, const Headers& headers = {},
                     std::string_view body = {});
    Response get(std::string_view target, const Headers& headers = {});
    // POST with Content-Type: application/json (unless given).
    Response post_json(std::string_view target, std::string_view body, Headers headers = {});

    // One whole response: Content-Length, chunked or close-delimited.
    Response read_response();
    Response read_response(std::chrono::milliseconds timeout);

    // Streaming, parsed: the head (body possibly already started), then newly
    // de-chunked body bytes as they arrive (at least one byte unless error;
    // an empty result with no error means the body is complete), then the
    // rest of the message (body = all of it).
    Response read_head(std::chrono::milliseconds timeout);
    RawRead read_body_some(std::chrono::milliseconds timeout);
    Response read_rest(std::chrono::milliseconds timeout);

    // Raw wire bytes: whatever arrives first (or is already buffered).
    RawRead read_some_raw(std::chrono::milliseconds timeout);
    // Raw wire bytes up to and including `needle`, or all received so far
    // with an error when it does not arrive in time.
    RawRead read_raw_until(std::string_view needle, std::chrono::milliseconds timeout);

    void close();
    boost::system::error_code shutdown_write();
    // True when the peer closes (FIN or reset) within `timeout`; bytes that
    // arrive meanwhile are kept for later reads.
    bool is_closed_by_peer(std::chrono::milliseconds timeout);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// One connect attempt to 127.0.0.1:port (closed at once): empty on success,
// else e.g. connection_refused or timed_out.
boost::system::error_code try_connect(std::uint16_t port,
                                      std::chrono::milliseconds timeout = std::chrono::milliseconds{2000});

}  // namespace modelproxy::test
