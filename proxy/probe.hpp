// `modelproxy probe URL`: a one-shot HTTP/1.1 GET for health checks, so a
// container image needs no curl (docs/operations.md "Container image"). An addition to
// docs/behaviour.md section 2's commands.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace modelproxy::proxy {

// What a probe URL names: where to connect and what to send.
struct ProbeTarget {
    std::string host;         // connect to this (an IPv6 address without brackets)
    std::uint16_t port = 80;
    std::string host_header;  // "127.0.0.1:8080", "[::1]:8080"
    std::string target;       // origin-form: path (at least "/") and query
};

// Parses an absolute http:// URL with Boost.URL. Pure. The error string is a
// usage problem (exit 2): not a URL, another scheme (https is not spoken:
// the probe only ever checks a proxy on the same host), no host, user info,
// a bad port.
std::variant<ProbeTarget, std::string> parse_probe_url(std::string_view url);

// The answer of one probe: the status when a response head arrived, else why
// not ("connection refused", "timed out after 2000 ms", ...).
struct ProbeResult {
    std::optional<unsigned> status;
    std::string failure;
};

// Connects, sends `GET target` with Connection: close, reads the response
// head. Everything (resolve, connect, write, read) shares one `timeout`.
// Never throws; blocks the calling thread for at most about `timeout`.
ProbeResult run_probe(const ProbeTarget& target, std::chrono::milliseconds timeout);

// The command: exit 0 on a 2xx answer, 1 otherwise with one stderr line,
// 2 on a usage problem. `timeout_ms` was range-checked by the caller.
int probe_command(const std::string& url, std::int64_t timeout_ms);

}  // namespace modelproxy::proxy
