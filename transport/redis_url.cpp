#include "transport/redis_url.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <climits>

namespace modelproxy::transport {

namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
    return true;
}

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// RFC 3986's unreserved and sub-delims, less ':' and '%' (a password, an
// escape: both refused with their own message).
bool user_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-._~!$&'()*+,;=").find(c) != std::string_view::npos;
}

bool host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'; }

// A decimal in [low, high] into `out`; false otherwise.
template <class T>
bool number_in(std::string_view s, long long low, long long high, T& out) {
    if (!all_digits(s) || s.size() > 12) return false;
    long long v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    if (v < low || v > high) return false;
    out = static_cast<T>(v);
    return true;
}

}  // namespace

std::string RedisUrl::to_string() const {
    std::string out = tls ? "rediss://" : "redis://";
    if (!user.empty()) out += user + "@";
    if (host.find(':') != std::string::npos) {
        out += "[" + host + "]";
    } else {
        out += host;
    }
    out += ":" + std::to_string(port) + "/" + std::to_string(db);
    return out;
}

std::variant<RedisUrl, std::string> parse_redis_url(std::string_view text) {
    RedisUrl url;
    if (starts_with_nocase(text, "rediss://")) {
        url.tls = true;
        text.remove_prefix(9);
    } else if (starts_with_nocase(text, "redis://")) {
        text.remove_prefix(8);
    } else {
        return std::string("the Redis URL must start with redis:// or rediss://");
    }
    if (text.find_first_of("?#") != std::string_view::npos)
        return std::string("the Redis URL must not have a query or a fragment");

    const auto slash = text.find('/');
    std::string_view authority = text.substr(0, slash);
    const std::string_view path = slash == std::string_view::npos ? std::string_view() : text.substr(slash + 1);

    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        const std::string_view user = authority.substr(0, at);
        authority.remove_prefix(at + 1);
        if (user.find(':') != std::string_view::npos)
            return std::string(
                "the Redis URL must not hold a password: give the password's variable (fleet.password_env) instead");
        if (user.empty()) return std::string("the Redis URL has an empty user name before '@'");
        if (user.find('%') != std::string_view::npos)
            return std::string("the Redis URL's user name must not be percent-encoded");
        for (char c : user)
            if (!user_char(c)) return std::string("the Redis URL's user name has a character that is not allowed");
        url.user = std::string(user);
    }

    std::string_view port;
    bool has_port = false;
    if (!authority.empty() && authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) return std::string("the Redis URL's IPv6 address has no closing ']'");
        const std::string address(authority.substr(1, close - 1));
        in6_addr parsed;
        if (address.empty() || ::inet_pton(AF_INET6, address.c_str(), &parsed) != 1)
            return std::string("the Redis URL's host in brackets is not an IPv6 address");
        url.host = address;
        const std::string_view rest = authority.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return std::string("the Redis URL has text after the IPv6 address's ']'");
            port = rest.substr(1);
            has_port = true;
        }
    } else {
        const auto colon = authority.find(':');
        const std::string_view host = authority.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = authority.substr(colon + 1);
            has_port = true;
            if (port.find(':') != std::string_view::npos)
                return std::string("the Redis URL's IPv6 address must be in brackets: redis://[::1]:6379");
        }
        if (host.empty()) return std::string("the Redis URL has no host");
        for (char c : host)
            if (!host_char(c)) return std::string("the Redis URL's host has a character that is not allowed");
        url.host = std::string(host);
    }
    if (has_port && !number_in(port, 1, 65535, url.port))
        return std::string("the Redis URL's port must be a number from 1 to 65535");

    if (!path.empty() && !number_in(path, 0, INT_MAX, url.db))
        return std::string("the Redis URL's path must be a database number (0 or more) and nothing else");
    return url;
}

}  // namespace modelproxy::transport
