#include "sse/json_unescape.hpp"

#include <cstdint>

namespace modelproxy::sse {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The code unit of `\uXXXX` at text[at] (at the backslash), or -1.
long code_unit(std::string_view text, std::size_t at) {
    if (text.size() - at < 6 || text[at] != '\\' || text[at + 1] != 'u') return -1;
    long unit = 0;
    for (std::size_t i = at + 2; i < at + 6; ++i) {
        const int v = hex_value(text[i]);
        if (v < 0) return -1;
        unit = unit * 16 + v;
    }
    return unit;
}

char* put_utf8(std::uint32_t cp, char* out) {
    if (cp < 0x80) {
        *out++ = static_cast<char>(cp);
    } else if (cp < 0x800) {
        *out++ = static_cast<char>(0xC0 | (cp >> 6));
        *out++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = static_cast<char>(0xE0 | (cp >> 12));
        *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        *out++ = static_cast<char>(0xF0 | (cp >> 18));
        *out++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out++ = static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

}  // namespace

char* unescape_json(std::string_view text, char* out) {
    std::size_t at = 0;
    while (at < text.size()) {
        const void* found = std::memchr(text.data() + at, '\\', text.size() - at);
        const std::size_t slash = found ? static_cast<std::size_t>(static_cast<const char*>(found) - text.data())
                                        : text.size();
        std::memcpy(out, text.data() + at, slash - at);
        out += slash - at;
        at = slash;
        if (at == text.size()) break;
        if (at + 1 == text.size()) {
            *out++ = '\\';
            break;
        }
        char simple = 0;
        switch (text[at + 1]) {
            case '"': simple = '"'; break;
            case '\\': simple = '\\'; break;
            case '/': simple = '/'; break;
            case 'b': simple = '\b'; break;
            case 'f': simple = '\f'; break;
            case 'n': simple = '\n'; break;
            case 'r': simple = '\r'; break;
            case 't': simple = '\t'; break;
            default: break;
        }
        if (simple) {
            *out++ = simple;
            at += 2;
            continue;
        }
        const long unit = code_unit(text, at);
        if (unit < 0) {
            *out++ = '\\';  // not an escape: kept, and what follows read as text
            at += 1;
            continue;
        }
        std::uint32_t cp = static_cast<std::uint32_t>(unit);
        at += 6;
        if (unit >= 0xD800 && unit <= 0xDBFF) {
            const long low = code_unit(text, at);
            if (low >= 0xDC00 && low <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + static_cast<std::uint32_t>(low - 0xDC00);
                at += 6;
            }
        }
        out = put_utf8(cp, out);
    }
    return out;
}

}  // namespace modelproxy::sse
