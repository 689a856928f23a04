// A client request body of a declared length, read from the socket straight
// into the body's string (docs/performance.md, large requests): no pass
// through a read buffer and no copy out of it, and each read takes whatever
// the socket holds. Chunked bodies stay with the parser.
#pragma once

#include "transport/executor.hpp"
#include "transport/request_parser.hpp"

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string>

namespace modelproxy::transport {

// The bytes a request's declared Content-Length still owes once its head and
// what the read buffer held are parsed; 0 for a chunked body (the parser
// reads it, chunk by chunk) and for one without a length.
std::size_t body_left(const RequestParser& parser);

// Appends exactly `left` more bytes from `socket` to `body`. The string
// grows (its bytes touched) at most 256 KiB past what arrived, so a large
// body announced and never sent holds no memory it has not earned. Nothing
// past the body is read, so a pipelined request stays in the socket. On an
// error `body` holds what arrived; a client that ends its side mid-body is
// http::error::partial_message, as Beast says of a cut message it reads
// itself. The caller bounds the wait (ReadTimer).
Task<boost::system::error_code> read_body_rest(Socket& socket, std::string& body, std::size_t left);

}  // namespace modelproxy::transport
