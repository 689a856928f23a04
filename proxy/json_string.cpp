#include "proxy/json_string.hpp"

#include <boost/json/serializer.hpp>

#include <cstdint>
#include <cstring>

namespace modelproxy::proxy {

namespace {

// Printable ASCII other than `"` and `\`: the bytes this file copies without
// the serializer. (DEL and bytes from 0x80 come out of the serializer as they
// went in, but go through it, as they always have.)
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
// not (what was copied by then is left for the serializer to overwrite).
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

// The serializer's set-up and stack frame kept out of the common case.
[[gnu::noinline]] char* write_escaped(char* out, std::string_view text) {
    // Boost.JSON 1.81 escapes `"`, `\` and the control bytes (\b \t \n \f \r
    // by name, the rest as \u00XX) and passes every other byte through,
    // UTF-8 or not; the bound covers its worst case, so one read finishes.
    boost::json::serializer serializer;
    serializer.reset(boost::json::string_view(text.data(), text.size()));
    std::size_t room = json_string_bound(text.size());
    while (!serializer.done()) {
        const boost::json::string_view part = serializer.read(out, room);
        if (part.empty()) break;  // no room left: cannot happen within the bound, but never spin
        out += part.size();
        room -= part.size();
    }
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

}  // namespace modelproxy::proxy
