// HTTP/1.1 text as the tests write and read it: header lists that keep the
// original case and order, and formatters for raw request and response bytes.
// Nothing here validates: tests build malformed messages on purpose.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::test {

struct Header {
    std::string name;   // as written on the wire, original case
    std::string value;
};
using Headers = std::vector<Header>;

// Case-insensitive name match (RFC 9110 field names).
bool header_name_equals(std::string_view a, std::string_view b);

// First value of `name`, or nullopt.
std::optional<std::string> find_header(const Headers& headers, std::string_view name);

// Number of fields named `name` (a repeated header counts each time).
std::size_t count_header(const Headers& headers, std::string_view name);

// "HTTP/1.1 <status> <reason>\r\n" + headers + "\r\n". An empty reason takes
// the standard phrase for the status.
std::string format_response_head(unsigned status, const Headers& headers,
                                 std::string_view reason = {});

// "<METHOD> <target> HTTP/1.1\r\n" + headers + "\r\n" + body, exactly as given:
// no Host or Content-Length is added (HttpClient::request adds them).
std::string format_request(std::string_view method, std::string_view target,
                           const Headers& headers, std::string_view body = {});

// One chunk of a chunked body: "<hex size>\r\n<data>\r\n". Empty data gives
// the last chunk "0\r\n\r\n".
std::string format_chunk(std::string_view data);

}  // namespace modelproxy::test
