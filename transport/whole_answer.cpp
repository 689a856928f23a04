#include "transport/whole_answer.hpp"

#include "transport/strict_head.hpp"

#include <cstring>

namespace modelproxy::transport {

std::optional<WholeAnswer> read_whole_answer(std::string_view bytes, std::size_t head_limit, AnswerHead& head) {
    const auto decline = [&] {
        head.clear();
        return std::nullopt;
    };
    const std::optional<std::size_t> whole = strict::whole_head(bytes, head_limit);
    if (!whole) return decline();
    const std::size_t head_size = *whole;
    const char* p = bytes.data();
    const char* const end = p + head_size;

    // The status line.
    if (head_size < 17 || std::memcmp(p, "HTTP/1.1 ", 9) != 0) return decline();
    if (p[9] < '2' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' || p[12] != ' ')
        return decline();
    const unsigned status = static_cast<unsigned>((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
    if (status == 204 || status == 304) return decline();  // no body, whatever the head says: Beast's
    const char* const reason = p + 13;
    const char* const cr = strict::text_to_cr(reason, end);
    if (!cr || cr[1] != '\n') return decline();
    head.start(status, std::string_view(reason, static_cast<std::size_t>(cr - reason)), 11);

    // The fields, and a Content-Length body that is all there.
    strict::Framing framing;
    if (!strict::read_fields(cr + 2, end, head, framing)) return decline();
    if (!framing.content_length || *framing.content_length > bytes.size() - head_size) return decline();
    return WholeAnswer{head_size, static_cast<std::size_t>(*framing.content_length), !framing.close};
}

}  // namespace modelproxy::transport
