#include "load/provider.hpp"

#include <boost/asio.hpp>
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

using outage::HttpAnswer;
using outage::HttpRequest;

const char* const usage = R"("usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6})";

void set_ratelimit(HttpAnswer& res, const RateWindow::State& s) {
    res.set("x-ratelimit-limit-requests", std::to_string(s.limit));
    res.set("x-ratelimit-remaining-requests", std::to_string(s.remaining));
    res.set("x-ratelimit-reset-requests", go_duration(s.reset_ms));
}

}  // namespace

struct Provider::State {
    State(Timeline t, RateWindow w, double service) : timeline(t), window(w), service_ms(service) {}

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

net::awaitable<bool> answer(std::shared_ptr<Provider::State> state, tcp::socket& socket, const HttpRequest& req) {
    const auto [status, admitted] = state->arrive();
    HttpAnswer res;
    if (status == 503) {
        res = outage::json_answer(http::status::service_unavailable,
                                  R"({"error":{"message":"the load simulation's provider is down",)"
                                  R"("type":"server_error","param":null,"code":null}})",
                                  req.version());
    } else if (status == 429) {
        res = outage::rate_limit_answer(req.version());
        set_ratelimit(res, admitted);
    } else {
        if (state->service_ms > 0) {
            net::steady_timer timer(socket.get_executor());
            timer.expires_after(std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double, std::milli>(state->service_time())));
            co_await timer.async_wait(use_tuple);
        }
        res = outage::completion_answer("chatcmpl-load", outage::requested_model(req.body()),
                                        outage::wants_stream(req.body()), req.version(), usage);
        set_ratelimit(res, state->peek());
    }
    co_return co_await outage::write_answer(socket, req, res);
}

}  // namespace

Provider::Provider(net::io_context& io, Timeline timeline, RateWindow window, double service_ms)
    : state_(std::make_shared<State>(timeline, window, service_ms)) {
    server_ = std::make_unique<outage::HttpServer>(
        io, [state = state_](tcp::socket& socket, const HttpRequest& req) { return answer(state, socket, req); });
    port_ = server_->port();
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
