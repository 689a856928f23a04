// One step each of reading an upstream answer: parsing what the connection's
// read buffer already holds. Pure: no I/O (Exchange, upstream.cpp, reads).
#pragma once

#include "transport/upstream.hpp"

#include <boost/system/error_code.hpp>

#include <cstddef>

namespace modelproxy::transport {

// A response head: parses what `buffer` holds. True when the head is complete
// or refused (`ec`); false when it needs more bytes. `consumed` counts the
// head bytes the parser took so far; with what is still buffered it may not
// pass `limit`.
bool parse_head(ResponseParser& parser, beast::flat_buffer& buffer, std::size_t& consumed, std::size_t limit,
                boost::system::error_code& ec);

// The body bytes `buffer` already holds, put into the parser's body buffer
// as Beast's async_read_some does before it reads: done here, they need no
// trip through the scheduler (Beast completes through a post when it did not
// read). True when that gave body bytes, ended the message or failed (`ec`);
// false when a read is needed.
bool put_buffered(ResponseParser& parser, beast::flat_buffer& buffer, boost::system::error_code& ec);

}  // namespace modelproxy::transport
