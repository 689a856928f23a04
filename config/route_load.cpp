#include "config/route_load.hpp"

#include "config/schema.hpp"

namespace modelproxy::config {

std::string decimal_value(double value) {
    // Loaded values have at most six digits after the point (config/schema.hpp).
    return detail::decimal_text(static_cast<std::int64_t>(value * static_cast<double>(detail::micro) + 0.5));
}

std::vector<std::string> render_route_load(const Route& route) {
    const policy::RetryConfig& retry = route.retry;
    std::string budget = "  retry budget: ";
    const std::string ratio = decimal_value(retry.budget_ratio);
    const std::string minimum = std::to_string(retry.budget_min_concurrency);
    if (retry.budget_ratio <= 0 && retry.budget_min_concurrency == 0) {
        budget += "replays off (budget_ratio 0, budget_min_concurrency 0)";
    } else {
        budget += "budget_ratio " + ratio + ", budget_min_concurrency " + minimum +
                  " (replays in flight to a candidate at most max(" + minimum + ", " + ratio +
                  " x its turns in flight))";
    }
    const policy::AdmissionConfig& a = route.admission;
    std::string admission = "  admission: ";
    if (!a.enabled) {
        admission += "off";
    } else {
        admission += "on, initial_limit " + std::to_string(a.initial_limit) + ", min_limit " +
                     std::to_string(a.min_limit) + ", max_limit " + std::to_string(a.max_limit) + ", decrease " +
                     decimal_value(a.decrease) + ", backpressure rate-limit " +
                     std::to_string(a.backpressure.rate_limit) + " overload " +
                     std::to_string(a.backpressure.overload) + " server " + std::to_string(a.backpressure.server) +
                     ", queue_timeout_ms " + std::to_string(a.queue_timeout_ms) +
                     (a.queue_timeout_ms == 0 ? " (the turn deadline)" : "") + ", pacing on rate-limit headers " +
                     (a.honour_ratelimit_headers ? "yes" : "no");
    }
    return {std::move(budget), std::move(admission)};
}

std::optional<std::string> render_route_quota(const Route& route, bool shared) {
    if (!route.quota) {
        return std::nullopt;
    }
    auto limit = [](std::int64_t value) { return value == 0 ? std::string("no limit") : std::to_string(value); };
    return "  quota: requests_per_minute " + limit(route.quota->requests_per_minute) + ", tokens_per_minute " +
           limit(route.quota->tokens_per_minute) + (shared ? ", shared by the fleet" : ", each replica its own");
}

std::optional<std::string> render_route_resume(const Route& route) {
    const Resume& resume = route.resume;
    if (!resume.enabled) {
        return std::nullopt;
    }
    return "  resume: up to " + std::to_string(resume.max_resumes) + " per turn, max_offset " +
           std::to_string(resume.max_offset) + (resume.max_offset == 1 ? " code point, " : " code points, ") +
           (resume.only_deterministic ? "only deterministic requests" : "any request");
}

std::string fleet_url(const Fleet& fleet) {
    const bool ipv6 = fleet.host.find(':') != std::string::npos;
    return std::string(fleet.tls ? "rediss://" : "redis://") + (ipv6 ? "[" + fleet.host + "]" : fleet.host) + ":" +
           std::to_string(fleet.port) + "/" + std::to_string(fleet.db);
}

std::string render_fleet(const Config& config) {
    if (!config.fleet) {
        return "fleet: per replica (no fleet.redis)";
    }
    const Fleet& fleet = *config.fleet;
    std::string line = "fleet: redis " + fleet_url(fleet) + ", key_prefix " + fleet.key_prefix + ", timeout_ms " +
                       std::to_string(fleet.timeout_ms);
    line += fleet.password_env.empty() ? ", no password" : ", password from " + fleet.password_env;
    if (fleet.tls && !fleet.ca_file.empty()) {
        line += ", tls.ca_file " + fleet.ca_file;
    }
    return line;
}

}  // namespace modelproxy::config
