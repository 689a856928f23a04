#include "fleet/callers.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace modelproxy::fleet {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

Clock::duration as_duration(double ms) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

struct Caller {
    const CallerSpec& spec;
    std::uint16_t port;
    double first_ms;  // its first turn, since t0
    const std::string& request;
    std::vector<Turn>& turns;
};

net::awaitable<void> caller(Caller c, Clock::time_point t0) {
    const CallerSpec& spec = c.spec;
    auto executor = co_await net::this_coro::executor;
    net::steady_timer pause(executor);
    pause.expires_at(t0 + as_duration(c.first_ms));
    co_await pause.async_wait(use_tuple);
    const tcp::endpoint proxy(net::ip::make_address("127.0.0.1"), c.port);
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buffer;
    while (ms_since(t0, Clock::now()) < spec.seconds * 1000) {
        Turn turn;
        turn.due_ms = ms_since(t0, Clock::now());
        const auto finish = [&](std::string why) {
            turn.end_ms = ms_since(t0, Clock::now());
            turn.error = std::move(why);
            c.turns.push_back(std::move(turn));
        };
        const auto deadline = Clock::now() + as_duration(spec.turn_timeout_ms);
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
        if (auto [ec, n] = co_await net::async_write(*stream, net::buffer(c.request), use_tuple); ec) {
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
        turn.ok = turn.status == 200 && res.body().find("\"choices\"") != std::string::npos;
        double pause_ms = spec.think_ms;
        if (turn.ok) {
            finish("");
        } else {
            std::string cause = "status " + std::to_string(turn.status);
            if (auto it = res.find("x-modelproxy-decision"); it != res.end()) cause += " " + std::string(it->value());
            if (auto it = res.find("x-modelproxy-bound"); it != res.end()) cause += "/" + std::string(it->value());
            if (const std::string code = error_code(res.body()); !code.empty()) cause += " code " + code;
            pause_ms = 500;
            if (auto it = res.find("retry-after"); it != res.end()) {
                const int s = std::atoi(std::string(it->value()).c_str());
                if (s > 0) pause_ms = std::min(s, 60) * 1000.0;
            }
            finish(turn.status == 200 ? "200 incomplete" : cause);
        }
        if (!res.keep_alive()) stream.reset();
        // A pause ends with the run: a long Retry-After at its end would
        // only keep the run from ending.
        pause_ms = std::min(pause_ms, spec.seconds * 1000 - ms_since(t0, Clock::now()));
        if (pause_ms > 0) {
            pause.expires_after(as_duration(pause_ms));
            co_await pause.async_wait(use_tuple);
        }
    }
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

std::vector<Turn> run_callers(const CallerSpec& spec, Clock::time_point t0) {
    const std::string body =
        R"({"model":")" + spec.model + R"(","max_tokens":20,"messages":[{"role":"user","content":"ping"}]})";
    std::vector<std::string> requests;
    for (const auto port : spec.ports)
        requests.push_back("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body);
    std::vector<std::vector<Turn>> each(static_cast<std::size_t>(spec.callers));
    net::io_context io(1);
    for (std::size_t i = 0; i < each.size(); ++i) {
        const std::size_t replica = i % spec.ports.size();
        const double first_ms = spec.think_ms * static_cast<double>(i) / static_cast<double>(each.size());
        net::co_spawn(io, caller(Caller{spec, spec.ports[replica], first_ms, requests[replica], each[i]}, t0),
                      net::detached);
    }
    io.run();
    std::vector<Turn> turns;
    for (auto& own : each) turns.insert(turns.end(), own.begin(), own.end());
    std::sort(turns.begin(), turns.end(), [](const Turn& a, const Turn& b) { return a.due_ms < b.due_ms; });
    return turns;
}

}  // namespace modelproxy::fleet
