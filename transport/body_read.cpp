#include "transport/body_read.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>

namespace modelproxy::transport {

std::size_t body_left(const RequestParser& parser) {
    if (parser.chunked() || !parser.is_header_done()) return 0;
    const auto left = parser.content_length_remaining();
    return left ? static_cast<std::size_t>(*left) : 0;
}

Task<boost::system::error_code> read_body_rest(Socket& socket, std::string& body, std::size_t left) {
    constexpr std::size_t ahead = 256 * 1024;
    const std::size_t end = body.size() + left;
    std::size_t filled = body.size();
    boost::system::error_code ec;
    while (filled < end) {
        if (filled == body.size()) body.resize(std::min(end, filled + ahead));
        auto [read_ec, n] = co_await socket.async_read_some(
            boost::asio::buffer(body.data() + filled, body.size() - filled), use_tuple);
        filled += n;
        ec = read_ec == boost::asio::error::eof ? make_error_code(boost::beast::http::error::partial_message) : read_ec;
        if (ec) break;
    }
    body.resize(filled);
    co_return ec;
}

}  // namespace modelproxy::transport
