// An upstream answer read in one pass when it arrived whole in the strict
// common form: its head and its Content-Length body are in the
// read buffer, as a non-stream answer's nearly always are after the first
// read. The answer's counterpart of whole_request.hpp.
//
// The form (strict_head.hpp): the status line `HTTP/1.1 SP status SP reason
// CRLF` with a status from 200 to 599 other than 204 and 304 and a reason of
// visible ASCII, space and tab; fields in the strict form; exactly one
// Content-Length (an answer without one ends at the connection's close, a
// framing Beast keeps); the head within the head limit and the whole body
// there. Everything else, a 1xx, an answer to HEAD, a chunked one, one that
// needs another read, is declined untouched and Beast parses it as before
// (Exchange::read_head). What this takes is a subset of what Beast takes,
// with Beast's result: the same status, reason, version, fields, body length
// and keep-alive (tests/unit/transport/whole_answer_test.cpp compares both on
// cases and mutations, and the differential fuzz target
// tests/fuzz/whole_message_fuzz.cpp on whatever it finds).
//
// Pure: no I/O.
#pragma once

#include "transport/answer_parser.hpp"

#include <cstddef>
#include <optional>
#include <string_view>

namespace modelproxy::transport {

struct WholeAnswer {
    std::size_t head_size = 0;  // the head's bytes, then body_size bytes of body
    std::size_t body_size = 0;
    bool keep_alive = true;  // as Beast's parser says: no Connection or Proxy-Connection lists close
};

// When `bytes` begin with a whole answer in the strict form, fills `head`
// (status, reason, version, fields) and says where its body is; nullopt
// otherwise, with `head` cleared.
std::optional<WholeAnswer> read_whole_answer(std::string_view bytes, std::size_t head_limit, AnswerHead& head);

}  // namespace modelproxy::transport
