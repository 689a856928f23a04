// The header fields the proxy reads, found in one walk of a Beast fields
// list instead of one lookup each. Beast's find() and operator[]
// search a red-black tree keyed with a case-insensitive compare, a few hundred
// instructions a lookup; a walk switches on the field enum kept while parsing
// (known_field, flat_fields.hpp), and compares name strings only for names
// kept as field::unknown.
//
// Each value is the FIRST field of that name, as find() and operator[] give
// (std::nullopt when there is none). The views point into the fields' own
// storage: valid while those fields exist and are not erased (Beast allocates
// each field separately, so moving the container or adding fields, such as a
// chunked body's trailers, leaves them valid; a trailer is not seen by a scan
// made before it was read). An upstream answer's fields are an AnswerHead
// (answer_parser.hpp), one string that never grows after the head (its
// trailers are dropped): a view is valid until the head is cleared.
//
// Pure: no I/O.
#pragma once

#include "transport/answer_parser.hpp"
#include "transport/flat_fields.hpp"

#include <optional>
#include <string_view>

namespace modelproxy::transport {

using FieldValue = std::optional<std::string_view>;

// A client request's fields that the session and the request rules read.
struct RequestFields {
    FieldValue content_type;
    FieldValue content_encoding;
    FieldValue expect;
    FieldValue connection;
    FieldValue authorization;
    FieldValue x_api_key;
    FieldValue x_request_id;
    FieldValue x_modelproxy_timeout_ms;
    FieldValue x_stainless_timeout;
    FieldValue x_stainless_read_timeout;
    bool transfer_encoding = false;  // at least one Transfer-Encoding field
    bool connection_repeated = false;  // more than one Connection field: its tokens are in all of them
    bool connection_close = false;     // some Connection field lists "close" (any case)
    unsigned host_fields = 0;          // how many Host fields, counted up to 2
};

// An upstream answer's fields that the transport and the turn read.
struct ResponseFields {
    FieldValue content_type;
    FieldValue content_encoding;
    FieldValue connection;
    FieldValue retry_after;
    FieldValue retry_after_ms;
};

RequestFields scan_request(const FlatFields& fields);
ResponseFields scan_response(const AnswerHead& head);

// Whether the connection may carry another request after this one (docs/behaviour.md
// section 4): an HTTP/1.1 request's, unless any of its Connection fields
// lists "close" (all of them are read together, where Beast's
// message::keep_alive() reads only the first). An HTTP/1.0 request's never:
// such a client is answered in HTTP/1.0 terms, one request per connection,
// and a stream to it is delimited by the close.
bool keep_alive(unsigned version, const RequestFields& fields);

}  // namespace modelproxy::transport
