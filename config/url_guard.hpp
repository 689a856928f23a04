#pragma once

#include "policy/ascii.hpp"

#include <string_view>

namespace modelproxy::config {

// Boost.URL 1.81 fails an internal assertion (detail/path.hpp:82) when a
// scheme's colon is followed by a character that cannot begin a path, as in
// "https:}" (found by tests/fuzz config_fuzz). Builds with NDEBUG only skip
// the check, so callers look for that shape first and never hand it to the
// parser. Returns the scheme when `url` is "scheme:" followed by something
// other than '/', and an empty view otherwise; such a URL names no host.
inline std::string_view scheme_before_rootless_path(std::string_view url) {
    const auto colon = url.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 >= url.size() || url[colon + 1] == '/') {
        return {};
    }
    using policy::is_alpha;
    using policy::is_digit;
    if (!is_alpha(url[0])) {
        return {};
    }
    for (std::size_t i = 1; i < colon; ++i) {
        const char c = url[i];
        if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.') {
            return {};
        }
    }
    return url.substr(0, colon);
}

}  // namespace modelproxy::config
