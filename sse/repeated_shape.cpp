#include "sse/repeated_shape.hpp"

#include <simdjson.h>

#include <cstring>

namespace modelproxy::sse {

bool RepeatedShape::learn(std::string_view line, std::string_view text) {
    known_ = false;
    if (text.empty() || std::memchr(line.data(), '\\', line.size()) != nullptr) return false;
    // Without a backslash the quotes alternate open and close; the line is
    // valid JSON (the Inspector parsed it), so every open quote has its close.
    std::size_t found = 0, open = 0, close = 0;
    std::size_t at = 0;
    while (at < line.size()) {
        const void* q = std::memchr(line.data() + at, '"', line.size() - at);
        if (!q) break;
        const std::size_t start = static_cast<std::size_t>(static_cast<const char*>(q) - line.data()) + 1;
        const void* e = std::memchr(line.data() + start, '"', line.size() - start);
        if (!e) return false;  // not valid JSON: never learned from
        const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(e) - line.data());
        if (line.substr(start, end - start) == text) {
            if (++found > 1) return false;  // ambiguous: which token is T's?
            open = start;
            close = end;
        }
        at = end + 1;
    }
    if (found != 1) return false;
    line_.assign(line);
    open_ = open;
    close_ = close;
    known_ = true;
    return true;
}

std::optional<std::string_view> RepeatedShape::match(std::string_view line) const {
    if (!known_) return std::nullopt;
    const std::size_t suffix = line_.size() - close_;
    if (line.size() <= open_ + suffix) return std::nullopt;  // M would be empty
    if (std::memcmp(line.data(), line_.data(), open_) != 0 ||
        std::memcmp(line.data() + line.size() - suffix, line_.data() + close_, suffix) != 0) {
        return std::nullopt;
    }
    const std::string_view middle = line.substr(open_, line.size() - suffix - open_);
    bool ascii = true;
    for (const char c : middle) {
        const auto b = static_cast<unsigned char>(c);
        if (b == '"' || b == '\\' || b < 0x20) return std::nullopt;
        ascii = ascii && b < 0x80;
    }
    if (!ascii && !simdjson::validate_utf8(middle.data(), middle.size())) return std::nullopt;
    return middle;
}

}  // namespace modelproxy::sse
