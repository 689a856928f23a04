// Small text helpers the request rules share: optional whitespace, case-
// insensitive affixes and hex digits of header values and targets.
// Header-only, pure.
#pragma once

#include "policy/ascii.hpp"

#include <string_view>

namespace modelproxy::request {

using policy::iequals;

// RFC 9110's OWS: a space or a horizontal tab.
constexpr bool is_ows(char c) { return c == ' ' || c == '\t'; }

constexpr std::string_view trim_ows(std::string_view text) {
    while (!text.empty() && is_ows(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_ows(text.back())) text.remove_suffix(1);
    return text;
}

constexpr bool istarts_with(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

constexpr bool iends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && iequals(text.substr(text.size() - suffix.size()), suffix);
}

// The value of one hex digit, either case; -1 for any other byte.
constexpr int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace modelproxy::request
