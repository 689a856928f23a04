// libFuzzer target for transport/whole_request.hpp, differential: every
// input is read by the one-pass reader and by Beast's parser (the proxy's
// RequestParser on basic_parser<true>), with the same limits. Checked
// (abort() on failure): when the reader takes a request, Beast takes it too,
// at the same length, with the same method, target, version, fields in
// order, Content-Length and body, and not as chunked; when it declines, it
// leaves the head and body it was given empty. Inputs it declines that Beast
// takes are fine: those are Beast's to read in the proxy too.
#include "check.hpp"

#include "transport/whole_request.hpp"

#include <boost/asio/buffer.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace tp = modelproxy::transport;

constexpr std::size_t header_limit = 1024;
constexpr std::uint64_t body_limit = 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    tp::RequestHead head;
    std::string body = "left from the last request";
    const auto whole = tp::read_whole_request(bytes, header_limit, body_limit, head, body);
    if (!whole) {
        MP_FUZZ_CHECK(head.size() == 0 && head.target().empty() && body.empty());
        return 0;
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
    MP_FUZZ_CHECK(head.size() == beast_head.size());
    for (std::size_t i = 0; i < head.size(); ++i) {
        MP_FUZZ_CHECK(head.at(i).name() == beast_head.at(i).name());
        MP_FUZZ_CHECK(head.at(i).name_string() == beast_head.at(i).name_string());
        MP_FUZZ_CHECK(head.at(i).value() == beast_head.at(i).value());
    }
    return 0;
}
