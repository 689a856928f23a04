#include "transport/request_parser.hpp"

#include <boost/beast/http/error.hpp>

namespace modelproxy::transport {

namespace http = boost::beast::http;

RequestParser::RequestParser(RequestHead& head, std::string& body) : head_(head), body_(body) {
    head_.clear();
    body_.clear();
}

// Beast clears `ec` before each of these calls; they set it only to fail.

void RequestParser::on_request_impl(http::verb method, string_view method_string, string_view target, int version,
                                    error_code&) {
    head_.start(method, std::string_view(method_string.data(), method_string.size()),
                std::string_view(target.data(), target.size()), static_cast<unsigned>(version));
}

void RequestParser::on_response_impl(int, string_view, int, error_code& ec) {
    ec = http::error::bad_version;  // never called for a request parser
}

// A chunked body's trailer fields come here too, once the head is done:
// they are dropped (docs/behaviour.md section 4), so they can never authenticate, route,
// set a deadline or change how the body is read, and the head's text does
// not move under the views taken of it before the body.
void RequestParser::on_field_impl(http::field name, string_view name_string, string_view value, error_code&) {
    if (is_header_done()) return;
    head_.add(known_field(name), std::string_view(name_string.data(), name_string.size()), std::string_view(value.data(), value.size()));
}

void RequestParser::on_header_impl(error_code&) {}

// As Beast's string_body reader: room for a declared length at once (the
// parser's body_limit has already refused one above the limit), and
// body_padding bytes past it, so that the JSON reader reads a large body
// where it lies instead of a padded copy (request/json_body.hpp).
void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code&) {
    if (content_length) body_.reserve(static_cast<std::size_t>(*content_length) + body_padding);
}

std::size_t RequestParser::on_body_impl(string_view body, error_code&) {
    body_.append(body.data(), body.size());
    return body.size();
}

void RequestParser::on_chunk_header_impl(std::uint64_t, string_view, error_code&) {}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code&) {
    body_.append(body.data(), body.size());
    return body.size();
}

void RequestParser::on_finish_impl(error_code&) {}

}  // namespace modelproxy::transport
