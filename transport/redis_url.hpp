// The Redis address of docs/behaviour.md section 15 (`fleet.redis`):
//
//   redis://[user@]host[:port][/db]      plain TCP
//   rediss://[user@]host[:port][/db]     TLS, verified like an upstream
//
// host is a name, an IPv4 address or an IPv6 address in brackets
// (`[::1]`); port 1..65535, 6379 when absent; db a decimal 0..2147483647,
// 0 when absent (`/` alone is db 0). The scheme is case-insensitive.
//
// The password never appears in the URL: it comes from its own variable
// (`fleet.password_env`) and is passed to the client separately. A URL with
// a password (`user:secret@`), a query, a fragment, a percent-encoded user or
// anything after the db is refused. Error texts never repeat the URL, so a
// password written there by mistake does not reach a log.
//
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace modelproxy::transport {

struct RedisUrl {
    bool tls = false;     // rediss://
    std::string user;     // empty: AUTH with the password alone (the `default` user)
    std::string host;     // without brackets for IPv6
    std::uint16_t port = 6379;
    int db = 0;

    // The URL in its normal form (lower-case scheme, the port and db always
    // written, IPv6 in brackets): safe to log, it holds no secret.
    std::string to_string() const;

    friend bool operator==(const RedisUrl&, const RedisUrl&) = default;
};

// The parsed URL, or a sentence saying what is wrong with it.
std::variant<RedisUrl, std::string> parse_redis_url(std::string_view text);

}  // namespace modelproxy::transport
