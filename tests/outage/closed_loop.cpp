#include "outage/closed_loop.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace modelproxy::outage {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

Clock::duration as_duration(double ms) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

bool whole_answer(unsigned status, const std::string& body, bool stream) {
    if (status != 200) return false;
    if (stream)  // a closing error event names "error"; a chunk never does
        return body.find("data: [DONE]") != std::string::npos && body.find("\"error\"") == std::string::npos;
    return body.find("\"choices\"") != std::string::npos;
}

}  // namespace

std::string error_code(const std::string& body) {
    const auto key = body.find("\"code\"");
    if (key == std::string::npos) return "";
    auto at = body.find_first_not_of(" \t\r\n", key + 6);
    if (at == std::string::npos || body[at] != ':') return "";
    at = body.find_first_not_of(" \t\r\n", at + 1);
    if (at == std::string::npos || body[at] != '"') return "";  // null, or not a string
    const auto close = body.find('"', at + 1);
    return close == std::string::npos ? "" : body.substr(at + 1, close - at - 1);
}

namespace {

net::awaitable<void> closed_loop_caller(ClosedLoop loop, Clock::time_point t0, std::vector<Turn>& turns) {
    auto executor = co_await net::this_coro::executor;
    net::steady_timer pause(executor);
    pause.expires_at(t0 + as_duration(loop.first_ms));
    co_await pause.async_wait(use_tuple);
    const tcp::endpoint proxy(net::ip::make_address("127.0.0.1"), loop.port);
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buffer;
    while (ms_since(t0, Clock::now()) < loop.seconds * 1000) {
        Turn turn;
        turn.due_ms = ms_since(t0, Clock::now());
        const auto finish = [&](std::string why) {
            turn.end_ms = ms_since(t0, Clock::now());
            turn.error = std::move(why);
            turns.push_back(std::move(turn));
        };
        const auto deadline = Clock::now() + as_duration(loop.turn_timeout_ms);
        if (!stream) {
            stream.emplace(executor);
            buffer.clear();
            stream->expires_at(deadline);
            if (auto [ec] = co_await stream->async_connect(proxy, use_tuple); ec) {
                finish("connect: " + ec.message());
                stream.reset();
                pause.expires_after(std::chrono::milliseconds(100));
                co_await pause.async_wait(use_tuple);
                continue;
            }
            stream->socket().set_option(tcp::no_delay(true));
        }
        stream->expires_at(deadline);
        if (auto [ec, n] = co_await net::async_write(*stream, net::buffer(*loop.request), use_tuple); ec) {
            finish("send: " + ec.message());
            stream.reset();
            continue;
        }
        http::response_parser<http::string_body> parser;
        parser.body_limit(64u << 20);
        auto [ec, n] = co_await http::async_read(*stream, buffer, parser, use_tuple);
        const auto& res = parser.get();
        if (parser.is_header_done()) {
            turn.status = res.result_int();
            if (auto it = res.find("x-modelproxy-route"); it != res.end()) turn.route = std::string(it->value());
            if (auto it = res.find("x-modelproxy-attempts"); it != res.end())
                turn.attempts = std::atoi(std::string(it->value()).c_str());
        }
        if (ec) {
            finish(ec == beast::error::timeout ? "timeout" : "read: " + ec.message());
            stream.reset();
            continue;
        }
        turn.ok = whole_answer(turn.status, res.body(), loop.stream);
        double pause_ms = loop.think_ms;
        if (turn.ok) {
            finish("");
        } else {
            pause_ms = 500;
            if (auto it = res.find("retry-after"); it != res.end()) {
                const int s = std::atoi(std::string(it->value()).c_str());
                if (s > 0) pause_ms = std::min(s, 60) * 1000.0;
            }
            if (turn.status == 200) {
                // A stream whose head went out before the turn failed ends
                // with the closing error event.
                const bool event = res.body().find("\"error\"") != std::string::npos;
                finish(event ? "200 ended by an error event" : "200 incomplete");
            } else {
                std::string cause = "status " + std::to_string(turn.status);
                if (auto it = res.find("x-modelproxy-decision"); it != res.end())
                    cause += " " + std::string(it->value());
                if (auto it = res.find("x-modelproxy-bound"); it != res.end())
                    cause += "/" + std::string(it->value());
                if (const std::string code = loop.cause_code ? error_code(res.body()) : ""; !code.empty())
                    cause += " code " + code;
                finish(cause);
            }
        }
        if (!res.keep_alive()) stream.reset();
        if (loop.pause_ends_with_run)  // a long Retry-After at its end would only keep the run from ending
            pause_ms = std::min(pause_ms, loop.seconds * 1000 - ms_since(t0, Clock::now()));
        if (pause_ms > 0) {
            pause.expires_after(as_duration(pause_ms));
            co_await pause.async_wait(use_tuple);
        }
    }
}

}  // namespace

std::vector<Turn> run_closed_loops(const std::vector<ClosedLoop>& loops, Clock::time_point t0) {
    std::vector<std::vector<Turn>> each(loops.size());
    net::io_context io(1);
    for (std::size_t i = 0; i < loops.size(); ++i) net::co_spawn(io, closed_loop_caller(loops[i], t0, each[i]), net::detached);
    io.run();
    std::vector<Turn> turns;
    for (auto& own : each) turns.insert(turns.end(), own.begin(), own.end());
    std::sort(turns.begin(), turns.end(), [](const Turn& a, const Turn& b) { return a.due_ms < b.due_ms; });
    return turns;
}

}  // namespace modelproxy::outage
