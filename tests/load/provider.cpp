#include "load/provider.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <mutex>
#include <random>
#include <string>

namespace modelproxy::load {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// The value of the request body's top-level string "model" (the callers'
// own bodies: one "model" key, no escapes), or "unknown".
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

using Answer = http::response<http::string_body>;

Answer completion(const std::string& model, bool stream, unsigned version) {
    Answer res{http::status::ok, version};
    if (stream) {
        const std::string head = R"({"id":"chatcmpl-load","object":"chat.completion.chunk","created":1,"model":")" +
                                 model + R"(","choices":[{"index":0,)";
        res.set(http::field::content_type, "text/event-stream");
        res.body() = "data: " + head + R"("delta":{"role":"assistant","content":"pong"},"finish_reason":null}]})" +
                     "\n\n" + "data: " + head + R"("delta":{},"finish_reason":"stop"}],)" + usage + "}\n\n" +
                     "data: [DONE]\n\n";
    } else {
        res.set(http::field::content_type, "application/json");
        res.body() = R"({"id":"chatcmpl-load","object":"chat.completion","created":1,"model":")" + model +
                     R"(","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},)"
                     R"("finish_reason":"stop"}],)" + usage + "}";
    }
    return res;
}

Answer error_answer(http::status status, const char* body, unsigned version) {
    Answer res{status, version};
    res.set(http::field::content_type, "application/json");
    res.body() = body;
    return res;
}

void set_ratelimit(Answer& res, const RateWindow::State& s) {
    res.set("x-ratelimit-limit-requests", std::to_string(s.limit));
    res.set("x-ratelimit-remaining-requests", std::to_string(s.remaining));
    res.set("x-ratelimit-reset-requests", go_duration(s.reset_ms));
}

}  // namespace

struct Provider::State {
    State(net::io_context& io, Timeline t, RateWindow w, double service)
        : acceptor(io), timeline(t), window(w), service_ms(service) {}

    tcp::acceptor acceptor;
    const Timeline timeline;
    mutable std::mutex mu;
    RateWindow window;
    const double service_ms;
    std::mt19937 draw{1};
    Clock::time_point t0 = Clock::now();
    std::vector<Attempt> attempts;

    double now_ms() const { return ms_since(t0, Clock::now()); }  // under mu

    // Decides and records a request read now: 503 when down, else 200 or 429
    // by the window.
    std::pair<unsigned, RateWindow::State> arrive() {
        std::lock_guard lock(mu);
        const double at = now_ms();
        unsigned status = 503;
        RateWindow::State s;
        if (!timeline.down(at)) {
            s = window.take(at);
            status = s.admitted ? 200 : 429;
        }
        attempts.push_back(Attempt{at, status});
        return {status, s};
    }
    double service_time() {
        std::lock_guard lock(mu);
        return std::uniform_real_distribution<double>(0.5 * service_ms, 1.5 * service_ms)(draw);
    }
    RateWindow::State peek() {
        std::lock_guard lock(mu);
        return window.peek(now_ms());
    }
};

namespace {

net::awaitable<void> serve(std::shared_ptr<Provider::State> state, tcp::socket socket) {
    socket.set_option(tcp::no_delay(true));
    boost::beast::flat_buffer buffer;
    net::steady_timer timer(socket.get_executor());
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(64u << 20);
        auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_tuple);
        if (ec) co_return;
        const auto& req = parser.get();
        const auto [status, admitted] = state->arrive();
        Answer res;
        if (status == 503) {
            res = error_answer(http::status::service_unavailable,
                               R"({"error":{"message":"the load simulation's provider is down",)"
                               R"("type":"server_error","param":null,"code":null}})",
                               req.version());
        } else if (status == 429) {
            res = error_answer(http::status::too_many_requests,
                               R"({"error":{"message":"Rate limit reached for requests","type":"requests",)"
                               R"("param":null,"code":"rate_limit_exceeded"}})",
                               req.version());
            res.set(http::field::retry_after, "1");
            set_ratelimit(res, admitted);
        } else {
            if (state->service_ms > 0) {
                timer.expires_after(std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double, std::milli>(state->service_time())));
                co_await timer.async_wait(use_tuple);
            }
            res = completion(requested_model(req.body()), wants_stream(req.body()), req.version());
            set_ratelimit(res, state->peek());
        }
        res.keep_alive(req.keep_alive());
        res.prepare_payload();
        auto [wec, written] = co_await http::async_write(socket, res, use_tuple);
        if (wec || !req.keep_alive()) co_return;
    }
}

net::awaitable<void> accept_loop(std::shared_ptr<Provider::State> state) {
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

Provider::Provider(net::io_context& io, Timeline timeline, RateWindow window, double service_ms)
    : state_(std::make_shared<State>(io, timeline, window, service_ms)) {
    const tcp::endpoint at(net::ip::make_address("127.0.0.1"), 0);
    state_->acceptor.open(at.protocol());
    state_->acceptor.set_option(net::socket_base::reuse_address(true));
    state_->acceptor.bind(at);
    state_->acceptor.listen(net::socket_base::max_listen_connections);
    port_ = state_->acceptor.local_endpoint().port();
    net::co_spawn(io, accept_loop(state_), net::detached);
}

Provider::~Provider() = default;  // the io_context's end destroys the coroutines and their sockets

void Provider::set_start(Clock::time_point t0) {
    std::lock_guard lock(state_->mu);
    state_->t0 = t0;
}

std::vector<Attempt> Provider::attempts() const {
    std::lock_guard lock(state_->mu);
    return state_->attempts;
}

}  // namespace modelproxy::load
