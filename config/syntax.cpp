#include "config/syntax.hpp"

#include "config/url_guard.hpp"
#include "policy/ascii.hpp"

#include <boost/url/ipv4_address.hpp>
#include <boost/url/ipv6_address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>
#include <boost/url/url_view.hpp>

#include <algorithm>
#include <array>
#include <charconv>

namespace modelproxy::config::detail {
namespace {

using policy::is_alpha;
using policy::is_digit;

bool is_host_name(std::string_view host) {
    if (host.empty()) {
        return false;
    }
    for (char c : host) {
        if (!is_alpha(c) && !is_digit(c) && c != '.' && c != '-' && c != '_') {
            return false;
        }
    }
    return true;
}

bool has_dot_segment(std::string_view path) {
    while (!path.empty()) {
        path.remove_prefix(1);  // the '/'
        const std::size_t end = path.find('/');
        const std::string_view segment = path.substr(0, end);
        const std::string lower = to_lower(segment);
        if (lower == "." || lower == ".." || lower == "%2e" || lower == "%2e%2e" || lower == ".%2e" ||
            lower == "%2e.") {
            return true;
        }
        if (end == std::string_view::npos) {
            break;
        }
        path.remove_prefix(end);
    }
    return false;
}

std::optional<std::uint16_t> parse_port(std::string_view digits) {
    if (digits.empty() || digits.size() > 5) {
        return std::nullopt;
    }
    unsigned value = 0;
    for (char c : digits) {
        if (!is_digit(c)) {
            return std::nullopt;
        }
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value > 65535) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(value);
}

}  // namespace

std::string to_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = policy::ascii_lower(c);
    return out;
}

bool is_header_token(std::string_view text) {
    static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
    if (text.empty()) {
        return false;
    }
    for (char c : text) {
        if (!is_alpha(c) && !is_digit(c) && extra.find(c) == std::string_view::npos) {
            return false;
        }
    }
    return true;
}

bool has_control_character(std::string_view text) {
    for (char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
            return true;
        }
    }
    return false;
}

bool is_header_value(std::string_view text) {
    for (char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
            return false;
        }
    }
    return true;
}

bool is_env_name(std::string_view text) {
    if (text.empty() || is_digit(text.front())) {
        return false;
    }
    for (char c : text) {
        if (!is_alpha(c) && !is_digit(c) && c != '_') {
            return false;
        }
    }
    return true;
}

std::optional<std::string> refused_header(std::string_view lower_name) {
    static constexpr std::array<std::string_view, 7> hop_by_hop = {
        "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-connection"};
    for (std::string_view name : hop_by_hop) {
        if (lower_name == name) {
            return "is a hop-by-hop header and is never forwarded";
        }
    }
    if (lower_name.substr(0, 6) == "proxy-") {
        return "is a hop-by-hop header and is never forwarded";
    }
    if (lower_name == "host") {
        return "is set by the proxy to the upstream's host";
    }
    if (lower_name == "content-length") {
        return "is set by the proxy from the body it sends";
    }
    if (lower_name == "expect") {
        return "is answered by the proxy and never forwarded";
    }
    return std::nullopt;
}

std::variant<Upstream, std::string> parse_upstream(std::string_view url) {
    namespace urls = boost::urls;
    if (const auto scheme = scheme_before_rootless_path(url); !scheme.empty()) {
        if (policy::iequals(scheme, "http") || policy::iequals(scheme, "https")) {
            return std::string("must name a host");
        }
        return "must start with http:// or https://, got " + std::string(scheme) + ":";
    }
    const auto parsed = urls::parse_uri(urls::string_view(url.data(), url.size()));
    if (!parsed) {
        return std::string("must be an absolute http:// or https:// URL");
    }
    const urls::url_view& view = *parsed;
    Upstream upstream;
    if (view.scheme_id() == urls::scheme::https) {
        upstream.https = true;
    } else if (view.scheme_id() != urls::scheme::http) {
        return "must start with http:// or https://, got " + std::string(view.scheme()) + ":";
    }
    if (!view.has_authority() || view.encoded_host().empty()) {
        return std::string("must name a host");
    }
    if (view.has_userinfo()) {
        return std::string("must not carry user info; put the key's variable in api_key_env");
    }
    if (view.has_query()) {
        return std::string("must not have a query; use the route's query map");
    }
    if (view.has_fragment()) {
        return std::string("must not have a fragment");
    }
    switch (view.host_type()) {
        case urls::host_type::ipv4:
            upstream.host = view.host_ipv4_address().to_string();
            break;
        case urls::host_type::ipv6:
            upstream.host = view.host_ipv6_address().to_string();
            break;
        case urls::host_type::name: {
            const std::string_view name(view.encoded_host().data(), view.encoded_host().size());
            if (!is_host_name(name)) {
                return std::string("must name a host by letters, digits, '.', '-' or an IP address");
            }
            upstream.host = to_lower(name);
            break;
        }
        default:
            return std::string("must name a host name or an IPv4 or IPv6 address");
    }
    upstream.port = upstream.https ? 443 : 80;
    if (view.has_port() && !view.port().empty()) {
        const auto port = parse_port(std::string_view(view.port().data(), view.port().size()));
        if (!port || *port == 0) {
            return "port must be 1..65535, got " + std::string(view.port());
        }
        upstream.port = *port;
    }
    std::string_view path(view.encoded_path().data(), view.encoded_path().size());
    if (!path.empty() && path.front() != '/') {
        // RFC 3986: a path after an authority starts with '/'. Boost.URL 1.81
        // parses "http://h:9a/v1" as port 9 and path "a/v1" (found by
        // tests/fuzz/config_fuzz), which would put "a/v1/..." on the request line.
        return std::string("must be http(s)://HOST[:PORT] then a path starting with '/'");
    }
    if (has_dot_segment(path)) {
        return std::string("path must not contain '.' or '..' segments");
    }
    while (!path.empty() && path.back() == '/') {
        path.remove_suffix(1);
    }
    upstream.base_path = std::string(path);
    return upstream;
}

std::variant<RedisUrl, std::string> parse_redis_url(std::string_view url) {
    namespace urls = boost::urls;
    const std::string_view schemes = "must start with redis:// or rediss://";
    if (!scheme_before_rootless_path(url).empty()) {
        return std::string(schemes);  // "redis:x": no authority, and Boost.URL must not see it
    }
    const auto parsed = urls::parse_uri(urls::string_view(url.data(), url.size()));
    if (!parsed) {
        return "must be a redis:// or rediss:// URL";
    }
    const urls::url_view& view = *parsed;
    const std::string_view scheme(view.scheme().data(), view.scheme().size());
    RedisUrl out;
    if (policy::iequals(scheme, "rediss")) {
        out.tls = true;
    } else if (!policy::iequals(scheme, "redis")) {
        return std::string(schemes);
    }
    // User info first: a URL with a password is refused before anything
    // else is said about it.
    if (view.has_userinfo()) {
        return "must not carry a user or password; put the password in an environment variable and name it in "
               "fleet.password_env";
    }
    if (!view.has_authority() || view.encoded_host().empty()) {
        return "must name a host";
    }
    if (view.has_query()) {
        return "must not have a query";
    }
    if (view.has_fragment()) {
        return "must not have a fragment";
    }
    switch (view.host_type()) {
        case urls::host_type::ipv4:
            out.host = view.host_ipv4_address().to_string();
            break;
        case urls::host_type::ipv6:
            out.host = view.host_ipv6_address().to_string();
            break;
        case urls::host_type::name: {
            const std::string_view name(view.encoded_host().data(), view.encoded_host().size());
            if (!is_host_name(name)) {
                return "must name a host by letters, digits, '.', '-' or an IP address";
            }
            out.host = to_lower(name);
            break;
        }
        default:
            return "must name a host name or an IPv4 or IPv6 address";
    }
    if (view.has_port() && !view.port().empty()) {
        const auto port = parse_port(std::string_view(view.port().data(), view.port().size()));
        if (!port || *port == 0) {
            return "port must be 1..65535, got " + std::string(view.port());
        }
        out.port = *port;
    }
    const std::string_view path(view.encoded_path().data(), view.encoded_path().size());
    const std::string_view db = path.empty() ? path : path.substr(1);
    const std::string_view db_rule = "must be redis[s]://HOST[:PORT] then at most /DB, a database number 0..15";
    if (!path.empty() && path.front() != '/') {
        return std::string(db_rule);  // "redis://h:9a": Boost.URL reads port 9, path "a"
    }
    if (!db.empty()) {
        if (db.size() > 2 || !std::all_of(db.begin(), db.end(), [](char c) { return is_digit(c); })) {
            return std::string(db_rule);
        }
        const int number = db.size() == 1 ? db[0] - '0' : (db[0] - '0') * 10 + (db[1] - '0');
        if (number > 15) {
            return "database must be 0..15, got " + std::string(db);
        }
        out.db = number;
    }
    return out;
}

}  // namespace modelproxy::config::detail

namespace modelproxy::config {

std::optional<std::pair<std::string, std::uint16_t>> parse_listen(std::string_view text) {
    std::string_view host;
    std::string_view rest;
    if (!text.empty() && text.front() == '[') {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        host = text.substr(1, close - 1);
        rest = text.substr(close + 1);
        if (!boost::urls::parse_ipv6_address(boost::urls::string_view(host.data(), host.size()))) {
            return std::nullopt;
        }
    } else {
        const std::size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            return std::nullopt;
        }
        host = text.substr(0, colon);
        rest = text.substr(colon);
        if (!detail::is_host_name(host)) {  // also refuses an unbracketed IPv6 address
            return std::nullopt;
        }
    }
    if (rest.empty() || rest.front() != ':') {
        return std::nullopt;
    }
    const auto port = detail::parse_port(rest.substr(1));
    if (!port) {
        return std::nullopt;
    }
    return std::make_pair(std::string(host), *port);
}

bool is_loopback_host(std::string_view host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (detail::to_lower(host) == "localhost") {
        return true;
    }
    const boost::urls::string_view text(host.data(), host.size());
    if (const auto v4 = boost::urls::parse_ipv4_address(text)) {
        return v4->to_bytes()[0] == 127;
    }
    if (const auto v6 = boost::urls::parse_ipv6_address(text)) {
        // ::ffff:127.0.0.1 is the IPv4 loopback seen through a dual-stack socket.
        return v6->is_loopback() || (v6->is_v4_mapped() && v6->to_bytes()[12] == 127);
    }
    return false;
}

}  // namespace modelproxy::config
