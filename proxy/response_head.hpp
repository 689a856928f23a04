// Builds the head of an answer to the client as bytes: the upstream's
// end-to-end headers (hop-by-hop, framing and Content-Encoding removed: the
// proxy reframes and decodes), the x-modelproxy-* headers of docs/behaviour.md section 9,
// and the framing the proxy chose.
#pragma once

#include "transport/upstream.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace modelproxy::proxy {

// One header line, `name: value` and CRLF, appended to a head being written
// (the client's answer here, the upstream request in prepare.cpp). Four
// appends: assembling the line on the stack first and appending it once
// counted fewer instructions under callgrind, but GCC compiled that copy
// of a variable length into `rep movsq`, whose start-up cost made the
// answer head's copy 2 % of the proxy's CPU per request (perf), three times
// what the appends cost.
inline void append_field(std::string& head, std::string_view name, std::string_view value) {
    head.append(name).append(": ", 2).append(value).append("\r\n", 2);
}

class ResponseHead {
public:
    // `storage`: a string whose capacity the head is written into (its
    // content is dropped), so a caller that keeps one allocates nothing.
    explicit ResponseHead(unsigned status, std::string_view reason = {}, std::string storage = {});

    void add(std::string_view name, std::string_view value);
    // The upstream answer's end-to-end headers; never its x-should-retry
    // (section 6: the proxy is the one retry owner).
    void copy_upstream(const transport::Exchange& answer);
    // x-modelproxy-attempts, -request-id, and -model and -route: the client
    // model and route of the candidate that answers (docs/behaviour.md section 13).
    void add_modelproxy(int attempts, std::string_view request_id, std::string_view model, std::string_view route);
    // x-modelproxy-error-class, -decision, -bound (when not empty), x-should-retry: false.
    void add_failure(std::string_view error_class, std::string_view decision, std::string_view bound);
    void content_length(std::size_t length);
    void chunked();
    // The finished head, ending with the blank line.
    std::string finish();

private:
    std::string text_;
    unsigned status_;
};

}  // namespace modelproxy::proxy
