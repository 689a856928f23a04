// ASCII case-insensitive comparison for HTTP field names, tokens and media
// types: shared by transport/ and proxy/ (header-only, no I/O).
#pragma once

#include <string_view>

namespace modelproxy::policy {

constexpr bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Inline: it runs for every header of every request and answer, and most
// calls end at the length check. Not Beast's beast::iequals: in Boost 1.81 it
// reads one byte past both strings when they differ only in the case of
// their last byte (request_fuzz found it under ASan).
constexpr bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    }
    return true;
}

}  // namespace modelproxy::policy
