// Parses what a read buffer already holds, before any read is started.
//
// Beast's read operations parse the buffered bytes first too, but when those
// were enough they still complete through the scheduler (a post): one more
// epoll_wait and coroutine resume per read. A request's head and body usually
// arrive together, so the body, and often the whole head, needs no read.
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

#include <cstddef>

namespace modelproxy::transport {

enum class ParseUntil { head, message };

// Feeds `parser` the bytes `buffer` holds (consuming them) as Beast's read
// operations do. True when that was enough (the head, or the whole message,
// is done) or failed (`ec`, as a read would have reported it); false when
// more bytes must be read, which a Beast read of the same parser and buffer
// then does.
template <bool isRequest, class DynamicBuffer>
bool parse_buffered(boost::beast::http::basic_parser<isRequest>& parser, DynamicBuffer& buffer, ParseUntil until,
                    boost::system::error_code& ec) {
    const auto enough = [&] { return until == ParseUntil::head ? parser.is_header_done() : parser.is_done(); };
    while (!enough()) {
        if (buffer.size() == 0) return false;
        const std::size_t used = parser.put(buffer.data(), ec);
        buffer.consume(used);
        if (ec == boost::beast::http::error::need_more) {
            ec = {};
            return false;
        }
        if (ec) return true;
        if (used == 0) return false;
    }
    return true;
}

}  // namespace modelproxy::transport
