#include "outage/http_server.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace modelproxy::outage {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);
}  // namespace

struct HttpServer::State {
    State(net::io_context& io, HttpHandler h) : acceptor(io), handler(std::move(h)) {}

    tcp::acceptor acceptor;
    const HttpHandler handler;
};

namespace {

net::awaitable<void> serve(std::shared_ptr<HttpServer::State> state, tcp::socket socket) {
    socket.set_option(tcp::no_delay(true));
    boost::beast::flat_buffer buffer;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(64u << 20);
        auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_tuple);
        if (ec) co_return;
        if (!co_await state->handler(socket, parser.get())) co_return;
    }
}

net::awaitable<void> accept_loop(std::shared_ptr<HttpServer::State> state) {
    for (;;) {
        auto [ec, socket] = co_await state->acceptor.async_accept(use_tuple);
        if (ec) {
            if (ec == net::error::operation_aborted || !state->acceptor.is_open()) co_return;
            continue;  // e.g. too many open files: the proxy sees a refused or dropped connect
        }
        net::co_spawn(state->acceptor.get_executor(), serve(state, std::move(socket)), net::detached);
    }
}

}  // namespace

HttpServer::HttpServer(net::io_context& io, HttpHandler handler)
    : state_(std::make_shared<State>(io, std::move(handler))) {
    const tcp::endpoint at(net::ip::make_address("127.0.0.1"), 0);
    state_->acceptor.open(at.protocol());
    state_->acceptor.set_option(net::socket_base::reuse_address(true));
    state_->acceptor.bind(at);
    state_->acceptor.listen(net::socket_base::max_listen_connections);
    port_ = state_->acceptor.local_endpoint().port();
    net::co_spawn(io, accept_loop(state_), net::detached);
}

HttpServer::~HttpServer() = default;  // the io_context's end destroys the coroutines and their sockets

net::awaitable<bool> write_answer(tcp::socket& socket, const HttpRequest& req, HttpAnswer& res, bool* written) {
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    auto [wec, n] = co_await http::async_write(socket, res, use_tuple);
    if (written) *written = !wec;
    co_return !wec && req.keep_alive();
}

std::string requested_model(const std::string& body) {
    const auto key = body.find("\"model\"");
    if (key == std::string::npos) return "unknown";
    const auto open = body.find('"', body.find(':', key) + 1);
    const auto close = open == std::string::npos ? open : body.find('"', open + 1);
    if (close == std::string::npos) return "unknown";
    return body.substr(open + 1, close - open - 1);
}

bool wants_stream(const std::string& body) {
    return body.find("\"stream\":true") != std::string::npos || body.find("\"stream\": true") != std::string::npos;
}

HttpAnswer completion_answer(const std::string& id, const std::string& model, bool stream, unsigned version,
                             const std::string& usage_json) {
    HttpAnswer res{http::status::ok, version};
    if (stream) {
        const std::string head = R"({"id":")" + id + R"(","object":"chat.completion.chunk","created":1,"model":")" +
                                 model + R"(","choices":[{"index":0,)";
        res.set(http::field::content_type, "text/event-stream");
        res.body() = "data: " + head + R"("delta":{"role":"assistant","content":"pong"},"finish_reason":null}]})" +
                     "\n\n" + "data: " + head + R"("delta":{},"finish_reason":"stop"}],)" + usage_json + "}\n\n" +
                     "data: [DONE]\n\n";
    } else {
        res.set(http::field::content_type, "application/json");
        res.body() = R"({"id":")" + id + R"(","object":"chat.completion","created":1,"model":")" + model +
                     R"(","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},)"
                     R"("finish_reason":"stop"}],)" + usage_json + "}";
    }
    return res;
}

HttpAnswer json_answer(http::status status, const std::string& body, unsigned version) {
    HttpAnswer res{status, version};
    res.set(http::field::content_type, "application/json");
    res.body() = body;
    return res;
}

HttpAnswer rate_limit_answer(unsigned version) {
    auto res = json_answer(http::status::too_many_requests,
                           R"({"error":{"message":"Rate limit reached for requests","type":"requests",)"
                           R"("param":null,"code":"rate_limit_exceeded"}})",
                           version);
    res.set(http::field::retry_after, "1");
    return res;
}

}  // namespace modelproxy::outage
