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
    const std::size_t room = parser.get().body().size;
    // Several chunks may wait: each put takes one step (a chunk header or
    // data), so go on until the body buffer is full or a read is needed.
    while (buffer.size() > 0 && !parser.is_done()) {
        const std::size_t used = parser.put(buffer.data(), ec);
        buffer.consume(used);
        if (ec == http::error::need_buffer) {  // the body buffer is full
            ec = {};
            return true;
        }
        if (ec == http::error::need_more) {  // a chunk header or trailer split by the read
            ec = {};
            break;
        }
        if (ec) return true;
        if (used == 0) break;
    }
    return parser.is_done() || parser.get().body().size < room;
}

}  // namespace modelproxy::transport
