#include "proxy/probe.hpp"

#include "config/url_guard.hpp"
#include "policy/ascii.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>
#include <boost/url/url_view.hpp>

#include <iostream>

namespace modelproxy::proxy {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace urls = boost::urls;
using tcp = asio::ip::tcp;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string text(urls::string_view s) { return std::string(s.data(), s.size()); }

// One failure sentence per error; a timeout names the budget it ran out of.
std::string describe(const boost::system::error_code& ec, std::chrono::milliseconds timeout) {
    if (ec == beast::error::timeout || ec == asio::error::timed_out)
        return "timed out after " + std::to_string(timeout.count()) + " ms";
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof)
        return "connection closed before a response head";
    return ec.message();
}

asio::awaitable<void> probe_once(const ProbeTarget& t, std::chrono::milliseconds timeout, ProbeResult& out) {
    auto executor = co_await asio::this_coro::executor;
    const auto deadline = std::chrono::steady_clock::now() + timeout;

    tcp::resolver resolver(executor);
    auto [resolve_ec, endpoints] = co_await resolver.async_resolve(t.host, std::to_string(t.port), use_tuple);
    if (resolve_ec) {
        out.failure = "cannot resolve " + t.host + ": " + resolve_ec.message();
        co_return;
    }
    // One deadline for connect, write and read: the probe's whole budget.
    beast::tcp_stream stream(executor);
    stream.expires_at(deadline);
    auto [connect_ec, endpoint] = co_await stream.async_connect(endpoints, use_tuple);
    if (connect_ec) {
        out.failure = describe(connect_ec, timeout);
        co_return;
    }
    http::request<http::empty_body> request{http::verb::get, t.target, 11};
    request.set(http::field::host, t.host_header);
    request.set(http::field::user_agent, "modelproxy-probe/" MODELPROXY_VERSION);
    request.set(http::field::connection, "close");
    auto [write_ec, written] = co_await http::async_write(stream, request, use_tuple);
    if (write_ec) {
        out.failure = describe(write_ec, timeout);
        co_return;
    }
    // Only the head is read: the status decides, the body is never needed.
    beast::flat_buffer buffer;
    http::response_parser<http::empty_body> parser;
    auto [read_ec, read] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
    if (read_ec) {
        out.failure = describe(read_ec, timeout);
        co_return;
    }
    out.status = parser.get().result_int();
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

std::variant<ProbeTarget, std::string> parse_probe_url(std::string_view url) {
    if (const auto scheme = config::scheme_before_rootless_path(url); !scheme.empty()) {
        if (!policy::iequals(scheme, "http"))
            return "only http:// is supported (the probe checks a proxy on this host), got " + std::string(scheme) + ":";
        return std::string("the URL must name a host");
    }
    const auto parsed = urls::parse_absolute_uri(urls::string_view(url.data(), url.size()));
    if (!parsed) return std::string("expected an absolute http:// URL, got \"" + std::string(url) + "\"");
    const urls::url_view& view = *parsed;
    if (view.scheme_id() != urls::scheme::http)
        return "only http:// is supported (the probe checks a proxy on this host), got " + text(view.scheme()) + ":";
    if (!view.has_authority() || view.encoded_host().empty()) return std::string("the URL must name a host");
    if (view.has_userinfo()) return std::string("the URL must not carry user info");
    ProbeTarget t;
    switch (view.host_type()) {
        case urls::host_type::ipv4: t.host = view.host_ipv4_address().to_string(); break;
        case urls::host_type::ipv6: t.host = view.host_ipv6_address().to_string(); break;
        case urls::host_type::name: t.host = text(view.encoded_host()); break;
        default: return std::string("the URL must name a host name or an IPv4 or IPv6 address");
    }
    if (view.has_port()) {
        const std::string port = text(view.port());
        const bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
        const long value = digits ? std::stol(port) : 0;
        if (value < 1 || value > 65535) return "port must be 1..65535, got \"" + port + "\"";
        t.port = static_cast<std::uint16_t>(value);
    }
    t.host_header = text(view.encoded_host_and_port());
    t.target = text(view.encoded_path());
    if (t.target.empty()) t.target = "/";
    if (view.has_query()) t.target += "?" + text(view.encoded_query());
    return t;
}

ProbeResult run_probe(const ProbeTarget& target, std::chrono::milliseconds timeout) {
    ProbeResult result;
    asio::io_context io;
    bool done = false;
    asio::co_spawn(io, probe_once(target, timeout, result), [&](std::exception_ptr e) {
        done = true;
        if (e && result.failure.empty()) result.failure = "internal error";
    });
    // The stream's own deadline ends connect/write/read; this bound also
    // covers a resolver that never answers.
    io.run_for(timeout + std::chrono::milliseconds(200));
    if (!done) {
        result.status.reset();
        result.failure = "timed out after " + std::to_string(timeout.count()) + " ms";
    }
    return result;
}

int probe_command(const std::string& url, std::int64_t timeout_ms) {
    auto parsed = parse_probe_url(url);
    if (auto* problem = std::get_if<std::string>(&parsed)) {
        std::cerr << "modelproxy probe: " << *problem << "\n" << "usage: see modelproxy --help\n";
        return 2;
    }
    const auto result = run_probe(std::get<ProbeTarget>(parsed), std::chrono::milliseconds(timeout_ms));
    if (result.status && *result.status >= 200 && *result.status < 300) return 0;
    const std::string why = result.status ? "answered " + std::to_string(*result.status) : result.failure;
    std::cerr << "modelproxy probe: " << url << ": " << why << "\n";
    return 1;
}

}  // namespace modelproxy::proxy
