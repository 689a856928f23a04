// An exchange's answer body: pieces from bytes already read, then read by
// read, decoded when the answer is compressed; and whether the connection
// can carry another request after it.
#include "transport/parse_step.hpp"
#include "transport/upstream.hpp"

#include <boost/beast/http/read.hpp>

#include <algorithm>
#include <tuple>

namespace modelproxy::transport {

// The most decoded bytes one step of a gzip or deflate body gives
// (inflater.hpp): a read's worth, as an uncompressed body's pieces are.
constexpr std::size_t decode_step_bytes = 65536;

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
        // Asio's read tries the socket at once and waits only when it holds
        // nothing: a body's next bytes have often come by the time it is read.
        auto [result, n] = co_await http::async_read_some(c.socket(), c.buffer(), parser, use_tuple);
        ec = result;
    } else {
        // As Beast's read_some over the TLS connection: read, then parse,
        // until the parser gives body bytes, the message ends or fails.
        beast::flat_buffer& buffer = c.buffer();
        for (;;) {
            const std::size_t room = std::clamp<std::size_t>(buffer.capacity() - buffer.size(), 512,
                                                               Connection::read_buffer_bytes);
            const auto space = buffer.prepare(room);
            std::size_t n = 0;
            const tls::Step step = tls::read(c.ssl(), space.data(), space.size(), n, ec);
            if (step == tls::Step::want_read || step == tls::Step::want_write) {
                boost::system::error_code wait_ec;
                if (c.reads_tls_input(step)) {
                    auto [read_ec, got] = co_await c.socket().async_read_some(c.tls_input_room(), use_tuple);
                    wait_ec = c.took_tls_input(read_ec, got);
                } else {
                    std::tie(wait_ec) = co_await c.socket().async_wait(tls::wait_for(step), use_tuple);
                }
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
