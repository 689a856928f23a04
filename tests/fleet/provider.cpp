#include "fleet/provider.hpp"

#include "load/rate_window.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cmath>
#include <mutex>
#include <random>
#include <string>

namespace modelproxy::fleet {

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

using Answer = http::response<http::string_body>;

double wall_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void set_ratelimit(Answer& res, const MinuteWindow::State& s) {
    res.set("x-ratelimit-limit-requests", std::to_string(s.limit));
    res.set("x-ratelimit-remaining-requests", std::to_string(s.remaining));
    res.set("x-ratelimit-reset-requests", load::go_duration(s.reset_ms));
}

}  // namespace

struct Provider::State {
    State(net::io_context& io, ProviderSpec s) : acceptor(io), spec(s), window(s.requests_per_minute) {}

    tcp::acceptor acceptor;
    const ProviderSpec spec;
    mutable std::mutex mu;
    MinuteWindow window;
    std::mt19937 draw{1};
    Clock::time_point t0 = Clock::now();
    std::vector<Attempt> attempts;

    // Decides and records a request read now; the service time of an admitted one.
    std::pair<MinuteWindow::State, double> arrive() {
        std::lock_guard lock(mu);
        const double wall = wall_ms();
        const MinuteWindow::State s = window.take(wall);
        const std::int64_t tokens = s.admitted ? spec.prompt_tokens + spec.completion_tokens : 0;
        attempts.push_back(Attempt{ms_since(t0, Clock::now()), s.admitted ? 200u : 429u, tokens,
                                   static_cast<std::int64_t>(std::floor(wall / 1000))});
        const double service =
            s.admitted ? std::uniform_real_distribution<double>(spec.min_service_ms, spec.max_service_ms)(draw) : 0;
        return {s, service};
    }
    MinuteWindow::State peek() const {
        std::lock_guard lock(mu);
        return window.peek(wall_ms());
    }
};

namespace {

Answer completion(const Provider::State& state, const std::string& model, unsigned version) {
    Answer res{http::status::ok, version};
    const int p = state.spec.prompt_tokens, c = state.spec.completion_tokens;
    res.set(http::field::content_type, "application/json");
    res.body() = R"({"id":"chatcmpl-fleet","object":"chat.completion","created":1,"model":")" + model +
                 R"(","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},)"
                 R"("finish_reason":"stop"}],"usage":{"prompt_tokens":)" + std::to_string(p) +
                 R"(,"completion_tokens":)" + std::to_string(c) + R"(,"total_tokens":)" + std::to_string(p + c) +
                 "}}";
    return res;
}

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
        const auto [window, service_ms] = state->arrive();
        Answer res;
        if (!window.admitted) {
            res = Answer{http::status::too_many_requests, req.version()};
            res.set(http::field::content_type, "application/json");
            res.body() = R"({"error":{"message":"Rate limit reached for requests","type":"requests",)"
                         R"("param":null,"code":"rate_limit_exceeded"}})";
            res.set(http::field::retry_after, "1");
            set_ratelimit(res, window);
        } else {
            timer.expires_after(std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double, std::milli>(service_ms)));
            co_await timer.async_wait(use_tuple);
            res = completion(*state, requested_model(req.body()), req.version());
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

Provider::Provider(net::io_context& io, ProviderSpec spec) : state_(std::make_shared<State>(io, spec)) {
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

}  // namespace modelproxy::fleet
