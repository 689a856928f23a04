#include "transport/answer_parser.hpp"

namespace modelproxy::transport {

namespace http = boost::beast::http;

AnswerParser::AnswerParser(AnswerHead& head, BodyPiece& body) : head_(head), body_(body) {
    head_.clear();
}

void AnswerParser::on_request_impl(http::verb, string_view, string_view, int, error_code& ec) {
    ec = http::error::bad_method;  // never called for a response parser
}

// Beast clears `ec` before each of these calls; they set it only to fail.

void AnswerParser::on_response_impl(int code, string_view reason, int version, error_code& ec) {
    // docs/behaviour.md section 4: a status outside 100..599 is a bad response (class
    // network), never an answer to pass on. Beast takes any three digits.
    if (code < 100 || code > 599) {
        ec = http::error::bad_status;
        return;
    }
    head_.start(static_cast<unsigned>(code), std::string_view(reason.data(), reason.size()),
                static_cast<unsigned>(version));
}

void AnswerParser::on_field_impl(http::field name, string_view name_string, string_view value, error_code&) {
    // After the head, Beast reports a chunked body's trailer fields here too:
    // parsed (so the framing is checked) and dropped (docs/behaviour.md section 4).
    if (head_done_) return;
    head_.add(known_field(name), std::string_view(name_string.data(), name_string.size()), std::string_view(value.data(), value.size()));
}

void AnswerParser::on_header_impl(error_code&) { head_done_ = true; }

void AnswerParser::on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) {}

std::size_t AnswerParser::on_body_impl(string_view body, error_code& ec) {
    return body_.take(std::string_view(body.data(), body.size()), ec);
}

void AnswerParser::on_chunk_header_impl(std::uint64_t, string_view, error_code&) {}

std::size_t AnswerParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) {
    return body_.take(std::string_view(body.data(), body.size()), ec);
}

void AnswerParser::on_finish_impl(error_code&) {}

}  // namespace modelproxy::transport
