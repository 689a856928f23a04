#include "outage/load.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cmath>

namespace modelproxy::outage {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

bool whole_answer(const Turn& t, const std::string& body, bool stream) {
    if (t.status != 200) return false;
    if (stream)  // a closing error event names "error"; a chunk never does
        return body.find("data: [DONE]") != std::string::npos && body.find("\"error\"") == std::string::npos;
    return body.find("\"choices\"") != std::string::npos;
}

net::awaitable<void> one_turn(const LoadSpec& spec, Clock::time_point t0, Turn& turn, std::string request) {
    beast::tcp_stream stream(co_await net::this_coro::executor);
    const auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double, std::milli>(turn.due_ms));
    stream.expires_at(due + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double, std::milli>(spec.turn_timeout_ms)));
    const auto finish = [&](std::string why) {
        turn.end_ms = ms_since(t0, Clock::now());
        turn.error = std::move(why);
    };
    const tcp::endpoint proxy(net::ip::make_address("127.0.0.1"), spec.port);
    if (auto [ec] = co_await stream.async_connect(proxy, use_tuple); ec) co_return finish("connect: " + ec.message());
    stream.socket().set_option(tcp::no_delay(true));
    if (auto [ec, n] = co_await net::async_write(stream, net::buffer(request), use_tuple); ec)
        co_return finish("send: " + ec.message());
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
    const auto& res = parser.get();
    if (parser.is_header_done()) {
        turn.status = res.result_int();
        if (auto it = res.find("x-modelproxy-route"); it != res.end()) turn.route = std::string(it->value());
        if (auto it = res.find("x-modelproxy-attempts"); it != res.end())
            turn.attempts = std::atoi(std::string(it->value()).c_str());
    }
    if (ec) co_return finish((ec == beast::error::timeout ? "timeout" : "read: " + ec.message()));
    turn.ok = whole_answer(turn, res.body(), spec.stream);
    if (turn.ok) co_return finish("");
    if (turn.status != 200) co_return finish("status " + std::to_string(turn.status));
    // A stream whose head went out before the turn failed (the head hold
    // limit) ends with the closing error event.
    finish(res.body().find("\"error\"") != std::string::npos ? "200 ended by an error event" : "200 incomplete");
}

net::awaitable<void> schedule(const LoadSpec& spec, Clock::time_point t0, std::vector<Turn>& turns) {
    const std::string body = R"({"model":")" + spec.model +
                             R"(","messages":[{"role":"user","content":"ping"}])" +
                             (spec.stream ? R"(,"stream":true})" : "}");
    const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(spec.port) +
                                "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    auto executor = co_await net::this_coro::executor;
    net::steady_timer timer(executor);
    for (auto& turn : turns) {
        timer.expires_at(t0 + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double, std::milli>(turn.due_ms)));
        co_await timer.async_wait(use_tuple);
        net::co_spawn(executor, one_turn(spec, t0, turn, request), net::detached);
    }
}

}  // namespace

std::vector<Turn> run_load(const LoadSpec& spec, Clock::time_point t0) {
    const auto count = static_cast<std::size_t>(std::llround(spec.rate * spec.seconds));
    std::vector<Turn> turns(count);
    for (std::size_t i = 0; i < count; ++i) turns[i].due_ms = 1000.0 * static_cast<double>(i) / spec.rate;
    net::io_context io(1);
    net::co_spawn(io, schedule(spec, t0, turns), net::detached);
    io.run();
    return turns;
}

}  // namespace modelproxy::outage
