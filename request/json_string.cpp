#include "request/json_string.hpp"

#include <cstdint>
#include <cstring>

namespace modelproxy::request {

namespace {

// Printable ASCII other than `"` and `\`: the bytes copied without a look
// at each (write_escaped handles all others).
bool plain_byte(char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }

constexpr std::uint64_t kOnes = 0x0101010101010101ull;
constexpr std::uint64_t kHighs = 0x8080808080808080ull;

// plain_byte for 8 bytes at once, the copy's common case (a request id is
// about 20 bytes): byte-at-a-time checking was 9 instructions a byte. Each
// term sets a byte's high bit for "some byte is below 0x20", "some byte is
// 0x7f or above", "some byte is `"`", "some byte is `\`"; borrows and carries
// can mark extra bytes only beyond a byte that already matched, so the
// yes/no answer is exact (the usual SWAR has-less/has-more/has-zero tests).
// Inlined: as a call it cost as much again as its dozen instructions.
[[gnu::always_inline]] inline bool plain_word(std::uint64_t w) {
    const std::uint64_t control = (w - kOnes * 0x20) & ~w;
    const std::uint64_t del_or_high = (w + kOnes * 0x01) | w;
    const std::uint64_t q = w ^ (kOnes * '"');
    const std::uint64_t quote = (q - kOnes) & ~q;
    const std::uint64_t b = w ^ (kOnes * '\\');
    const std::uint64_t backslash = (b - kOnes) & ~b;
    return ((control | del_or_high | quote | backslash) & kHighs) == 0;
}

// Copies `text` to `out` while it is plain; false at the first byte that is
// not (what was copied by then is left for write_escaped to overwrite).
bool copy_plain(char* out, std::string_view text) {
    const char* in = text.data();
    const std::size_t size = text.size();
    if (size < 8) {
        for (std::size_t i = 0; i < size; ++i) {
            if (!plain_byte(in[i])) return false;
            out[i] = in[i];
        }
        return true;
    }
    std::uint64_t w;
    std::size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        std::memcpy(&w, in + i, 8);
        if (!plain_word(w)) return false;
        std::memcpy(out + i, &w, 8);
    }
    if (i < size) {  // the last 8 bytes, overlapping what was copied already
        std::memcpy(&w, in + size - 8, 8);
        if (!plain_word(w)) return false;
        std::memcpy(out + size - 8, &w, 8);
    }
    return true;
}

// The length of the well-formed UTF-8 sequence of two to four bytes that
// `s` (holding `n` > 0 bytes, s[0] >= 0x80) begins with, or 0 when it begins
// with none (Unicode 15, table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF).
std::size_t utf8_sequence(const unsigned char* s, std::size_t n) {
    const unsigned char c = s[0];
    const auto tail = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
        return i < n && s[i] >= lo && s[i] <= hi;
    };
    if (c >= 0xC2 && c <= 0xDF) return tail(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
        const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
        return tail(1, lo, hi) && tail(2) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
        const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
        return tail(1, lo, hi) && tail(2) && tail(3) ? 4 : 0;
    }
    return 0;
}

char* write_u00(char* out, unsigned char c) {
    static constexpr char hex[] = "0123456789abcdef";
    std::memcpy(out, "\\u00", 4);
    out[4] = hex[c >> 4];
    out[5] = hex[c & 15];
    return out + 6;
}

// The text that is not all plain, kept out of the common case. Every byte
// the client sent comes out as valid JSON text whatever it was (docs/behaviour.md section
// 10: a record line must parse): `"` and `\` escaped; the control
// characters, C0, DEL and C1 alike, escaped (\n, \r, \t, \b, \f by name,
// the rest as \u00XX), so no record carries a raw control byte into a log
// or terminal; well-formed UTF-8 copied as it is; and each byte that is not
// part of a well-formed UTF-8 sequence replaced by U+FFFD, the replacement
// character (3 bytes, within the bound of 6 per input byte).
[[gnu::noinline]] char* write_escaped(char* out, std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    *out++ = '"';
    for (std::size_t i = 0; i < n;) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            ++i;
            char named = 0;
            switch (c) {
                case '"': named = '"'; break;
                case '\\': named = '\\'; break;
                case '\n': named = 'n'; break;
                case '\r': named = 'r'; break;
                case '\t': named = 't'; break;
                case '\b': named = 'b'; break;
                case '\f': named = 'f'; break;
                default: break;
            }
            if (named) {
                *out++ = '\\';
                *out++ = named;
            } else if (c < 0x20 || c == 0x7f) {
                out = write_u00(out, c);
            } else {
                *out++ = static_cast<char>(c);
            }
            continue;
        }
        const std::size_t size = utf8_sequence(s + i, n - i);
        if (size == 0) {
            std::memcpy(out, "\xEF\xBF\xBD", 3);  // U+FFFD
            out += 3;
            ++i;
        } else if (c == 0xC2 && s[i + 1] < 0xA0) {  // U+0080..U+009F, the C1 controls
            out = write_u00(out, s[i + 1]);
            i += 2;
        } else {
            std::memcpy(out, s + i, size);
            out += size;
            i += size;
        }
    }
    *out++ = '"';
    return out;
}

}  // namespace

char* write_json_string(char* out, std::string_view text) {
    if (!copy_plain(out + 1, text)) return write_escaped(out, text);
    out[0] = '"';
    out[1 + text.size()] = '"';
    return out + text.size() + 2;
}

void append_json_string(std::string& out, std::string_view text) {
    const std::size_t start = out.size();
    out.resize(start + json_string_bound(text.size()));
    char* end = write_json_string(out.data() + start, text);
    out.resize(static_cast<std::size_t>(end - out.data()));
}

}  // namespace modelproxy::request
