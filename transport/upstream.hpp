// Upstream connections: plain TCP or verified TLS, a per-worker keep-alive
// pool, and one HTTP/1.1 exchange (send a request, read the head, pull the
// body piece by piece) with every timeout named.
//
// Threading: everything here belongs to one worker's io_context and is used
// from that thread only; nothing is locked. The ssl::context is shared across
// workers (OpenSSL's SSL_CTX is safe for that once set up).
//
// Never throws on the data path: failures come back as a Fault value.
#pragma once

#include "config/config.hpp"
#include "transport/answer_parser.hpp"
#include "transport/executor.hpp"
#include "transport/field_scan.hpp"
#include "transport/inflater.hpp"
#include "transport/piece_body.hpp"
#include "transport/read_timer.hpp"
#include "transport/recycling.hpp"
#include "transport/tls_io.hpp"
#include "transport/whole_answer.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace modelproxy::transport {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// What went wrong with an upstream exchange, as observed by the transport.
// policy/ turns these into error classes (docs/behaviour.md section 5).
enum class Fault {
    none,
    dns_failed,            // host name does not resolve (terminal)
    tls_verify_failed,     // certificate or host-name verification failed (terminal)
    connect_refused,
    connect_reset,         // reset or other failure while connecting / handshaking
    connect_timeout,       // connect_timeout_ms fired
    dropped_before_head,   // connection lost before the response head was complete
    dropped_in_body,       // connection lost, or framing broken, while the body transferred
    deadline,              // the turn deadline fired
    idle_timeout,          // stream_idle_timeout_ms fired
    first_byte_timeout,    // no byte of the answer within first_byte_timeout_ms of the request
    first_token_timeout,   // no answer text within first_token_timeout_ms of the head (the turn's timer)
    body_too_large,        // more than max_response_body_bytes
    bad_response,          // the upstream's head is not valid HTTP (or is above 64 KiB)
    unsupported_encoding,  // a content coding other than identity/gzip/deflate
    stale_connection,      // a reused connection the provider had already closed (stale.hpp):
                           // re-sent once on a new one, not an attempt
};
std::string_view to_string(Fault fault);

// Built once per route and config generation; shared by all workers.
struct TlsContext {
    std::shared_ptr<asio::ssl::context> context;
};

// Loads trust roots (system store or ca_file) and the optional client
// certificate. Returns an error message instead of throwing.
std::variant<TlsContext, std::string> make_tls_context(const config::Tls& tls);

// The upstream answer's parser and head (answer_parser.hpp).
using ResponseParser = AnswerParser;
using ResponseHeader = AnswerHead;

// One upstream connection: plain TCP, or TLS over the same socket
// (tls_io.hpp). Not copyable; owned by a unique_ptr, never moved (its read
// timer refers to its socket).
class Connection {
public:
    // `socket` connected and non-blocking; `ssl` null for plain TCP, else
    // its handshake done, reading from `input` (tls_io.hpp) when that is
    // given, else from the socket itself.
    Connection(Socket socket, tls::SslPtr ssl, std::unique_ptr<tls::Input> input = nullptr);

    // The read buffer's room. Beast reads into a flat buffer at most
    // max(512, its free capacity) bytes at a time. Left to grow on demand it
    // stays near the head's size, so a 53 KB stream took about 100 reads
    // and, one client write per read, about 100 writes: syscalls were half
    // the stream relay's CPU. With this much room a read takes whatever the
    // socket holds (a stream that arrives event by event is still relayed
    // event by event: a read never waits for more).
    static constexpr std::size_t read_buffer_bytes = 65536;

    Socket& socket() { return socket_; }
    bool is_plain() const { return !ssl_; }
    SSL* ssl() const { return ssl_.get(); }
    // Whether bytes already read from the socket wait in OpenSSL or its
    // Input: a read must take them before any wait.
    bool tls_holds_input() const { return tls::holds_input(ssl_.get(), input_.get()); }
    // After a TLS step came to want_read or want_write, what the caller
    // awaits before stepping again: a read of the socket into the Input's
    // room (tls_input_room, then took_tls_input with what the read came
    // to), or a wait for readiness (tls::wait_for).
    bool reads_tls_input(tls::Step step) const { return input_ && step == tls::Step::want_read; }
    asio::mutable_buffer tls_input_room() { return input_->room(); }
    boost::system::error_code took_tls_input(boost::system::error_code ec, std::size_t n) { return input_->took(ec, n); }
    // Its TLS handshake resumed a session an earlier connection was given.
    bool tls_resumed() const { return ssl_ && SSL_session_reused(ssl_.get()) == 1; }
    // Bounds the next read or write on the socket by `until`. After it,
    // end_read(ec) stops the bound and gives the operation's error,
    // beast::error::timeout when the bound cut it.
    void bound_read(Clock::time_point until);
    boost::system::error_code end_read(boost::system::error_code ec);

    beast::flat_buffer& buffer() { return buffer_; }
    // Where a read's body pieces are joined when there are several (a
    // chunked answer; piece_body.hpp): once per connection rather than once
    // per attempt (a pooled connection serves many), and only once needed:
    // an open stream holds no 64 KiB it never uses.
    SpillBuffer& body_buffer() { return body_buffer_; }
    bool reused() const { return reused_; }
    void mark_reused() { reused_ = true; }
    Clock::time_point idle_since() const { return idle_since_; }
    void set_idle_since(Clock::time_point t) { idle_since_ = t; }
    std::uint64_t id() const { return id_; }

private:
    friend class Exchange;
    Socket socket_;
    std::unique_ptr<tls::Input> input_;  // before ssl_, whose BIO reads it: freed after
    tls::SslPtr ssl_;        // after socket_: freed before the descriptor closes
    ReadTimer read_timer_;   // after socket_, which it refers to: destroyed first
    beast::flat_buffer buffer_;
    SpillBuffer body_buffer_;
    // The state of the Exchange in progress, kept here because a connection
    // carries one exchange at a time: an exchange then costs no allocation
    //, and a pooled connection reuses it from answer to answer.
    AnswerHead head_;                  // the answer's head, its capacity kept from answer to answer
    BodyPiece body_view_;  // where the parser puts each read's body bytes
    std::optional<ResponseParser> parser_;  // after head_ and body_view_, which it refers to
    std::optional<Inflater> inflater_;
    ResponseFields fields_;  // of the exchange's answer once its head is read
    // An answer read whole in one pass (whole_answer.hpp): no parser framed
    // its body, which lies in buffer_ once the head is consumed.
    std::optional<WholeAnswer> whole_;
    bool whole_taken_ = false;  // its body was handed out (body_from_buffer)
    bool reused_ = false;
    Clock::time_point idle_since_{};
    std::uint64_t id_;
};

// Where an attempt goes: a parsed route upstream plus its TLS context.
struct Target {
    const config::Upstream* upstream = nullptr;
    asio::ssl::context* tls = nullptr;  // null for http://
    std::chrono::milliseconds connect_timeout{5000};
};

struct ConnectResult {
    std::unique_ptr<Connection> connection;
    Fault fault = Fault::none;
    std::string detail;  // for the human log line only; never holds a secret
};

// Resolves, connects and (for https) handshakes with SNI and host-name
// verification. Bounded by the connect timeout and by `deadline`, whichever
// comes first (the fault says which fired).
Task<ConnectResult> connect(const Target& target, Clock::time_point deadline);

// Idle keep-alive connections to one upstream, per worker. Single-threaded.
class Pool {
public:
    // A connection idle longer than this is closed instead of reused.
    static constexpr auto max_idle_age = std::chrono::seconds(50);
    static constexpr std::size_t max_idle = 128;

    // `now` is the caller's reading of the clock (the turn reads it once).
    std::unique_ptr<Connection> take(Clock::time_point now);
    void give_back(std::unique_ptr<Connection> connection, Clock::time_point now);
    std::size_t idle() const { return idle_.size(); }

private:
    std::deque<std::unique_ptr<Connection>> idle_;
};

// One request/response over a connection. The body is pulled in pieces so a
// stream can be relayed as it arrives; gzip/deflate answers are decoded.
// A small handle (its parser lives in the Connection), held by value; at most
// one per connection at a time, and the connection must outlive it.
class Exchange {
public:
    explicit Exchange(Connection& connection);
    ~Exchange();
    Exchange(Exchange&& other) noexcept;
    Exchange& operator=(Exchange&& other) noexcept;
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    // The request was HEAD: the answer has no body whatever its headers say.
    void expect_no_body();
    // The request's endpoint replays every retryable class (policy's
    // replays_every_class): only there does a reused connection that ends
    // soon after the request count as stale (stale.hpp). False until set.
    void set_endpoint_replayed(bool replayed);

    // Writes `head` (the serialized request head) then `body`, in two steps.
    // send_at_once, a non-blocking send (write_now.hpp; on TLS, records
    // written while the socket takes them), returns the fault (none when
    // all was sent) when that settled it, and nullopt when the rest must
    // wait: send_rest then writes what is left after the `taken` bytes,
    // bounded by `deadline`. On TLS a head and body of at most one record
    // (16 KiB) go out as one record, copied together into a scratch of the
    // worker's.
    std::optional<Fault> send_at_once(std::string_view head, std::string_view body, std::size_t& taken);
    Task<Fault> send_rest(std::string_view head, std::string_view body, std::size_t taken,
                          Clock::time_point deadline);

    // Reads the response head, consuming 1xx answers. Fails with
    // stale_connection when the connection was reused and the provider had
    // already closed it (stale.hpp; the caller re-sends once on a new
    // connection, and that is no attempt); any other failure is the
    // attempt's fault. A send that could not write the whole request on a
    // reused connection is stale_connection too.
    // `first_byte`, when set and before `deadline`: the time by which the
    // answer's first byte must have come, else Fault::first_byte_timeout
    // (docs/behaviour.md section 13).
    Task<Fault> read_head(Clock::time_point deadline, std::optional<Clock::time_point> first_byte = std::nullopt);

    const ResponseHeader& head() const;
    // The head's fields the proxy reads, found in one walk (field_scan.hpp);
    // a chunked body's trailers are never among them (answer_parser.hpp).
    const ResponseFields& fields() const;
    bool event_stream() const;  // content type text/event-stream

    // The body in two steps, as the request's send: body_from_buffer takes
    // the next piece from bytes already read, without I/O and without a
    // coroutine, as read_some (`piece` null) or read_piece (`piece` set)
    // gives it; nullopt when there are none (a small answer's body
    // nearly always arrives with its head). Only then is read_some or
    // read_piece awaited: they read, and take the piece that read gave.
    // A gzip or deflate body comes out at most 64 KiB of decoded bytes per
    // call (docs/behaviour.md section 8: a caller checks its limits between steps); the
    // steps of a piece already read come from body_from_buffer.
    std::optional<Fault> body_from_buffer(std::string& out, std::string_view* piece, bool& done);

    // Appends the next piece of the (decoded) body to `out`. Sets `done` at the
    // end of the body. The read is bounded by `until`; when it fires the fault
    // is `on_timeout` (deadline or idle_timeout). Only after body_from_buffer
    // gave nullopt (which readied the parser's body for this read).
    Task<Fault> read_some(std::string& out, bool& done, Clock::time_point until, Fault on_timeout) {
        return read_body(out, nullptr, done, until, on_timeout);
    }
    // As read_some, for a stream relayed read by read: `piece` views the next
    // piece where it landed: in the connection's read buffer, or in its spill
    // buffer when one read held several chunks (piece_body.hpp); a
    // gzip/deflate body decoded and appended to `decoded`.
    // The view is valid until the next read, or until the connection is
    // given back or closed.
    Task<Fault> read_piece(std::string_view& piece, std::string& decoded, bool& done, Clock::time_point until,
                           Fault on_timeout) {
        return read_body(decoded, &piece, done, until, on_timeout);
    }

    // True when the message was read completely and the upstream allows reuse.
    bool reusable() const;

private:
    // read_some (piece null) and read_piece (piece set): one coroutine, so a
    // read costs one frame.
    Task<Fault> read_body(std::string& out, std::string_view* piece, bool& done, Clock::time_point until,
                          Fault on_timeout);
    // The fault a request write that ended with `ec` makes (none on success).
    Fault send_fault(const boost::system::error_code& ec);
    // The body parser's piece, after a parse or read that ended with `ec`:
    // given out (give_piece).
    Fault take_piece(boost::system::error_code ec, std::string& out, std::string_view* piece, bool& done,
                     Fault on_timeout);
    // Body bytes appended to out or viewed by piece, decoded when the body
    // is compressed: then only the first step of them (decode_step).
    Fault give_piece(std::string_view bytes, std::string& out, std::string_view* piece);
    // A compressed piece is only partly decoded: body_from_buffer gives its
    // next step (decode_step) before anything is parsed or read.
    bool decoding() const;
    // At most one step of decoded bytes appended to `out` (and viewed by
    // `piece`), so that the caller's limits see them before more are decoded.
    Fault decode_step(std::string& out, std::string_view* piece);
    void end();
    // TLS: writes what is left of head + body after `taken` bytes while the
    // socket takes it; the step it stopped at (done, failed with `ec`, or
    // what to wait for).
    tls::Step send_tls(std::string_view head, std::string_view body, std::size_t& taken,
                       boost::system::error_code& ec);
    Connection* connection_;  // null once moved from
    // When the request's last byte was written; read only on a reused
    // connection (stale.hpp).
    Clock::time_point written_at_{};
    tls::Step tls_want_ = tls::Step::want_write;  // what send_tls last waited for
    bool failed_ = false;
    bool no_body_ = false;
    bool endpoint_replayed_ = false;
};

}  // namespace modelproxy::transport
