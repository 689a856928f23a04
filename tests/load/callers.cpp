#include "load/callers.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace modelproxy::load {

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

net::awaitable<void> caller(const CallerSpec& spec, Clock::time_point t0, const std::string& request,
                            std::vector<Turn>& turns) {
    auto executor = co_await net::this_coro::executor;
    net::steady_timer pause(executor);
    pause.expires_at(t0);
    co_await pause.async_wait(use_tuple);
    const tcp::endpoint proxy(net::ip::make_address("127.0.0.1"), spec.port);
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buffer;
    while (ms_since(t0, Clock::now()) < spec.seconds * 1000) {
        Turn turn;
        turn.due_ms = ms_since(t0, Clock::now());
        const auto finish = [&](std::string why) {
            turn.end_ms = ms_since(t0, Clock::now());
            turn.error = std::move(why);
            turns.push_back(std::move(turn));
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
        if (auto [ec, n] = co_await net::async_write(*stream, net::buffer(request), use_tuple); ec) {
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
        // A failure's cause for the report: the status, and how the proxy
        // ended the turn (section 9's decision and bound headers).
        std::string cause = "status " + std::to_string(turn.status);
        if (auto it = res.find("x-modelproxy-decision"); it != res.end()) cause += " " + std::string(it->value());
        if (auto it = res.find("x-modelproxy-bound"); it != res.end()) cause += "/" + std::string(it->value());
        if (ec) {
            finish(ec == beast::error::timeout ? "timeout" : "read: " + ec.message());
            stream.reset();
            continue;
        }
        turn.ok = whole_answer(turn.status, res.body(), spec.stream);
        const bool keep = res.keep_alive();
        // A failed turn is followed by a pause, as the official SDKs pause
        // before they retry: the answer's Retry-After (whole seconds), else
        // half a second. A caller that resent at once would measure its own
        // loop, not the proxy.
        std::int64_t pause_ms = 0;
        if (!turn.ok) {
            pause_ms = 500;
            if (auto it = res.find("retry-after"); it != res.end()) {
                const int s = std::atoi(std::string(it->value()).c_str());
                if (s > 0) pause_ms = std::min(s, 60) * 1000;
            }
        }
        if (turn.ok) finish("");
        else if (turn.status != 200) finish(cause);
        else finish(res.body().find("\"error\"") != std::string::npos ? "200 ended by an error event" : "200 incomplete");
        if (!keep) stream.reset();
        if (pause_ms > 0) {
            pause.expires_after(std::chrono::milliseconds(pause_ms));
            co_await pause.async_wait(use_tuple);
        }
    }
}

}  // namespace

std::vector<Turn> run_callers(const CallerSpec& spec, Clock::time_point t0) {
    const std::string body = R"({"model":")" + spec.model +
                             R"(","messages":[{"role":"user","content":"ping"}])" +
                             (spec.stream ? R"(,"stream":true})" : "}");
    const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(spec.port) +
                                "\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    std::vector<std::vector<Turn>> each(static_cast<std::size_t>(spec.callers));
    net::io_context io(1);
    for (auto& turns : each) net::co_spawn(io, caller(spec, t0, request, turns), net::detached);
    io.run();
    std::vector<Turn> turns;
    for (auto& own : each) turns.insert(turns.end(), own.begin(), own.end());
    std::sort(turns.begin(), turns.end(), [](const Turn& a, const Turn& b) { return a.due_ms < b.due_ms; });
    return turns;
}

}  // namespace modelproxy::load
