// Pure string checks the loader applies to single values: header names and
// values, environment variable names, upstream and Redis URLs. Internal to config/.
#pragma once

#include "config/config.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace modelproxy::config::detail {

std::string to_lower(std::string_view text);

// An RFC 9110 token (what a header name must be).
bool is_header_token(std::string_view text);

// No control characters other than HTAB (a CR or LF would split the header).
bool is_header_value(std::string_view text);

bool has_control_character(std::string_view text);

// [A-Za-z_][A-Za-z0-9_]*
bool is_env_name(std::string_view text);

// Why a (lower-case) header name may not be configured as a static or key
// header: hop-by-hop headers and the ones the proxy owns (docs/behaviour.md section 4).
// nullopt when it may.
std::optional<std::string> refused_header(std::string_view lower_name);

// http:// or https:// with a host; no userinfo, query, fragment or dot
// segments. Either the parsed upstream or why it is refused.
std::variant<Upstream, std::string> parse_upstream(std::string_view url);

// fleet.redis (docs/behaviour.md section 15): redis:// or rediss:// with a
// host, an optional port 1..65535 (default 6379) and an optional path /DB,
// a database number 0..15 (default 0); no user or password (the password
// comes from password_env, so it never sits in a file or a log), query or
// fragment. Why a refused URL is refused never quotes it: it may hold a
// password.
struct RedisUrl {
    bool tls = false;
    std::string host;  // without brackets for IPv6; names lower-cased
    std::uint16_t port = 6379;
    int db = 0;
};
std::variant<RedisUrl, std::string> parse_redis_url(std::string_view url);

}  // namespace modelproxy::config::detail
