#include "transport/whole_request.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <array>
#include <cstring>

namespace modelproxy::transport {

namespace {

namespace http = boost::beast::http;

struct ByteTable {
    std::array<bool, 256> yes{};
    bool operator[](char c) const { return yes[static_cast<unsigned char>(c)]; }
};

// RFC 9110 tchar: Beast's token characters (field names, methods, the
// Connection list's tokens).
constexpr ByteTable token_bytes = [] {
    ByteTable t;
    for (int c = '0'; c <= '9'; ++c) t.yes[c] = true;
    for (int c = 'a'; c <= 'z'; ++c) t.yes[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) t.yes[c] = true;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) t.yes[static_cast<unsigned char>(c)] = true;
    return t;
}();

// A value's bytes in the strict form: space, tab and visible ASCII (Beast
// takes obs-text, 0x80 and above, too: such a request is Beast's).
constexpr ByteTable text_bytes = [] {
    ByteTable t;
    t.yes['\t'] = true;
    for (int c = 0x20; c < 0x7f; ++c) t.yes[c] = true;
    return t;
}();

// The CR that ends a value starting at `p`, found in the pass that checks
// the bytes before it are text; null when one is not, or when no CR comes
// before `last`. Eight bytes at a time: a word with no byte below 0x20 and
// none from 0x7f up is text without a CR and is passed whole; a word with
// one (a tab, the CR) is looked at byte by byte.
const char* text_to_cr(const char* p, const char* last) {
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    while (last - p >= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        const std::uint64_t below_space = (w - ones * 0x20) & ~w;  // some byte < 0x20 (no false "none")
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

bool is_ows(char c) { return c == ' ' || c == '\t'; }

// Beast's rule for a Connection value (opt_token_list): tokens separated by
// commas, optional whitespace around each, empty elements allowed.
bool token_list(std::string_view value) {
    for (;;) {
        const std::size_t comma = value.find(',');
        std::string_view element = value.substr(0, comma);
        while (!element.empty() && is_ows(element.front())) element.remove_prefix(1);
        while (!element.empty() && is_ows(element.back())) element.remove_suffix(1);
        for (char c : element)
            if (!token_bytes[c]) return false;
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

std::optional<WholeRequest> read_whole_request(std::string_view bytes, std::size_t header_limit,
                                               std::uint64_t body_limit, RequestHead& head, std::string& body) {
    const auto decline = [&] {
        head.clear();
        body.clear();
        return std::nullopt;
    };
    // The head's end first: every loop below then stops inside the head (at
    // a CR at the latest), and a head not yet whole is declined at once.
    const std::size_t end_at = bytes.find("\r\n\r\n");
    if (end_at == std::string_view::npos) return decline();
    const std::size_t head_size = end_at + 4;
    if (head_size > header_limit) return decline();
    const char* p = bytes.data();
    const char* const end = p + head_size;

    // The request line.
    const char* const method = p;
    while (token_bytes[*p]) ++p;
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
    std::optional<std::uint64_t> length;
    while (*p != '\r') {
        const char* const name = p;
        while (token_bytes[*p]) ++p;
        if (p == name || *p != ':') return decline();
        const std::string_view name_string(name, static_cast<std::size_t>(p - name));
        ++p;
        while (is_ows(*p)) ++p;
        const char* const value = p;
        const char* const cr = text_to_cr(value, end);
        // A CR alone, a control byte, obs-text, or a next line that begins
        // with a space or tab (obs-fold): Beast's to parse.
        if (!cr || cr[1] != '\n' || is_ows(cr[2])) return decline();
        const char* value_end = cr;
        while (value_end != value && is_ows(value_end[-1])) --value_end;
        const std::string_view value_string(value, static_cast<std::size_t>(value_end - value));
        const http::field field = http::string_to_field(name_string);
        switch (field) {
            case http::field::transfer_encoding:
            case http::field::upgrade: return decline();
            case http::field::content_length:
                if (length) return decline();  // a second one: Beast's rules for how they agree
                length = digits(value_string);
                if (!length) return decline();
                break;
            case http::field::connection:
            case http::field::proxy_connection:
                if (!token_list(value_string)) return decline();
                break;
            default: break;
        }
        head.add(field, name_string, value_string);
        p = cr + 2;
    }
    if (p + 2 != end || p[1] != '\n') return decline();

    // The body: within the limit (Beast refuses one above it) and all there.
    const std::uint64_t body_size = length.value_or(0);
    if (body_size > body_limit || body_size > bytes.size() - head_size) return decline();
    body.assign(end, static_cast<std::size_t>(body_size));
    return WholeRequest{head_size + static_cast<std::size_t>(body_size), length};
}

}  // namespace modelproxy::transport
