#include "outage/upstream.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <stdexcept>

namespace modelproxy::outage {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// The value of the request body's top-level string "model" (the load's own
// bodies: one "model" key, no escapes), or "unknown".
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

const char* const usage = R"("usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6})";

http::response<http::string_body> healthy_answer(const std::string& model, bool stream, unsigned version) {
    http::response<http::string_body> res{http::status::ok, version};
    if (stream) {
        const std::string head = R"({"id":"chatcmpl-outage","object":"chat.completion.chunk","created":1,"model":")" +
                                 model + R"(","choices":[{"index":0,)";
        res.set(http::field::content_type, "text/event-stream");
        res.body() = "data: " + head + R"("delta":{"role":"assistant","content":"pong"},"finish_reason":null}]})" +
                     "\n\n" + "data: " + head + R"("delta":{},"finish_reason":"stop"}],)" + usage + "}\n\n" +
                     "data: [DONE]\n\n";
    } else {
        res.set(http::field::content_type, "application/json");
        res.body() = R"({"id":"chatcmpl-outage","object":"chat.completion","created":1,"model":")" + model +
                     R"(","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},)"
                     R"("finish_reason":"stop"}],)" + usage + "}";
    }
    return res;
}

http::response<http::string_body> unavailable_answer(unsigned version) {
    http::response<http::string_body> res{http::status::service_unavailable, version};
    res.set(http::field::content_type, "application/json");
    res.body() = R"({"error":{"message":"the outage simulation's primary is down","type":"server_error","code":503}})";
    return res;
}

}  // namespace

struct Upstream::State {
    explicit State(net::io_context& io) : acceptor(io) {}

    tcp::acceptor acceptor;
    std::optional<Timeline> timeline;
    mutable std::mutex mu;
    Clock::time_point t0 = Clock::now();
    std::vector<Served> served;

    // Records a request read now; returns its index and its phase.
    std::pair<std::size_t, Phase> begin() {
        std::lock_guard lock(mu);
        const double at = ms_since(t0, Clock::now());
        const Phase phase = timeline && at >= 0 ? timeline->at(at) : Phase::healthy;
        served.push_back(Served{at, std::nullopt, phase, 0});
        return {served.size() - 1, phase};
    }
    void end(std::size_t index, unsigned status) {
        std::lock_guard lock(mu);
        served[index].end_ms = ms_since(t0, Clock::now());
        served[index].status = status;
    }
};

namespace {

net::awaitable<void> serve(std::shared_ptr<Upstream::State> state, tcp::socket socket) {
    socket.set_option(tcp::no_delay(true));
    boost::beast::flat_buffer buffer;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(64u << 20);
        auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_tuple);
        if (ec) co_return;
        const auto& req = parser.get();
        const auto [index, phase] = state->begin();
        switch (phase) {
            case Phase::healthy:
            case Phase::unavailable: {
                auto res = phase == Phase::healthy
                               ? healthy_answer(requested_model(req.body()), wants_stream(req.body()), req.version())
                               : unavailable_answer(req.version());
                res.keep_alive(req.keep_alive());
                res.prepare_payload();
                auto [wec, written] = co_await http::async_write(socket, res, use_tuple);
                state->end(index, wec ? 0 : res.result_int());
                if (wec || !req.keep_alive()) co_return;
                break;
            }
            case Phase::reset: {
                boost::system::error_code ignored;
                socket.set_option(net::socket_base::linger(true, 0), ignored);
                socket.close(ignored);
                state->end(index, 0);
                co_return;
            }
            case Phase::silent: {
                // Never answer; what the peer sends meanwhile is dropped. The
                // request ends when the peer closes (its timer gave up).
                char sink[512];
                for (;;) {
                    auto [rec, got] = co_await socket.async_read_some(net::buffer(sink), use_tuple);
                    if (rec) break;
                }
                state->end(index, 0);
                co_return;
            }
        }
    }
}

net::awaitable<void> accept_loop(std::shared_ptr<Upstream::State> state) {
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

Upstream::Upstream(net::io_context& io, std::string name, std::optional<Timeline> timeline)
    : name_(std::move(name)), state_(std::make_shared<State>(io)) {
    state_->timeline = timeline;
    const tcp::endpoint at(net::ip::make_address("127.0.0.1"), 0);
    state_->acceptor.open(at.protocol());
    state_->acceptor.set_option(net::socket_base::reuse_address(true));
    state_->acceptor.bind(at);
    state_->acceptor.listen(net::socket_base::max_listen_connections);
    port_ = state_->acceptor.local_endpoint().port();
    net::co_spawn(io, accept_loop(state_), net::detached);
}

Upstream::~Upstream() = default;  // the io_context's end destroys the coroutines and their sockets

void Upstream::set_start(Clock::time_point t0) {
    std::lock_guard lock(state_->mu);
    state_->t0 = t0;
}

std::vector<Served> Upstream::requests() const {
    std::lock_guard lock(state_->mu);
    return state_->served;
}

}  // namespace modelproxy::outage
