// What a request head's framing alone decides (docs/behaviour.md section 4), before any
// byte of its body: strict framing, the body limit, the request's
// Content-Encoding, and 100 Continue.
// Pure functions over plain values; no I/O.
#pragma once

#include "request/local_answers.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace modelproxy::request {

// A request Content-Encoding the proxy accepts: absent (empty) or identity.
// Anything else is 415 (section 4).
bool acceptable_request_encoding(std::string_view content_encoding);

// What the session read of a request head, before its body.
struct RequestHead {
    std::string_view method;         // as sent
    unsigned version = 11;           // 10 for HTTP/1.0, 11 for HTTP/1.1
    unsigned host_fields = 1;        // how many Host fields (2 stands for any more)
    bool transfer_encoding = false;  // at least one Transfer-Encoding field
    bool chunked = false;            // its final coding is chunked (as the HTTP parser read it)
    std::optional<std::uint64_t> content_length;
    std::string_view content_encoding;  // the first field's value, "" when none
    std::string_view expect;            // the first field's value, "" when none

    // A body follows the head (chunked, or a Content-Length above 0).
    bool has_body() const { return chunked || content_length.value_or(0) > 0; }
};

// What the head alone decides, before the body is read: a refusal (the
// connection then closes), or whether to answer 100 Continue first.
struct HeadCheck {
    std::optional<ClientError> refusal;
    bool send_continue = false;
};

// Strict framing (docs/behaviour.md section 4), each a 400 bad_request:
//  - a method of anything but upper-case letters, '-' and '_': methods are
//    case-sensitive, and `post` is not POST (valid_method);
//  - an HTTP/1.1 request without exactly one Host field, or any request with
//    several (RFC 9112 section 3.2);
//  - a Transfer-Encoding in an HTTP/1.0 request (RFC 9112 section 6.1: its
//    framing is faulty), or one whose final coding is not chunked (RFC 9112
//    section 6.3: the body length is unknown, so the bytes after the head
//    could be read as a body or as another request).
// Then a Content-Length over `max_body_bytes`: 413; a Content-Encoding other
// than identity: 415 (section 4). Expect: 100-continue is answered by the
// proxy, never forwarded, and never to an HTTP/1.0 client (RFC 9110 section
// 10.1.1 has it ignore the expectation).
HeadCheck check_request_head(const RequestHead& head, std::uint64_t max_body_bytes);

// A method token of upper-case ASCII letters, '-' and '_', as nginx accepts:
// every registered method is, and a case variant of one (`post`, `Get`) is
// not taken for it, nor passed on to an upstream that might.
bool valid_method(std::string_view method);

}  // namespace modelproxy::request
