#include "outage/upstream.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

namespace modelproxy::outage {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

const char* const usage = R"("usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6})";

HttpAnswer unavailable_answer(unsigned version) {
    return json_answer(http::status::service_unavailable,
                       R"({"error":{"message":"the outage simulation's primary is down","type":"server_error","code":503}})",
                       version);
}

}  // namespace

struct Upstream::State {
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

net::awaitable<bool> answer(std::shared_ptr<Upstream::State> state, tcp::socket& socket, const HttpRequest& req) {
    const auto [index, phase] = state->begin();
    switch (phase) {
        case Phase::healthy:
        case Phase::unavailable: {
            auto res = phase == Phase::healthy ? completion_answer("chatcmpl-outage", requested_model(req.body()),
                                                                   wants_stream(req.body()), req.version(), usage)
                                               : unavailable_answer(req.version());
            bool written = false;
            const bool more = co_await write_answer(socket, req, res, &written);
            state->end(index, written ? res.result_int() : 0);
            co_return more;
        }
        case Phase::reset: {
            boost::system::error_code ignored;
            socket.set_option(net::socket_base::linger(true, 0), ignored);
            socket.close(ignored);
            state->end(index, 0);
            co_return false;
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
            co_return false;
        }
    }
    co_return false;
}

}  // namespace

Upstream::Upstream(net::io_context& io, std::string name, std::optional<Timeline> timeline)
    : name_(std::move(name)), state_(std::make_shared<State>()) {
    state_->timeline = timeline;
    server_ = std::make_unique<HttpServer>(
        io, [state = state_](tcp::socket& socket, const HttpRequest& req) { return answer(state, socket, req); });
    port_ = server_->port();
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
