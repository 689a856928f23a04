#include "transport/parse_step.hpp"

namespace modelproxy::transport {

bool parse_head(ResponseParser& parser, beast::flat_buffer& buffer, std::size_t& consumed, std::size_t limit,
                boost::system::error_code& ec) {
    if (buffer.size() > 0) {
        const std::size_t used = parser.put(buffer.data(), ec);
        buffer.consume(used);
        consumed += used;
        if (ec == http::error::need_more) ec = {};
        if (ec || parser.is_header_done()) return true;
    }
    if (consumed + buffer.size() > limit) {
        ec = http::error::header_limit;
        return true;
    }
    return false;
}

bool put_buffered(ResponseParser& parser, beast::flat_buffer& buffer, boost::system::error_code& ec) {
    return parse_buffered(parser, buffer, ParseUntil::message, ec) || !parser.body().piece.empty();
}

}  // namespace modelproxy::transport
