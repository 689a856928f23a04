#include "support/http_client.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <stdexcept>

namespace modelproxy::test {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

bool RawRead::timed_out() const { return error == net::error::timed_out; }

bool RawRead::closed() const {
    return error == net::error::eof || error == net::error::connection_reset || error == net::error::broken_pipe;
}

namespace {

// Runs one asynchronous operation on `ioc` until it completes or `deadline`
// passes; on expiry cancels `socket`'s operations, waits for the handler and
// reports timed_out.
template <class Start>
error_code run_until(net::io_context& ioc, tcp::socket& socket, Clock::time_point deadline, Start start) {
    ioc.restart();
    std::optional<error_code> result;
    start([&result](error_code ec, auto&&...) { result = ec; });
    ioc.run_until(deadline);
    if (result) return *result;
    error_code ignored;
    socket.cancel(ignored);
    ioc.restart();
    ioc.run();
    return net::error::timed_out;
}

}  // namespace

struct HttpClient::Impl {
    Options options;
    std::uint16_t port = 0;
    net::io_context ioc{1};
    tcp::socket socket{ioc};
    std::string pending;                                     // received, not yet parsed
    std::optional<http::response_parser<http::string_body>> parser;
    std::string wire;                                        // this message's bytes so far
    std::size_t body_delivered = 0;
    bool next_is_head_response = false;
    // Asio's epoll reactor reports EOF or a reset once: a second read would
    // wait forever. So the first one is remembered and repeated.
    error_code peer_gone;

    error_code read_more(Clock::time_point deadline);
    error_code write(std::string_view bytes);
    void begin_message();
    error_code feed();
    template <class Goal>
    error_code parse_until(Goal goal, Clock::time_point deadline);
    Response snapshot(error_code ec) const;
    Response finish(error_code ec);
};

error_code HttpClient::Impl::read_more(Clock::time_point deadline) {
    if (peer_gone) return peer_gone;
    char buf[16384];
    std::size_t got = 0;
    error_code ec = run_until(ioc, socket, deadline, [&](auto handler) {
        socket.async_read_some(net::buffer(buf), [&got, handler](error_code e, std::size_t n) mutable {
            got = n;
            handler(e);
        });
    });
    pending.append(buf, got);
    if (ec == net::error::eof || ec == net::error::connection_reset) peer_gone = ec;
    return ec;
}

error_code HttpClient::Impl::write(std::string_view bytes) {
    const auto deadline = Clock::now() + options.timeout;
    return run_until(ioc, socket, deadline,
                     [&](auto handler) { net::async_write(socket, net::buffer(bytes.data(), bytes.size()), handler); });
}

void HttpClient::Impl::begin_message() {
    if (parser) return;
    parser.emplace();
    parser->body_limit(boost::none);
    parser->header_limit(1u << 20);
    parser->eager(true);
    if (next_is_head_response) parser->skip(true);
    wire.clear();
    body_delivered = 0;
}

// Feeds buffered bytes to the parser; need_more is not an error.
error_code HttpClient::Impl::feed() {
    while (!pending.empty() && !parser->is_done()) {
        error_code ec;
        const std::size_t used = parser->put(net::buffer(pending), ec);
        wire.append(pending, 0, used);
        pending.erase(0, used);
        if (ec == http::error::need_more) return {};
        if (ec) return ec;
        if (used == 0) return {};
    }
    return {};
}

template <class Goal>
error_code HttpClient::Impl::parse_until(Goal goal, Clock::time_point deadline) {
    begin_message();
    for (;;) {
        if (error_code ec = feed()) return ec;
        if (goal() || parser->is_done()) return {};
        error_code ec = read_more(deadline);
        if (ec == net::error::eof) {
            if (!parser->got_some()) return ec;
            error_code eof_ec;
            parser->put_eof(eof_ec);  // completes a close-delimited body, else partial_message
            return eof_ec;
        }
        if (ec) return ec;
    }
}

Response HttpClient::Impl::snapshot(error_code ec) const {
    Response r;
    r.error = ec;
    r.wire = wire;
    if (!parser) return r;
    r.head_complete = parser->is_header_done();
    r.complete = parser->is_done() && !ec;
    if (r.head_complete) {
        const auto& msg = parser->get();
        r.status = msg.result_int();
        r.version = msg.version();
        r.reason = std::string(msg.reason());
        for (const auto& f : msg) r.headers.push_back({std::string(f.name_string()), std::string(f.value())});
        r.body = msg.body();
        r.chunked = parser->chunked();
        r.keep_alive = parser->keep_alive();
    }
    return r;
}

// Ends the current message: the next read starts a fresh parser.
Response HttpClient::Impl::finish(error_code ec) {
    Response r = snapshot(ec);
    if (r.complete && r.status >= 200) next_is_head_response = false;
    parser.reset();
    return r;
}

// ---------------------------------------------------------------------------

HttpClient::HttpClient(std::uint16_t port) : HttpClient(port, Options{}) {}

HttpClient::HttpClient(std::uint16_t port, Options options) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
    impl_->port = port;
    const tcp::endpoint endpoint(net::ip::make_address(impl_->options.host), port);
    const auto deadline = Clock::now() + impl_->options.connect_timeout;
    error_code ec = run_until(impl_->ioc, impl_->socket, deadline,
                              [&](auto handler) { impl_->socket.async_connect(endpoint, handler); });
    if (ec)
        throw std::runtime_error("HttpClient: connect to " + impl_->options.host + ":" + std::to_string(port) +
                                 " failed: " + ec.message());
    impl_->socket.set_option(tcp::no_delay(true), ec);
}

HttpClient::~HttpClient() = default;
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

std::uint16_t HttpClient::port() const { return impl_->port; }

std::uint16_t HttpClient::local_port() const {
    error_code ec;
    auto ep = impl_->socket.local_endpoint(ec);
    return ec ? 0 : ep.port();
}

bool HttpClient::is_open() const { return impl_->socket.is_open(); }

error_code HttpClient::send_raw(std::string_view bytes) { return impl_->write(bytes); }

error_code HttpClient::send_request(std::string_view method, std::string_view target, const Headers& headers,
                                    std::string_view body) {
    Headers all = headers;
    if (!find_header(all, "Host"))
        all.insert(all.begin(), {"Host", impl_->options.host + ":" + std::to_string(impl_->port)});
    const bool has_body_method = method == "POST" || method == "PUT" || method == "PATCH";
    if (!find_header(all, "Content-Length") && !find_header(all, "Transfer-Encoding") &&
        (!body.empty() || has_body_method))
        all.push_back({"Content-Length", std::to_string(body.size())});
    impl_->next_is_head_response = method == "HEAD";
    return send_raw(format_request(method, target, all, body));
}

Response HttpClient::request(std::string_view method, std::string_view target, const Headers& headers,
                             std::string_view body) {
    if (error_code ec = send_request(method, target, headers, body)) {
        Response r;
        r.error = ec;
        return r;
    }
    return read_response();
}

Response HttpClient::get(std::string_view target, const Headers& headers) { return request("GET", target, headers); }

Response HttpClient::post_json(std::string_view target, std::string_view body, Headers headers) {
    if (!find_header(headers, "Content-Type")) headers.push_back({"Content-Type", "application/json"});
    return request("POST", target, headers, body);
}

Response HttpClient::read_response() { return read_response(impl_->options.timeout); }

Response HttpClient::read_response(std::chrono::milliseconds timeout) {
    error_code ec = impl_->parse_until([] { return false; }, Clock::now() + timeout);
    return impl_->finish(ec);
}

Response HttpClient::read_head(std::chrono::milliseconds timeout) {
    error_code ec = impl_->parse_until([this] { return impl_->parser->is_header_done(); }, Clock::now() + timeout);
    if (ec) return impl_->finish(ec);
    return impl_->snapshot(ec);
}

RawRead HttpClient::read_body_some(std::chrono::milliseconds timeout) {
    auto& p = impl_->parser;
    auto available = [this] {
        return impl_->parser->is_header_done() && impl_->parser->get().body().size() > impl_->body_delivered;
    };
    RawRead out;
    out.error = impl_->parse_until(available, Clock::now() + timeout);
    if (p && p->is_header_done()) {
        const std::string& body = p->get().body();
        out.bytes = body.substr(std::min(impl_->body_delivered, body.size()));
        impl_->body_delivered = body.size();
    }
    return out;
}

Response HttpClient::read_rest(std::chrono::milliseconds timeout) { return read_response(timeout); }

RawRead HttpClient::read_some_raw(std::chrono::milliseconds timeout) {
    RawRead out;
    if (impl_->pending.empty()) out.error = impl_->read_more(Clock::now() + timeout);
    out.bytes.swap(impl_->pending);
    return out;
}

RawRead HttpClient::read_raw_until(std::string_view needle, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    RawRead out;
    for (;;) {
        if (auto at = impl_->pending.find(needle); at != std::string::npos) {
            out.bytes = impl_->pending.substr(0, at + needle.size());
            impl_->pending.erase(0, at + needle.size());
            return out;
        }
        if (error_code ec = impl_->read_more(deadline)) {
            out.error = ec;
            out.bytes.swap(impl_->pending);
            return out;
        }
    }
}

void HttpClient::close() {
    error_code ignored;
    impl_->socket.close(ignored);
}

error_code HttpClient::shutdown_write() {
    error_code ec;
    impl_->socket.shutdown(tcp::socket::shutdown_send, ec);
    return ec;
}

bool HttpClient::is_closed_by_peer(std::chrono::milliseconds timeout) {
    if (!impl_->socket.is_open()) return false;  // closed by us, not by the peer
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        error_code ec = impl_->read_more(deadline);
        if (!ec) continue;
        return ec != net::error::timed_out;
    }
}

error_code try_connect(std::uint16_t port, std::chrono::milliseconds timeout) {
    net::io_context ioc{1};
    tcp::socket socket{ioc};
    const tcp::endpoint endpoint(net::ip::make_address_v4("127.0.0.1"), port);
    return run_until(ioc, socket, Clock::now() + timeout,
                     [&](auto handler) { socket.async_connect(endpoint, handler); });
}

}  // namespace modelproxy::test
