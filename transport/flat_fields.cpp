#include "transport/flat_fields.hpp"

#include <bit>
#include <cstdint>
#include <cstring>

namespace modelproxy::transport {

namespace http = boost::beast::http;

namespace {

// A lower-case name the switch below compares with, as 8- or 4-byte words:
// each word's bytes, and a mask with 0x20 on its letters. A name's word with
// the mask or-ed in equals the name's word exactly when the bytes are equal
// but for the case of letters: x | 0x20 is a lower-case letter only for that
// letter in either case, and a byte that is not a letter in the name (a '-')
// is compared as it is.
struct Lower {
    std::size_t size = 0;
    std::uint64_t word[3] = {}, mask[3] = {};
    std::size_t at[3] = {};
    int words = 0;

    template <std::size_t N>
    consteval Lower(const char (&text)[N]) : size(N - 1) {
        const std::size_t width = size >= 8 ? 8 : 4;
        // Words at the start, every `width` bytes, and one ending at the
        // end (it may overlap the one before it).
        for (std::size_t from = 0; from < size; from += width) {
            at[words++] = from + width <= size ? from : size - width;
        }
        for (int w = 0; w < words; ++w) {
            for (std::size_t i = 0; i < width; ++i) {
                const char c = text[at[w] + i];
                word[w] |= static_cast<std::uint64_t>(static_cast<unsigned char>(c)) << (8 * i);
                if (c >= 'a' && c <= 'z') mask[w] |= std::uint64_t{0x20} << (8 * i);
            }
        }
    }
};

static_assert(std::endian::native == std::endian::little, "words are read little-endian");

template <Lower L>
bool is(std::string_view name) {
    // The caller switched on the length: name.size() == L.size.
    for (int w = 0; w < L.words; ++w) {
        std::uint64_t x = 0;
        if constexpr (L.size >= 8) {
            std::memcpy(&x, name.data() + L.at[w], 8);  // little-endian: byte i at bits 8i
        } else {
            std::uint32_t y;
            std::memcpy(&y, name.data() + L.at[w], 4);
            x = y;
        }
        if ((x | L.mask[w]) != L.word[w]) return false;
    }
    return true;
}

}  // namespace

http::field known_field(std::string_view name) {
    // Each case's names all have that length.
    switch (name.size()) {
        case 6: return is<"expect">(name) ? http::field::expect : http::field::unknown;
        case 7: return is<"upgrade">(name) ? http::field::upgrade : http::field::unknown;
        case 10: return is<"connection">(name) ? http::field::connection : http::field::unknown;
        case 11: return is<"retry-after">(name) ? http::field::retry_after : http::field::unknown;
        case 12: return is<"content-type">(name) ? http::field::content_type : http::field::unknown;
        case 13: return is<"authorization">(name) ? http::field::authorization : http::field::unknown;
        case 14: return is<"content-length">(name) ? http::field::content_length : http::field::unknown;
        case 16:
            if (is<"content-encoding">(name)) return http::field::content_encoding;
            return is<"proxy-connection">(name) ? http::field::proxy_connection : http::field::unknown;
        case 17: return is<"transfer-encoding">(name) ? http::field::transfer_encoding : http::field::unknown;
        default: return http::field::unknown;
    }
}

http::field known_field(http::field beast) {
    switch (beast) {
        case http::field::expect:
        case http::field::upgrade:
        case http::field::connection:
        case http::field::retry_after:
        case http::field::content_type:
        case http::field::authorization:
        case http::field::content_length:
        case http::field::content_encoding:
        case http::field::proxy_connection:
        case http::field::transfer_encoding: return beast;
        default: return http::field::unknown;
    }
}

}  // namespace modelproxy::transport
