// The upstream answer's parser: Beast's basic_parser<false> for
// the HTTP/1.1 grammar, framing, chunked decoding and limits, with the head
// kept as a flat list of fields in one string (AnswerHead) instead of in
// Beast's fields container.
//
// Beast's http::parser inserts every field into basic_fields: one block per
// field and a case-insensitive red-black tree insert, about 1.9 k user
// instructions per answer of seven fields (callgrind, deploy/bench), and a
// provider's answer carries two or three times that many (rate-limit and
// tracing headers). The proxy only walks the fields in order (field_scan.hpp,
// ResponseHead::copy_upstream), so an append per field is enough
// (flat_fields.hpp; a client's request is kept the same way,
// request_parser.hpp). The AnswerHead lives in its Connection and is cleared
// for each answer: a pooled connection's answers reuse its capacity.
//
// The body goes to a BodyPiece, viewed where it lies (piece_body.hpp).
#pragma once

#include "transport/flat_fields.hpp"
#include "transport/piece_body.hpp"

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/field.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace modelproxy::transport {

// An answer's status line and fields, in arrival order. Only the head's
// own: a chunked body's trailer fields are dropped as they are parsed (docs/behaviour.md
// section 4: trailers are never merged into a head), so nothing read after
// the body can reach the client's head or change how the answer is read.
// The views a Field gives point into the head's text: valid until the head
// is cleared.
class AnswerHead : public FlatFields {
public:
    unsigned result_int() const { return status_; }
    // The reason phrase as sent; empty when the status line had none.
    std::string_view reason() const { return std::string_view(text_).substr(0, reason_size_); }
    unsigned version() const { return version_; }
    // Every byte of the reason phrase and the fields' names and values, as
    // one text (what the credential scan reads of a head in one call).
    std::string_view bytes() const { return text_; }

    // The status line, a parser's first step: the fields and text start over.
    void start(unsigned status, std::string_view reason, unsigned version) {
        clear_fields();
        status_ = status;
        version_ = version;
        reason_size_ = static_cast<std::uint32_t>(reason.size());
        text_.append(reason);
    }

    // Ready for the next answer, keeping the capacity.
    void clear() {
        clear_fields();
        status_ = 0;
        version_ = 0;
        reason_size_ = 0;
    }

private:
    unsigned status_ = 0;
    unsigned version_ = 0;
    std::uint32_t reason_size_ = 0;  // the reason is the text's start
};

// A status outside 100..599 (docs/behaviour.md section 4) fails the parse with
// http::error::bad_status, as whole_answer.hpp declines it: both readers
// refuse it.
class AnswerParser : public boost::beast::http::basic_parser<false> {
public:
    // Clears `head`; the answer's head goes there and its body to `body`.
    AnswerParser(AnswerHead& head, BodyPiece& body);

    const AnswerHead& head() const { return head_; }
    BodyPiece& body() { return body_; }

private:
    using string_view = boost::beast::string_view;
    using error_code = boost::system::error_code;

    void on_request_impl(boost::beast::http::verb, string_view, string_view, int, error_code& ec) override;
    void on_response_impl(int code, string_view reason, int version, error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                       error_code& ec) override;
    void on_header_impl(error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code& ec) override;
    std::size_t on_body_impl(string_view body, error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t size, string_view extensions, error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body, error_code& ec) override;
    void on_finish_impl(error_code& ec) override;

    AnswerHead& head_;
    BodyPiece& body_;
    bool head_done_ = false;  // fields from here on are a chunked body's trailer
};

}  // namespace modelproxy::transport
