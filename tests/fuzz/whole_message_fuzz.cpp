// libFuzzer target for the one-pass readers, differential: every input is
// read as a client request by transport/whole_request.hpp and by Beast's
// parser (the proxy's RequestParser), and as an upstream answer by
// transport/whole_answer.hpp and by Beast's (the proxy's AnswerParser), each
// pair with the same limits. Checked (abort() on failure): when a reader
// takes a message, Beast takes it too, at the same length, with the same
// start line, fields in order, Content-Length, body and (an answer)
// keep-alive, and not as chunked; when it declines, it leaves what it was
// given empty. Inputs a reader declines that Beast takes are fine: those are
// Beast's to read in the proxy too.
#include "check.hpp"

#include "transport/whole_answer.hpp"
#include "transport/whole_request.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace tp = modelproxy::transport;

constexpr std::size_t header_limit = 1024;
constexpr std::uint64_t body_limit = 256;

void same_fields(const tp::FlatFields& a, const tp::FlatFields& b) {
    MP_FUZZ_CHECK(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        MP_FUZZ_CHECK(a.at(i).name() == b.at(i).name());
        MP_FUZZ_CHECK(a.at(i).name_string() == b.at(i).name_string());
        MP_FUZZ_CHECK(a.at(i).value() == b.at(i).value());
    }
}

void check_request(std::string_view bytes) {
    tp::RequestHead head;
    std::string body = "left from the last request";
    const auto whole = tp::read_whole_request(bytes, header_limit, body_limit, head, body);
    if (!whole) {
        MP_FUZZ_CHECK(head.size() == 0 && head.target().empty() && body.empty());
        return;
    }
    tp::RequestHead beast_head;
    std::string beast_body;
    tp::RequestParser parser(beast_head, beast_body);
    parser.eager(true);
    parser.header_limit(static_cast<std::uint32_t>(header_limit));
    parser.body_limit(body_limit);
    boost::system::error_code ec;
    std::size_t used = 0;
    while (!parser.is_done()) {
        const std::size_t n = parser.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
        MP_FUZZ_CHECK_THAT(!ec, "Beast refuses a request the one-pass reader took");
        MP_FUZZ_CHECK_THAT(n > 0, "Beast wants more of a request the one-pass reader took whole");
        used += n;
    }
    MP_FUZZ_CHECK(whole->size == used);
    MP_FUZZ_CHECK(!parser.chunked());
    const auto length = parser.content_length();
    MP_FUZZ_CHECK(whole->content_length.has_value() == length.has_value());
    MP_FUZZ_CHECK(!length || *whole->content_length == *length);
    MP_FUZZ_CHECK(head.method() == beast_head.method());
    MP_FUZZ_CHECK(head.method_string() == beast_head.method_string());
    MP_FUZZ_CHECK(head.target() == beast_head.target());
    MP_FUZZ_CHECK(head.version() == beast_head.version());
    MP_FUZZ_CHECK(body == beast_body);
    same_fields(head, beast_head);
}

void check_answer(std::string_view bytes) {
    tp::AnswerHead head;
    head.start(999, "left from the last answer", 10);
    const auto whole = tp::read_whole_answer(bytes, header_limit, head);
    if (!whole) {
        MP_FUZZ_CHECK(head.size() == 0 && head.result_int() == 0 && head.reason().empty());
        return;
    }
    tp::AnswerHead beast_head;
    tp::BodyPiece piece;
    tp::SpillBuffer spill{4096};
    tp::AnswerParser parser(beast_head, piece);
    parser.eager(true);
    parser.header_limit(static_cast<std::uint32_t>(header_limit));
    parser.body_limit(boost::none);
    std::string body;
    boost::system::error_code ec;
    std::size_t used = 0;
    while (!parser.is_done()) {
        piece.start(spill);
        const std::size_t n = parser.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
        if (ec == boost::beast::http::error::need_buffer) ec = {};
        MP_FUZZ_CHECK_THAT(!ec, "Beast refuses an answer the one-pass reader took");
        MP_FUZZ_CHECK_THAT(n > 0, "Beast wants more of an answer the one-pass reader took whole");
        body.append(piece.piece);
        used += n;
    }
    MP_FUZZ_CHECK(whole->head_size + whole->body_size == used);
    MP_FUZZ_CHECK(bytes.substr(whole->head_size, whole->body_size) == body);
    MP_FUZZ_CHECK(!parser.chunked());
    MP_FUZZ_CHECK(whole->keep_alive == parser.keep_alive());
    MP_FUZZ_CHECK(head.result_int() == beast_head.result_int());
    MP_FUZZ_CHECK(head.reason() == beast_head.reason());
    MP_FUZZ_CHECK(head.version() == beast_head.version());
    same_fields(head, beast_head);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    check_request(bytes);
    check_answer(bytes);
    return 0;
}
