// Parsing what a read buffer already holds, before any read is started:
// one step each of reading a client request (session.cpp) or an upstream
// answer (Exchange, upstream.cpp). Pure: no I/O.
//
// Beast's read operations parse the buffered bytes first too, but when those
// were enough they still complete through the scheduler (a post): one more
// epoll_wait and coroutine resume per read. A request's head and body usually
// arrive together, and so do a small answer's, so often no read is needed.
#pragma once

#include "transport/upstream.hpp"

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string_view>

namespace modelproxy::transport {

// The bytes a read buffer holds, as text (the one-pass readers',
// whole_request.hpp and whole_answer.hpp, take them so).
inline std::string_view buffered(const beast::flat_buffer& buffer) {
    return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

enum class ParseUntil { head, message };

// Feeds `parser` the bytes `buffer` holds (consuming them) as Beast's read
// operations do, one step (a field block, a chunk header, chunk data) after
// another. True when that was enough (the head, or the whole message, is
// done; or the body's buffer is full, so its bytes must be taken first)
// or failed (`ec`, as a read would have reported it); false when more bytes
// must be read, which a Beast read of the same parser and buffer then does.
template <bool isRequest, class DynamicBuffer>
bool parse_buffered(http::basic_parser<isRequest>& parser, DynamicBuffer& buffer, ParseUntil until,
                    boost::system::error_code& ec) {
    const auto enough = [&] { return until == ParseUntil::head ? parser.is_header_done() : parser.is_done(); };
    while (!enough()) {
        if (buffer.size() == 0) return false;
        const std::size_t used = parser.put(buffer.data(), ec);
        buffer.consume(used);
        if (ec == http::error::need_more || ec == http::error::need_buffer) {
            const bool full = ec == http::error::need_buffer;
            ec = {};
            return full;
        }
        if (ec) return true;
        if (used == 0) return false;
    }
    return true;
}

// A response head: parses what `buffer` holds. True when the head is complete
// or refused (`ec`); false when it needs more bytes. `consumed` counts the
// head bytes the parser took so far; with what is still buffered it may not
// pass `limit`.
bool parse_head(ResponseParser& parser, beast::flat_buffer& buffer, std::size_t& consumed, std::size_t limit,
                boost::system::error_code& ec);

// The body bytes `buffer` already holds, given to the parser's body
// (BodyPiece) as Beast's async_read_some does before it reads. True when
// that gave body bytes, ended the message or failed (`ec`); false when a
// read is needed.
bool put_buffered(ResponseParser& parser, beast::flat_buffer& buffer, boost::system::error_code& ec);

}  // namespace modelproxy::transport
