#include "fleet/provider.hpp"

#include "load/rate_window.hpp"

#include <boost/asio.hpp>
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

using outage::HttpAnswer;
using outage::HttpRequest;

double wall_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void set_ratelimit(HttpAnswer& res, const MinuteWindow::State& s) {
    res.set("x-ratelimit-limit-requests", std::to_string(s.limit));
    res.set("x-ratelimit-remaining-requests", std::to_string(s.remaining));
    res.set("x-ratelimit-reset-requests", load::go_duration(s.reset_ms));
}

}  // namespace

struct Provider::State {
    State(ProviderSpec s) : spec(s), window(s.requests_per_minute) {}

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

HttpAnswer completion(const Provider::State& state, const std::string& model, unsigned version) {
    const int p = state.spec.prompt_tokens, c = state.spec.completion_tokens;
    const std::string usage = R"("usage":{"prompt_tokens":)" + std::to_string(p) + R"(,"completion_tokens":)" +
                              std::to_string(c) + R"(,"total_tokens":)" + std::to_string(p + c) + "}";
    return outage::completion_answer("chatcmpl-fleet", model, false, version, usage);
}

net::awaitable<bool> answer(std::shared_ptr<Provider::State> state, tcp::socket& socket, const HttpRequest& req) {
    const auto [window, service_ms] = state->arrive();
    HttpAnswer res;
    if (!window.admitted) {
        res = outage::rate_limit_answer(req.version());
        set_ratelimit(res, window);
    } else {
        net::steady_timer timer(socket.get_executor());
        timer.expires_after(
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(service_ms)));
        co_await timer.async_wait(use_tuple);
        res = completion(*state, outage::requested_model(req.body()), req.version());
        set_ratelimit(res, state->peek());
    }
    co_return co_await outage::write_answer(socket, req, res);
}

}  // namespace

Provider::Provider(net::io_context& io, ProviderSpec spec) : state_(std::make_shared<State>(spec)) {
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

}  // namespace modelproxy::fleet
