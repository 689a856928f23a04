// A client request read in one pass when it arrived whole in the strict
// common form: its head and its Content-Length body are in the
// read buffer, as nearly every API request's are after the first read.
//
// Beast's parser (request_parser.hpp) walks a head byte by byte and reads
// each framing field through its general token-list rules: about 3 k user
// instructions for an SDK's request of six fields (callgrind, deploy/bench).
// This reads the form SDKs send in one pass, and only that form:
//
//   - the request line `method SP target SP HTTP/1.1 CRLF`: the method a
//     token, the target visible ASCII;
//   - fields in the strict form (strict_head.hpp): token names, values of
//     visible ASCII, space and tab, no line folded into the next; no
//     Transfer-Encoding and no Upgrade field; at most one Content-Length
//     field, of 1 to 18 digits, here within the body limit; every
//     Connection and Proxy-Connection value a list of tokens;
//   - the head within the header limit, and the whole body there.
//
// Everything else, a request that needs more reads included, is declined,
// untouched, and Beast parses it as before: what this takes is a subset of
// what Beast takes, and for it the result is Beast's (the same method,
// target, version, fields and body; tests/unit/transport/whole_request_test.cpp
// and the differential fuzz target tests/fuzz/whole_message_fuzz.cpp hold
// both to that). No framing decision is made here that Beast would make
// differently: a request with any doubt about its length is Beast's.
//
// Pure: no I/O.
#pragma once

#include "transport/request_parser.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace modelproxy::transport {

struct WholeRequest {
    std::size_t size = 0;                          // head and body: the bytes to consume
    std::optional<std::uint64_t> content_length;  // as Beast's parser reports it
};

// When `bytes` begin with a whole request in the strict form, fills `head`
// (cleared first) and `body` (assigned) and says how many bytes it took;
// nullopt otherwise, with `head` and `body` cleared.
std::optional<WholeRequest> read_whole_request(std::string_view bytes, std::size_t header_limit,
                                               std::uint64_t body_limit, RequestHead& head, std::string& body);

}  // namespace modelproxy::transport
