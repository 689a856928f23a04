#include "transport/strict_head.hpp"

#include "policy/ascii.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace modelproxy::transport::strict {

namespace {

namespace http = boost::beast::http;

constexpr ByteTable text_bytes = [] {
    ByteTable t;
    t.yes['\t'] = true;
    for (int c = 0x20; c < 0x7f; ++c) t.yes[c] = true;
    return t;
}();

bool is_ows(char c) { return c == ' ' || c == '\t'; }

// Beast's rule for a Connection value (opt_token_list): tokens separated by
// commas, optional whitespace around each, empty elements allowed. Notes a
// "close" among them.
bool token_list(std::string_view value, bool& close) {
    for (;;) {
        const std::size_t comma = value.find(',');
        std::string_view element = value.substr(0, comma);
        while (!element.empty() && is_ows(element.front())) element.remove_prefix(1);
        while (!element.empty() && is_ows(element.back())) element.remove_suffix(1);
        for (char c : element)
            if (!token_bytes[c]) return false;
        if (policy::iequals(element, "close")) close = true;
        if (comma == std::string_view::npos) return true;
        value.remove_prefix(comma + 1);
    }
}

// 1 to 18 digits: a length Beast reads as the same number, far from overflow.
std::optional<std::uint64_t> digits(std::string_view value) {
    if (value.empty() || value.size() > 18) return std::nullopt;
    std::uint64_t n = 0;
    for (char c : value) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
}

}  // namespace

std::optional<std::size_t> whole_head(std::string_view bytes, std::size_t limit) {
    // Only a CRLFCRLF that ends within `limit` counts: the first one there
    // is the first one of all, or there is none within it.
    const std::size_t n = std::min(bytes.size(), limit);
    const char* const s = bytes.data();
    // Sixteen positions at a time (GCC's vector extensions: SSE2 on x86-64,
    // NEON on arm64). string_view::find calls memchr at each CR, one per
    // line: two thirds of the cost of finding a request's end.
    using Bytes = char __attribute__((vector_size(16)));
    static_assert(std::endian::native == std::endian::little, "a mask's byte k is at bits 8k");
    std::size_t i = 0;
    for (; i + 19 <= n; i += 16) {  // the loads read s[i] to s[i + 18]
        Bytes a, b, c, d;
        std::memcpy(&a, s + i, 16);
        std::memcpy(&b, s + i + 1, 16);
        std::memcpy(&c, s + i + 2, 16);
        std::memcpy(&d, s + i + 3, 16);
        const auto at = (a == '\r') & (b == '\n') & (c == '\r') & (d == '\n');  // 0xff where one begins
        std::uint64_t low, high;
        std::memcpy(&low, &at, 8);
        std::memcpy(&high, reinterpret_cast<const char*>(&at) + 8, 8);
        if (low) return i + static_cast<std::size_t>(std::countr_zero(low) / 8) + 4;
        if (high) return i + 8 + static_cast<std::size_t>(std::countr_zero(high) / 8) + 4;
    }
    // The last positions, fewer than sixteen.
    const std::size_t end_at = bytes.substr(0, n).find("\r\n\r\n", i);
    if (end_at == std::string_view::npos) return std::nullopt;
    return end_at + 4;
}

const char* text_to_cr(const char* p, const char* last) {
    // Eight bytes at a time: a word with no byte below 0x20 and none from
    // 0x7f up is text without a CR and is passed whole; a word with one (a
    // tab, the CR) is looked at byte by byte.
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    while (last - p >= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        const std::uint64_t below_space = (w - ones * 0x20) & ~w;  // some byte < 0x20 (never a false "none")
        const std::uint64_t del_or_above = (w + ones) | w;          // some byte >= 0x7f
        if (((below_space | del_or_above) & highs) == 0) {
            p += 8;
            continue;
        }
        for (const char* word_end = p + 8; p != word_end; ++p) {
            if (*p == '\r') return p;
            if (!text_bytes[*p]) return nullptr;
        }
    }
    for (; p != last; ++p) {
        if (*p == '\r') return p;
        if (!text_bytes[*p]) return nullptr;
    }
    return nullptr;
}

bool read_fields(const char* p, const char* end, FlatFields& out, Framing& framing) {
    const char* const first = p;
    const std::size_t copied_at = out.copy_lines(first, end);
    const auto offset = [&](const char* at) { return copied_at + static_cast<std::size_t>(at - first); };
    // Every loop stops inside the head: at its last CR at the latest.
    while (*p != '\r') {
        const char* const name = p;
        while (token_bytes[*p]) ++p;
        if (p == name || *p != ':') return false;
        const std::string_view name_string(name, static_cast<std::size_t>(p - name));
        ++p;
        while (is_ows(*p)) ++p;
        const char* const value = p;
        const char* const cr = text_to_cr(value, end);
        // A CR alone, a control byte, obs-text, or a next line that begins
        // with a space or tab (obs-fold).
        if (!cr || cr[1] != '\n' || is_ows(cr[2])) return false;
        const char* value_end = cr;
        while (value_end != value && is_ows(value_end[-1])) --value_end;
        const std::string_view value_string(value, static_cast<std::size_t>(value_end - value));
        const http::field field = known_field(name_string);
        switch (field) {
            case http::field::transfer_encoding:
            case http::field::upgrade: return false;
            case http::field::content_length:
                if (framing.content_length) return false;  // a second one: Beast's rules for how they agree
                framing.content_length = digits(value_string);
                if (!framing.content_length) return false;
                break;
            case http::field::connection:
            case http::field::proxy_connection:
                if (!token_list(value_string, framing.close)) return false;
                break;
            default: break;
        }
        out.add_copied(field, offset(name), name_string.size(), offset(value), value_string.size());
        p = cr + 2;
    }
    return p + 2 == end && p[1] == '\n';
}

}  // namespace modelproxy::transport::strict
