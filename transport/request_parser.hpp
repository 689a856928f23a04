// A client request's parser: Beast's basic_parser<true> for the
// HTTP/1.1 grammar, framing, chunked decoding and limits, with the head kept
// flat (RequestHead, flat_fields.hpp) and the body in a string.
//
// Beast's http::request_parser kept the head in basic_fields (a block and a
// red-black tree insert per field, and its tree torn down after the turn),
// and the session read the head with one parser and the body with another
// made from it. One parser of this kind reads both; the head and body it
// fills belong to the request's slot (proxy/turn.hpp) and keep their
// capacity from request to request.
#pragma once

#include "transport/flat_fields.hpp"

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/verb.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace modelproxy::transport {

// A request's method, target, version and the head's fields in arrival
// order (a chunked body's trailer fields are not kept: RequestParser).
class RequestHead : public FlatFields {
public:
    boost::beast::http::verb method() const { return method_; }
    // The method as sent (Beast's verb is unknown for one it does not name).
    std::string_view method_string() const { return std::string_view(text_).substr(0, method_size_); }
    std::string_view target() const { return std::string_view(text_).substr(method_size_, target_size_); }
    unsigned version() const { return version_; }

    // The request line, a parser's first step: the fields and text start over.
    void start(boost::beast::http::verb method, std::string_view method_string, std::string_view target,
               unsigned version) {
        clear_fields();
        method_ = method;
        method_size_ = static_cast<std::uint32_t>(method_string.size());
        target_size_ = static_cast<std::uint32_t>(target.size());
        version_ = version;
        text_.append(method_string);
        text_.append(target);
    }

    // Ready for the next request, keeping the capacity.
    void clear() {
        clear_fields();
        method_ = boost::beast::http::verb::unknown;
        method_size_ = 0;
        target_size_ = 0;
        version_ = 0;
    }

private:
    boost::beast::http::verb method_ = boost::beast::http::verb::unknown;
    std::uint32_t method_size_ = 0;  // the method, then the target, are the text's start
    std::uint32_t target_size_ = 0;
    unsigned version_ = 0;
};

class RequestParser : public boost::beast::http::basic_parser<true> {
public:
    using error_code = boost::system::error_code;
    // Room the body string is given past a declared length (at least the
    // JSON reader's padding: prepare.cpp checks it).
    static constexpr std::size_t body_padding = 64;

    // Clears `head` and `body`; the request's head goes to `head` and its
    // body is appended to `body` (whose capacity is kept).
    RequestParser(RequestHead& head, std::string& body);

    const RequestHead& head() const { return head_; }
    std::string& body() { return body_; }

private:
    using string_view = boost::beast::string_view;

    void on_request_impl(boost::beast::http::verb method, string_view method_string, string_view target,
                         int version, error_code& ec) override;
    void on_response_impl(int code, string_view reason, int version, error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                       error_code& ec) override;
    void on_header_impl(error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code& ec) override;
    std::size_t on_body_impl(string_view body, error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t size, string_view extensions, error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body, error_code& ec) override;
    void on_finish_impl(error_code& ec) override;

    RequestHead& head_;
    std::string& body_;
};

}  // namespace modelproxy::transport
