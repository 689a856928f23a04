// The client writes every answer of a turn goes through: one at a time,
// whole, so that the turn's and the hold ticker's bytes never interleave.
#include "proxy/response_head.hpp"
#include "proxy/turn_run.hpp"
#include "transport/write_now.hpp"

#include <array>
#include <cstdio>

namespace modelproxy::proxy {

Task<bool> TurnRun::write(std::string_view a, std::string_view b, std::string_view c, std::string_view d,
                          std::string_view e, std::string_view f, std::string_view g) {
    std::array<asio::const_buffer, 7> buffers{asio::buffer(a), asio::buffer(b), asio::buffer(c), asio::buffer(d),
                                              asio::buffer(e), asio::buffer(f), asio::buffer(g)};
    std::size_t taken = 0;
    if (auto settled = write_at_once(buffers, taken)) co_return *settled;
    co_return co_await finish_write(buffers, taken);
}

template <std::size_t N>
std::optional<bool> TurnRun::write_at_once(const std::array<asio::const_buffer, N>& buffers, std::size_t& taken) {
    if (writing_ || client_gone_) {
        taken = not_started;
        return std::nullopt;
    }
    writing_ = true;
    taken = 0;
    if (auto settled = transport::write_at_once(client_, buffers, taken)) return wrote(settled->first);
    return std::nullopt;
}

template <std::size_t N>
Task<bool> TurnRun::finish_write(std::array<asio::const_buffer, N> buffers, std::size_t taken) {
    if (taken == not_started) {
        while (writing_) {
            if (!write_gate_) write_gate_ = std::make_unique<Timer>(client_.get_executor());
            write_gate_->expires_at(Timer::time_point::max());
            co_await write_gate_->async_wait(use_tuple);
            if (co_await cut()) co_return false;
        }
        if (client_gone_) co_return false;
        writing_ = true;
        taken = 0;
        if (auto settled = transport::write_at_once(client_, buffers, taken)) co_return wrote(settled->first);
    }
    auto [ec, n] = co_await transport::write_rest(client_, buffers, taken);
    co_return wrote(ec);
}

// The whole-body answer (answer_success, in turn_end.cpp, and its rest in
// turn_attempt.cpp).
template std::optional<bool> TurnRun::write_at_once<2>(const std::array<asio::const_buffer, 2>& buffers,
                                                       std::size_t& taken);
template Task<bool> TurnRun::finish_write<2>(std::array<asio::const_buffer, 2> buffers, std::size_t taken);

bool TurnRun::wrote(const boost::system::error_code& ec) {
    writing_ = false;
    if (write_gate_) write_gate_->cancel();
    // A failed client write is the client gone, as the watch would find it
    // (docs/behaviour.md section 6): told to the watch, so that run_turn
    // records the turn as cancelled even when the write failed before the
    // watch's own completion ran (it then finds the turn done and does
    // nothing).
    if (ec) {
        client_gone_ = true;
        watch_.cut(TurnWatch::Reason::client_left);
    }
    return !ec;
}

void TurnRun::stream_framing(ResponseHead& head) const {
    if (!plan_.http10) head.chunked();
    if (!keep_alive()) head.add("connection", "close");
}

Task<bool> TurnRun::write_chunk(std::string_view data, std::string_view data_more, std::string_view head,
                                std::string_view head_body, std::string_view after) {
    if (plan_.http10) after = {};  // no chunks: the stream ends with the connection
    if (data.empty() && data_more.empty() && head.empty() && head_body.empty() && after.empty()) co_return true;
    char size[24];
    std::string_view size_line, crlf;
    if (!plan_.http10 && (!data.empty() || !data_more.empty())) {
        const int len = std::snprintf(size, sizeof size, "%zx\r\n", data.size() + data_more.size());
        size_line = std::string_view(size, static_cast<std::size_t>(len));
        crlf = "\r\n";
    }
    co_return co_await write(head, head_body, size_line, data, data_more, crlf, after);
}

}  // namespace modelproxy::proxy
