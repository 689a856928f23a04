#include "proxy/cli.hpp"

#include "config/config.hpp"
#include "policy/envelope.hpp"
#include "proxy/startup.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <cstdlib>
#include <iostream>
#include <string_view>

namespace modelproxy::proxy {

namespace {

std::string_view to_string(policy::WarningKind kind) {
    switch (kind) {
        case policy::WarningKind::attempts_unreachable_under_cap: return "attempts_unreachable_under_cap";
        case policy::WarningKind::bound_unreachable_under_deadline: return "bound_unreachable_under_deadline";
        case policy::WarningKind::cap_unreachable_under_deadline: return "cap_unreachable_under_deadline";
    }
    return "unknown";
}

// render_warning's line is "warning: route ...": stderr gets it behind the
// program name, --json gets the sentence without the "warning: " lead.
std::string warning_message(const policy::Envelope& e, const policy::EnvelopeWarning& w) {
    constexpr std::string_view lead = "warning: ";
    std::string line = policy::render_warning(e, w);
    if (line.rfind(lead, 0) == 0) line.erase(0, lead.size());
    return line;
}

boost::json::object schedule_json(const policy::Schedule& s) {
    boost::json::array waits;
    for (std::int64_t w : s.waits_ms) waits.emplace_back(w);
    boost::json::object o;
    o["waits_ms"] = std::move(waits);
    o["sum_ms"] = s.sum_ms;
    o["unclamped_sum_ms"] = s.unclamped_sum_ms;
    o["cap_ms"] = s.cap_ms;
    o["attempts"] = s.attempts;
    o["ends_with"] = policy::to_string(s.ends_with);
    // What the human form's "under the deadline" line says.
    o["attempts_under_deadline"] = s.attempts_under_deadline;
    o["ends_with_under_deadline"] = policy::to_string(s.ends_with_under_deadline);
    return o;
}

boost::json::object envelope_json(const policy::Envelope& e) {
    boost::json::object o;
    o["name"] = e.route;
    o["max_attempts"] = e.retry.max_attempts;
    o["max_total_delay_ms"] = e.retry.max_total_delay_ms;
    o["throttled_max_attempts"] = e.retry.throttled_max_attempts;
    o["throttled_max_total_delay_ms"] = e.retry.throttled_max_total_delay_ms;
    o["deadline"] = e.timeout_ms;  // the bound named `deadline` is the route's timeout_ms
    o["min_attempt_ms"] = e.retry.min_attempt_ms;
    o["jitter"] = e.retry.jitter == policy::Jitter::full ? "full" : "none";
    o["general"] = schedule_json(e.general);
    o["throttled"] = schedule_json(e.throttled);
    o["worst_case_ms"] = e.worst_case_ms;
    boost::json::array warnings;
    for (const auto& w : e.warnings) {
        boost::json::object item;
        item["kind"] = to_string(w.kind);
        item["message"] = warning_message(e, w);
        warnings.emplace_back(std::move(item));
    }
    o["warnings"] = std::move(warnings);
    return o;
}

}  // namespace

int check_command(const ServeOptions& options) {
    const Prepared prepared = prepare(options, nullptr, [](const char* name) { return std::getenv(name); });
    report(prepared);
    if (!prepared.runtime) return 2;
    const std::size_t routes = prepared.runtime->config.routes.size();
    report({options.config_path + ": ok (" + std::to_string(routes) + (routes == 1 ? " route)" : " routes)")});
    return 0;
}

int reference_command() {
    std::cout << config::reference_document();
    std::cout.flush();
    if (!std::cout) {
        std::cerr << "modelproxy: cannot write the reference to stdout\n";
        return 1;
    }
    return 0;
}

int doctor_command(const std::string& path, bool json) {
    // The file alone: doctor reads no environment (its report depends on none).
    const LoadedFile file = load_file(path);
    report(file.problems);
    if (!file.config) return 2;
    boost::json::array routes;
    for (const auto& route : file.config->routes) {
        const auto envelope = policy::make_envelope(route.name, route.retry, route.timeout_ms);
        if (json) {
            routes.emplace_back(envelope_json(envelope));
        } else {
            for (const auto& line : policy::render_envelope(envelope)) std::cout << line << "\n";
        }
        // Warnings inform; they never change the exit code (docs/behaviour.md section 2).
        for (const auto& w : envelope.warnings) std::cerr << "modelproxy: " << policy::render_warning(envelope, w) << "\n";
    }
    if (json) {
        boost::json::object out;
        out["routes"] = std::move(routes);
        std::cout << boost::json::serialize(out) << "\n";
    }
    std::cout.flush();
    if (!std::cout) {
        std::cerr << "modelproxy: cannot write the report to stdout\n";
        return 1;
    }
    return 0;
}

}  // namespace modelproxy::proxy
