#include "fleet/callers.hpp"

#include "outage/closed_loop.hpp"

namespace modelproxy::fleet {

std::vector<Turn> run_callers(const CallerSpec& spec, Clock::time_point t0) {
    const std::string body =
        R"({"model":")" + spec.model + R"(","max_tokens":20,"messages":[{"role":"user","content":"ping"}]})";
    std::vector<std::string> requests;
    for (const auto port : spec.ports)
        requests.push_back("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body);
    std::vector<outage::ClosedLoop> loops;
    for (std::size_t i = 0; i < static_cast<std::size_t>(spec.callers); ++i) {
        const std::size_t replica = i % spec.ports.size();
        loops.push_back(outage::ClosedLoop{
            .port = spec.ports[replica],
            .request = &requests[replica],
            .first_ms = spec.think_ms * static_cast<double>(i) / static_cast<double>(spec.callers),
            .think_ms = spec.think_ms,
            .seconds = spec.seconds,
            .turn_timeout_ms = spec.turn_timeout_ms,
            .cause_code = true,
            .pause_ends_with_run = true});
    }
    return outage::run_closed_loops(loops, t0);
}

}  // namespace modelproxy::fleet
