#include "transport/upstream.hpp"

#include "policy/ascii.hpp"
#include "transport/parse_step.hpp"
#include "transport/reactor_flag.hpp"
#include "transport/write_now.hpp"

#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

namespace modelproxy::transport {

namespace {

std::atomic<std::uint64_t> next_connection_id{1};

bool is_drop(const boost::system::error_code& ec) {
    return ec == asio::error::eof || ec == asio::error::connection_reset ||
           ec == asio::error::broken_pipe || ec == asio::error::connection_aborted ||
           ec == http::error::end_of_stream || ec == http::error::partial_message ||
           ec == asio::ssl::error::stream_truncated || ec == asio::error::not_connected;
}

// An idle HTTP/1.1 connection has nothing to say. Bytes waiting on it (an
// answer longer than its framing said, a second answer nobody asked for, or a
// close) mean it must not carry another request: they would be read as that
// request's answer.
//
// On a plain connection, once the peek has found it empty (no byte, no end,
// no error), the reactor's read flag is cleared (reactor_flag.hpp): the
// answer's first read then waits for readiness without a recv() that would
// find nothing, one system call fewer per request (issue 7).
bool quiet(Connection& c) {
    if (c.buffer().size() != 0) return false;
    // Bytes OpenSSL already read from the socket count as bytes waiting.
    if (!c.is_plain() && tls::holds_input(c.ssl())) return false;
    Socket& socket = c.socket();
    // The answer's last read left the socket empty with no FIN behind it
    // (Exchange::read_head), and epoll has reported nothing since: no peek.
    if (c.is_plain() && !reactor_flag::read_may_find_bytes(socket)) return true;
    char byte;
    const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool empty = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    if (empty && c.is_plain()) reactor_flag::note_drained(socket);
    return empty;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
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
        case Fault::body_too_large: return "body_too_large";
        case Fault::bad_response: return "bad_response";
        case Fault::unsupported_encoding: return "unsupported_encoding";
        case Fault::stale_connection: return "stale_connection";
    }
    return "unknown";
}

// Beast reads into the flat buffer at most max(512, its free capacity) bytes
// at a time. Left to grow on demand it stays near the head's size, so a
// 53 KB stream took about 100 reads and, one client write per read, about
// 100 writes: syscalls were half the stream relay's CPU. With this much room
// a read takes whatever the socket holds (a stream that arrives event by
// event is still relayed event by event: a read never waits for more).
constexpr std::size_t read_buffer_bytes = 65536;

// The most decoded bytes one step of a gzip or deflate body gives
// (inflater.hpp): a read's worth, as an uncompressed body's pieces are.
constexpr std::size_t decode_step_bytes = 65536;

// An upstream response head longer than this is refused (a dropped
// connection, README "Hostile upstreams").
constexpr std::size_t head_limit_bytes = 64 * 1024;

Connection::Connection(Socket socket, tls::SslPtr ssl)
    : socket_(std::move(socket)),
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

Exchange::Exchange(Connection& connection) : connection_(&connection) {}

Exchange::Exchange(Exchange&& other) noexcept
    : connection_(std::exchange(other.connection_, nullptr)),
      tls_want_(other.tls_want_),
      failed_(other.failed_),
      no_body_(other.no_body_) {}

Exchange::~Exchange() { end(); }

Exchange& Exchange::operator=(Exchange&& other) noexcept {
    if (this != &other) {
        end();
        connection_ = std::exchange(other.connection_, nullptr);
        tls_want_ = other.tls_want_;
        failed_ = other.failed_;
        no_body_ = other.no_body_;
    }
    return *this;
}

void Exchange::end() {
    if (connection_) {
        connection_->parser_.reset();
        connection_->whole_.reset();
        connection_->inflater_.reset();
        connection_->fields_ = {};  // its views were into the parser's fields
    }
}

void Exchange::expect_no_body() { no_body_ = true; }

Fault Exchange::send_fault(const boost::system::error_code& ec) {
    if (!ec) return Fault::none;
    failed_ = true;
    if (ec == beast::error::timeout) return Fault::deadline;
    // A request that could not be written on a reused connection never reached
    // a live server: re-send it on a new one (SPEC section 4).
    if (connection_->reused()) return Fault::stale_connection;
    return Fault::dropped_before_head;
}

std::optional<Fault> Exchange::send_at_once(std::string_view head, std::string_view body, std::size_t& taken) {
    taken = 0;
    Connection& c = *connection_;
    if (!c.is_plain()) {
        boost::system::error_code ec;
        const tls::Step step = send_tls(head, body, taken, ec);
        if (step == tls::Step::done) return Fault::none;
        if (step == tls::Step::failed) return send_fault(ec);
        return std::nullopt;
    }
    std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(body)};
    if (auto settled = write_at_once(c.socket(), buffers, taken)) return send_fault(settled->first);
    return std::nullopt;
}

tls::Step Exchange::send_tls(std::string_view head, std::string_view body, std::size_t& taken,
                             boost::system::error_code& ec) {
    Connection& c = *connection_;
    const std::size_t total = head.size() + body.size();
    // One record for a request that fits one (most): one encryption, one
    // send. The two are joined in the worker's scratch: a record that must
    // wait for the socket is already encrypted inside OpenSSL, which then
    // only sends it (one record: nothing of the scratch is read again), and
    // a call that starts from the first byte copies them again.
    constexpr std::size_t record_bytes = 16384;
    thread_local std::array<char, record_bytes> scratch;
    const bool joined = total <= record_bytes;
    if (joined && taken == 0) {
        std::memcpy(scratch.data(), head.data(), head.size());
        std::memcpy(scratch.data() + head.size(), body.data(), body.size());
    }
    while (taken < total) {
        const std::string_view rest = joined             ? std::string_view(scratch.data() + taken, total - taken)
                                      : taken < head.size() ? head.substr(taken)
                                                            : body.substr(taken - head.size());
        std::size_t n = 0;
        const tls::Step step = tls::write(c.ssl(), rest.data(), rest.size(), n, ec);
        if (step != tls::Step::done) {
            tls_want_ = step;
            return step;
        }
        taken += n;
    }
    return tls::Step::done;
}

Task<Fault> Exchange::send_rest(std::string_view head, std::string_view body, std::size_t taken,
                                Clock::time_point deadline) {
    Connection& c = *connection_;
    const std::size_t total = head.size() + body.size();
    c.bound_read(deadline);
    boost::system::error_code ec;
    std::size_t written = 0;
    if (c.is_plain()) {
        std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(body)};
        auto [wec, n] = co_await write_rest(c.socket(), buffers, taken);
        ec = wec;
        written = n;
    } else {
        // send_at_once stopped at a step that waits: wait, and go on.
        for (tls::Step step = tls_want_; step != tls::Step::done;) {
            auto [wait_ec] = co_await c.socket().async_wait(tls::wait_for(step), use_tuple);
            if (wait_ec) {
                ec = wait_ec;
                break;
            }
            step = send_tls(head, body, taken, ec);
            if (step == tls::Step::failed) break;
        }
        written = taken;
    }
    ec = c.end_read(ec);
    // A write that ends short without an error sent part of the request:
    // the upstream would read the next request as the rest of this one.
    // The connection is not reused.
    if (!ec && written != total) ec = asio::error::broken_pipe;
    co_return send_fault(ec);
}

Task<Fault> Exchange::read_head(Clock::time_point deadline) {
    Connection& c = *connection_;
    int rest = -1;  // what the last plain read left (reactor_flag::read_with_rest)
    for (;;) {
        ResponseParser& parser = c.parser_.emplace(c.head_, c.body_view_);
        parser.header_limit(head_limit_bytes);
        parser.body_limit(boost::none);  // the relay enforces max_response_body_bytes itself
        if (no_body_) parser.skip(true);
        // The head is read here, not by http::async_read_header: Beast's
        // header_limit bounds only the bytes its parser has not consumed,
        // and it consumes each complete field line as it comes, so a long
        // head was refused or not depending on how its reads fell. This
        // loop bounds the whole head (parse_head).
        boost::system::error_code ec;
        std::size_t consumed = 0;
        c.whole_.reset();
        c.whole_taken_ = false;
        for (;;) {
            // An answer that is all there in the strict form is read in one
            // pass (whole_answer.hpp); any other is the parser's. An answer
            // to HEAD has no body whatever its head says: the parser's.
            if (!no_body_ && c.buffer().size() > 0 && !parser.got_some()) {
                c.whole_ = read_whole_answer(buffered(c.buffer()), head_limit_bytes, c.head_);
                if (c.whole_) {
                    c.buffer().consume(c.whole_->head_size);
                    break;
                }
            }
            if (parse_head(parser, c.buffer(), consumed, head_limit_bytes, ec)) break;
            beast::flat_buffer& buffer = c.buffer();
            const std::size_t room =
                std::clamp<std::size_t>(buffer.capacity() - buffer.size(), 512, read_buffer_bytes);
            c.bound_read(deadline);
            boost::system::error_code result;
            std::size_t n = 0;
            if (c.is_plain()) {
                // As the socket's async_read_some, but a read that says what
                // it left (`rest`, used once the head is whole, below). With
                // the flag clear the read waits for readiness first; a read
                // that finds nothing clears it: no byte, no FIN (that reads
                // as the end) and no reset (an error) is there.
                Socket& socket = c.socket();
                for (;;) {
                    rest = -1;
                    if (!reactor_flag::read_may_find_bytes(socket)) {
                        auto [wait_ec] = co_await reactor_flag::async_wait_readable(socket, use_tuple);
                        if (wait_ec) {
                            result = wait_ec;
                            break;
                        }
                    }
                    n = reactor_flag::read_with_rest(socket, buffer.prepare(room), result, rest);
                    if (result != asio::error::would_block) break;
                    reactor_flag::note_drained(socket);
                }
            } else {
                // What OpenSSL has, or after a wait for the socket. Right
                // after the request went out the answer is not there yet:
                // the first read waits for it instead of finding the socket
                // empty (one read() fewer), unless OpenSSL holds bytes.
                const auto space = buffer.prepare(room);
                bool wait_first = buffer.size() == 0 && !parser.got_some() && !tls::holds_input(c.ssl());
                for (;;) {
                    tls::Step step = tls::Step::want_read;
                    if (!wait_first) {
                        step = tls::read(c.ssl(), space.data(), space.size(), n, result);
                        if (step == tls::Step::done || step == tls::Step::failed) break;
                    }
                    wait_first = false;
                    auto [wait_ec] = co_await c.socket().async_wait(tls::wait_for(step), use_tuple);
                    if (wait_ec) {
                        result = wait_ec;
                        break;
                    }
                }
            }
            boost::system::error_code read_ec = c.end_read(result);
            buffer.commit(n);
            if (read_ec == asio::error::eof) {
                read_ec = parser.got_some() ? http::error::partial_message : http::error::end_of_stream;
            }
            if (read_ec) {
                ec = read_ec;
                break;
            }
        }
        if (ec) {
            failed_ = true;
            if (ec == beast::error::timeout) co_return Fault::deadline;
            if (is_drop(ec)) {
                if (c.reused() && !parser.got_some() && c.buffer().size() == 0) co_return Fault::stale_connection;
                co_return Fault::dropped_before_head;
            }
            co_return Fault::bad_response;
        }
        const unsigned status = parser.head().result_int();
        if (status >= 100 && status < 200) {
            if (status == 101) {
                failed_ = true;
                co_return Fault::bad_response;
            }
            continue;  // 1xx answers are consumed (SPEC section 4)
        }
        break;
    }
    // The final head is whole, and the plain read that brought its last
    // bytes left the socket empty with no FIN behind them, with no
    // epoll_wait since: as after a client's request (Session::run), the flag
    // is cleared, so a pooled connection that epoll reports nothing more on
    // is reused without a peek (quiet). A reset that came with those bytes
    // is not in `rest`: a read of more of this body first sets the flag
    // again (read_body), and the next request's send on a pooled connection
    // fails on it, which a reused connection turns into a free resend.
    if (rest == 0) reactor_flag::note_drained(c.socket());
    c.fields_ = scan_response(c.head_);
    auto coding = trim(c.fields_.content_encoding.value_or(""));
    if (coding.empty() || policy::iequals(coding, "identity")) {
    } else if (policy::iequals(coding, "gzip") || policy::iequals(coding, "x-gzip")) {
        c.inflater_.emplace(Inflater::Coding::gzip);
    } else if (policy::iequals(coding, "deflate")) {
        c.inflater_.emplace(Inflater::Coding::deflate);
    } else {
        failed_ = true;
        co_return Fault::unsupported_encoding;
    }
    co_return Fault::none;
}

const ResponseHeader& Exchange::head() const { return connection_->head_; }

const ResponseFields& Exchange::fields() const { return connection_->fields_; }

bool Exchange::event_stream() const {
    auto type = connection_->fields_.content_type.value_or("");
    auto semi = type.find(';');
    return policy::iequals(trim(type.substr(0, semi)), "text/event-stream");
}

std::optional<Fault> Exchange::body_from_buffer(std::string& out, std::string_view* piece, bool& done) {
    Connection& c = *connection_;
    done = false;
    if (piece) *piece = {};
    if (decoding()) {
        // The next step of a compressed piece already read: no parse, no I/O.
        const Fault fault = decode_step(out, piece);
        done = fault == Fault::none && !decoding() && (c.whole_ || c.parser_->is_done());
        return fault;
    }
    if (c.whole_) {
        // All there: the body is handed out at once, the first time.
        done = true;
        if (c.whole_taken_) return Fault::none;
        c.whole_taken_ = true;
        const std::string_view bytes = buffered(c.buffer()).substr(0, c.whole_->body_size);
        // The view stays valid after the consume: a flat buffer's consume
        // moves no byte, and the next read is what reuses them.
        c.buffer().consume(c.whole_->body_size);
        const Fault fault = give_piece(bytes, out, piece);
        done = !decoding();
        return fault;
    }
    ResponseParser& parser = *c.parser_;
    if (parser.is_done()) {
        done = true;
        return Fault::none;
    }
    parser.body().start(c.body_buffer());
    // Bytes already read (with the head, or past the last piece) are parsed
    // without I/O; only when they give nothing must a read wait.
    boost::system::error_code ec;
    if (!put_buffered(parser, c.buffer(), ec)) return std::nullopt;
    return take_piece(ec, out, piece, done, Fault::deadline);
}

Fault Exchange::take_piece(boost::system::error_code ec, std::string& out, std::string_view* piece, bool& done,
                           Fault on_timeout) {
    Connection& c = *connection_;
    ResponseParser& parser = *c.parser_;
    if (ec) {
        failed_ = true;
        if (ec == beast::error::timeout) return on_timeout;
        // A drop, or framing that is not HTTP (a bad chunk size, a chunk
        // longer than its size): either way the body broke after its head.
        return Fault::dropped_in_body;
    }
    if (const Fault given = give_piece(parser.body().piece, out, piece); given != Fault::none) return given;
    // A chunked body's trailer fields are not added to the head
    // (answer_parser.hpp): the fields read with the head stand.
    done = parser.is_done();
    // The body is not done while decoded bytes of its last piece are still
    // to come (body_from_buffer gives them).
    if (decoding()) done = false;
    return Fault::none;
}

bool Exchange::decoding() const {
    const Connection& c = *connection_;
    return c.inflater_ && c.inflater_->pending();
}

Fault Exchange::decode_step(std::string& out, std::string_view* piece) {
    Connection& c = *connection_;
    const std::size_t before = out.size();
    if (!c.inflater_->decode(out, decode_step_bytes)) {
        failed_ = true;
        return Fault::dropped_in_body;  // a gzip or deflate body that does not decode
    }
    if (piece) *piece = std::string_view(out).substr(before);
    return Fault::none;
}

Fault Exchange::give_piece(std::string_view bytes, std::string& out, std::string_view* piece) {
    Connection& c = *connection_;
    if (c.inflater_) {
        // The piece stays where it lies until it is decoded (the next read
        // reuses that memory, and reads wait until then: decoding()).
        c.inflater_->set_input(bytes);
        return decode_step(out, piece);
    } else if (piece) {
        *piece = bytes;  // where it lies (piece_body.hpp)
    } else {
        out.append(bytes);
    }
    return Fault::none;
}

Task<Fault> Exchange::read_body(std::string& out, std::string_view* piece, bool& done, Clock::time_point until,
                                Fault on_timeout) {
    Connection& c = *connection_;
    ResponseParser& parser = *c.parser_;
    c.bound_read(until);
    boost::system::error_code ec;
    if (c.is_plain()) {
        // read_head may have cleared the flag after the head's read left
        // nothing; a reset that came with those bytes is not in that report, so
        // this read tries recv() first (reactor_flag.hpp).
        reactor_flag::note_unknown(c.socket());
        auto [result, n] = co_await http::async_read_some(c.socket(), c.buffer(), parser, use_tuple);
        ec = result;
    } else {
        // As Beast's read_some over the TLS connection: read, then parse,
        // until the parser gives body bytes, the message ends or fails.
        beast::flat_buffer& buffer = c.buffer();
        for (;;) {
            const std::size_t room = std::clamp<std::size_t>(buffer.capacity() - buffer.size(), 512, read_buffer_bytes);
            const auto space = buffer.prepare(room);
            std::size_t n = 0;
            const tls::Step step = tls::read(c.ssl(), space.data(), space.size(), n, ec);
            if (step == tls::Step::want_read || step == tls::Step::want_write) {
                auto [wait_ec] = co_await c.socket().async_wait(tls::wait_for(step), use_tuple);
                if (wait_ec) {
                    ec = wait_ec;
                    break;
                }
                continue;
            }
            if (ec == asio::error::eof) {
                ec = {};
                parser.put_eof(ec);  // a close-delimited body ends here; any other is cut short
                break;
            }
            if (ec) break;
            buffer.commit(n);
            if (put_buffered(parser, buffer, ec)) break;
        }
    }
    ec = c.end_read(ec);
    if (ec == http::error::need_buffer) ec = {};
    co_return take_piece(ec, out, piece, done, on_timeout);
}

bool Exchange::reusable() const {
    const Connection& c = *connection_;
    // Bytes already read past the end of the message: see quiet(). A body
    // whose last piece is not decoded yet is partly read.
    if (failed_ || c.buffer_.size() != 0 || decoding()) return false;
    if (c.whole_) return c.whole_taken_ && c.whole_->keep_alive;
    return c.parser_ && c.parser_->is_done() && c.parser_->keep_alive();
}

}  // namespace modelproxy::transport
