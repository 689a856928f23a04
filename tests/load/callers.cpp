#include "load/callers.hpp"

#include "outage/closed_loop.hpp"

namespace modelproxy::load {

std::vector<Turn> run_callers(const CallerSpec& spec, Clock::time_point t0) {
    const std::string body = R"({"model":")" + spec.model +
                             R"(","messages":[{"role":"user","content":"ping"}])" +
                             (spec.stream ? R"(,"stream":true})" : "}");
    const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(spec.port) +
                                "\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    const outage::ClosedLoop loop{.port = spec.port,
                                  .request = &request,
                                  .stream = spec.stream,
                                  .seconds = spec.seconds,
                                  .turn_timeout_ms = spec.turn_timeout_ms};
    return outage::run_closed_loops(std::vector<outage::ClosedLoop>(static_cast<std::size_t>(spec.callers), loop), t0);
}

}  // namespace modelproxy::load
