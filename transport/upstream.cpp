// An exchange's request and its answer's head: the send, in a step without a
// wait and the rest, and the head read, with what a failure before the head
// comes to (a stale connection, stale.hpp, or the attempt's fault).
#include "transport/upstream.hpp"

#include "policy/ascii.hpp"
#include "transport/parse_step.hpp"
#include "transport/stale.hpp"
#include "transport/write_now.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>

namespace modelproxy::transport {

namespace {

bool is_drop(const boost::system::error_code& ec) {
    return ec == asio::error::eof || ec == asio::error::connection_reset ||
           ec == asio::error::broken_pipe || ec == asio::error::connection_aborted ||
           ec == http::error::end_of_stream || ec == http::error::partial_message ||
           ec == asio::ssl::error::stream_truncated || ec == asio::error::not_connected;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

// An upstream response head longer than this is refused (a dropped
// connection, README "Hostile upstreams").
constexpr std::size_t head_limit_bytes = 64 * 1024;

Exchange::Exchange(Connection& connection) : connection_(&connection) {}

Exchange::Exchange(Exchange&& other) noexcept
    : connection_(std::exchange(other.connection_, nullptr)),
      written_at_(other.written_at_),
      tls_want_(other.tls_want_),
      failed_(other.failed_),
      no_body_(other.no_body_),
      endpoint_replayed_(other.endpoint_replayed_) {}

Exchange::~Exchange() { end(); }

Exchange& Exchange::operator=(Exchange&& other) noexcept {
    if (this != &other) {
        end();
        connection_ = std::exchange(other.connection_, nullptr);
        written_at_ = other.written_at_;
        tls_want_ = other.tls_want_;
        failed_ = other.failed_;
        no_body_ = other.no_body_;
        endpoint_replayed_ = other.endpoint_replayed_;
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

void Exchange::set_endpoint_replayed(bool replayed) { endpoint_replayed_ = replayed; }

Fault Exchange::send_fault(const boost::system::error_code& ec) {
    const bool reused = connection_->reused();
    if (!ec) {
        // Only a reused connection's failure asks how long after the write
        // it came (read_head): no clock reading for a new one.
        if (reused) written_at_ = Clock::now();
        return Fault::none;
    }
    failed_ = true;
    if (ec == beast::error::timeout) return Fault::deadline;
    // A request that could not be written whole on a reused connection:
    // the provider had closed it (docs/behaviour.md section 4).
    if (is_stale({.reused = reused, .written = false})) return Fault::stale_connection;
    return Fault::dropped_before_head;
}

std::optional<Fault> Exchange::send_at_once(std::string_view head, std::string_view body, std::size_t& taken) {
    taken = 0;
    Connection& c = *connection_;
    if (!c.is_plain()) {
        boost::system::error_code ec;
        const tls::Step step = send_tls(head, body, taken, ec);
        if (step == tls::Step::done || step == tls::Step::failed) return send_fault(ec);
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
            boost::system::error_code wait_ec;
            if (c.reads_tls_input(step)) {
                auto [read_ec, n] = co_await c.socket().async_read_some(c.tls_input_room(), use_tuple);
                wait_ec = c.took_tls_input(read_ec, n);
            } else {
                std::tie(wait_ec) = co_await c.socket().async_wait(tls::wait_for(step), use_tuple);
            }
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

Task<Fault> Exchange::read_head(Clock::time_point deadline, std::optional<Clock::time_point> first_byte) {
    if (first_byte && *first_byte >= deadline) first_byte.reset();
    Connection& c = *connection_;
    bool answered = false;  // a byte of an answer came (a 1xx answer's included)
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
                std::clamp<std::size_t>(buffer.capacity() - buffer.size(), 512, Connection::read_buffer_bytes);
            c.bound_read(first_byte && !answered ? *first_byte : deadline);
            boost::system::error_code result;
            std::size_t n = 0;
            const auto space = buffer.prepare(room);
            if (c.is_plain()) {
                // Asio's read: after a read that drained the socket it waits
                // with no system call, and the reactor's read is the one.
                std::tie(result, n) = co_await c.socket().async_read_some(space, use_tuple);
            } else {
                // What OpenSSL or its Input holds, else a read of the socket
                // into the Input (tls_io.hpp). Right after the request went
                // out the answer is not there yet: the first step reads the
                // socket instead of asking OpenSSL for what it cannot have.
                bool read_first = buffer.size() == 0 && !parser.got_some() && !c.tls_holds_input();
                for (;;) {
                    tls::Step step = tls::Step::want_read;
                    if (!read_first) {
                        step = tls::read(c.ssl(), space.data(), space.size(), n, result);
                        if (step == tls::Step::done || step == tls::Step::failed) break;
                    }
                    read_first = false;
                    boost::system::error_code wait_ec;
                    if (c.reads_tls_input(step)) {
                        auto [read_ec, got] = co_await c.socket().async_read_some(c.tls_input_room(), use_tuple);
                        wait_ec = c.took_tls_input(read_ec, got);
                    } else {
                        std::tie(wait_ec) = co_await c.socket().async_wait(tls::wait_for(step), use_tuple);
                    }
                    if (wait_ec) {
                        result = wait_ec;
                        break;
                    }
                }
            }
            boost::system::error_code read_ec = c.end_read(result);
            buffer.commit(n);
            answered = answered || n != 0;
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
            if (ec == beast::error::timeout) co_return first_byte && !answered ? Fault::first_byte_timeout : Fault::deadline;
            if (!is_drop(ec)) co_return Fault::bad_response;
            const bool reused = c.reused();  // the clock is read only then (send_fault)
            const EarlyFailure seen{.reused = reused,
                                    .written = true,
                                    .answer_bytes = answered || c.buffer().size() != 0,
                                    .since_written = reused ? Clock::now() - written_at_ : Clock::duration{},
                                    .endpoint_replayed = endpoint_replayed_};
            co_return is_stale(seen) ? Fault::stale_connection : Fault::dropped_before_head;
        }
        const unsigned status = parser.head().result_int();
        if (status >= 100 && status < 200) {
            if (status == 101) {
                failed_ = true;
                co_return Fault::bad_response;
            }
            continue;  // 1xx answers are consumed (docs/behaviour.md section 4)
        }
        break;
    }
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

}  // namespace modelproxy::transport
