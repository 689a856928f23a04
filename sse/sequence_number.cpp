#include "sse/sequence_number.hpp"

#include <charconv>

namespace modelproxy::sse {

namespace {

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::optional<std::uint64_t> sequence_number(std::string_view data) {
    constexpr std::string_view key = "\"sequence_number\"";
    for (std::size_t at = data.find(key); at != std::string_view::npos; at = data.find(key, at + 1)) {
        std::size_t i = at + key.size();
        while (i < data.size() && json_space(data[i])) ++i;
        if (i == data.size() || data[i] != ':') continue;  // a string value, not a key
        ++i;
        while (i < data.size() && json_space(data[i])) ++i;
        std::uint64_t value = 0;
        const char* begin = data.data() + i;
        const char* end = data.data() + data.size();
        const auto [stop, ec] = std::from_chars(begin, end, value);
        if (ec != std::errc() || stop == begin || (stop < end && (*stop == '.' || *stop == 'e' || *stop == 'E')))
            return std::nullopt;
        return value;
    }
    return std::nullopt;
}

}  // namespace modelproxy::sse
