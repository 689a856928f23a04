#include "transport/whole_request.hpp"

#include "transport/strict_head.hpp"

#include <boost/beast/http/verb.hpp>

#include <cstring>

namespace modelproxy::transport {

namespace {

namespace http = boost::beast::http;

}  // namespace

std::optional<WholeRequest> read_whole_request(std::string_view bytes, std::size_t header_limit,
                                               std::uint64_t body_limit, RequestHead& head, std::string& body) {
    const auto decline = [&] {
        head.clear();
        body.clear();
        return std::nullopt;
    };
    const std::optional<std::size_t> whole = strict::whole_head(bytes, header_limit);
    if (!whole) return decline();
    const std::size_t head_size = *whole;
    const char* p = bytes.data();
    const char* const end = p + head_size;

    // The request line.
    const char* const method = p;
    while (strict::token_bytes[*p]) ++p;
    if (p == method || *p != ' ') return decline();
    const std::string_view method_string(method, static_cast<std::size_t>(p - method));
    const char* const target = ++p;
    while (*p > ' ' && *p < 0x7f) ++p;  // visible ASCII (signed char: 0x80 and above stop it too)
    if (p == target || *p != ' ') return decline();
    const std::string_view target_string(target, static_cast<std::size_t>(p - target));
    ++p;
    if (end - p < 10 || std::memcmp(p, "HTTP/1.1\r\n", 10) != 0) return decline();
    p += 10;
    head.start(http::string_to_verb(method_string), method_string, target_string, 11);

    // The fields.
    strict::Framing framing;
    if (!strict::read_fields(p, end, head, framing)) return decline();

    // The body: within the limit (Beast refuses one above it) and all there.
    const std::uint64_t body_size = framing.content_length.value_or(0);
    if (body_size > body_limit || body_size > bytes.size() - head_size) return decline();
    body.assign(end, static_cast<std::size_t>(body_size));
    return WholeRequest{head_size + static_cast<std::size_t>(body_size), framing.content_length};
}

}  // namespace modelproxy::transport
