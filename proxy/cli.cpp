#include "proxy/cli.hpp"

#include "config/config.hpp"
#include "config/model_plan.hpp"
#include "config/route_load.hpp"
#include "policy/envelope.hpp"
#include "proxy/startup.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

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

// The route's retry budget and admission (docs/behaviour.md section 14), as
// render_route_load's lines say them.
void add_load_json(const config::Route& route, boost::json::object& o) {
    boost::json::object budget;
    budget["ratio"] = route.retry.budget_ratio;
    budget["min_concurrency"] = route.retry.budget_min_concurrency;
    budget["replays_off"] = route.retry.budget_ratio <= 0 && route.retry.budget_min_concurrency == 0;
    o["retry_budget"] = std::move(budget);
    const policy::AdmissionConfig& a = route.admission;
    boost::json::object units;
    units["rate-limit"] = a.backpressure.rate_limit;
    units["overload"] = a.backpressure.overload;
    units["server"] = a.backpressure.server;
    boost::json::object admission;
    admission["enabled"] = a.enabled;
    admission["initial_limit"] = a.initial_limit;
    admission["min_limit"] = a.min_limit;
    admission["max_limit"] = a.max_limit;
    admission["decrease"] = a.decrease;
    admission["backpressure"] = std::move(units);
    admission["queue_timeout_ms"] = a.queue_timeout_ms;  // 0: the turn deadline
    admission["honour_ratelimit_headers"] = a.honour_ratelimit_headers;
    o["admission"] = std::move(admission);
    // Section 15: null without a quota; 0 on a dimension it leaves out (no limit).
    if (route.quota) {
        o["quota"] = {{"requests_per_minute", route.quota->requests_per_minute},
                      {"tokens_per_minute", route.quota->tokens_per_minute}};
    } else {
        o["quota"] = nullptr;
    }
    // Section 16: always an object; the defaults (off) without a `resume` block.
    o["resume"] = {{"enabled", route.resume.enabled},
                   {"max_resumes", route.resume.max_resumes},
                   {"max_offset", route.resume.max_offset},
                   {"only_deterministic", route.resume.only_deterministic}};
}

// The fleet (section 15): null without fleet.redis. The URL is rebuilt from
// its parts (config::fleet_url) and the password named by its variable only.
boost::json::value fleet_json(const config::Config& cfg) {
    if (!cfg.fleet) return nullptr;
    const config::Fleet& fleet = *cfg.fleet;
    boost::json::object o;
    o["redis"] = config::fleet_url(fleet);
    o["key_prefix"] = fleet.key_prefix;
    o["timeout_ms"] = fleet.timeout_ms;
    if (fleet.password_env.empty()) {
        o["password_env"] = nullptr;
    } else {
        o["password_env"] = fleet.password_env;
    }
    o["ca_file"] = fleet.ca_file;
    return o;
}

std::string_view to_string(config::PlanWarningKind kind) {
    switch (kind) {
        case config::PlanWarningKind::timer_at_deadline: return "timer_at_deadline";
        case config::PlanWarningKind::first_token_never_applies: return "first_token_never_applies";
        case config::PlanWarningKind::attempts_run_out: return "attempts_run_out";
    }
    return "unknown";
}

// The warning's line without its "warning: " lead, as envelope warnings.
std::string plan_warning_message(const config::ModelPlan& plan, const config::PlanWarning& w) {
    constexpr std::string_view lead = "warning: ";
    std::string line = config::render_plan_warning(plan, w);
    if (line.rfind(lead, 0) == 0) line.erase(0, lead.size());
    return line;
}

boost::json::object plan_json(const config::ModelPlan& plan) {
    boost::json::object o;
    o["name"] = plan.model;
    o["balance"] = plan.policy->balance == policy::Balance::ordered ? "ordered" : "weighted";
    o["attempts_per_candidate"] = plan.policy->attempts_per_candidate;
    boost::json::array on;
    for (const auto cls : plan.policy->fallback_on.classes) on.emplace_back(policy::to_string(cls));
    for (const auto& code : plan.policy->fallback_on.codes) on.emplace_back("code:" + code);
    o["fallback_on"] = std::move(on);
    boost::json::array candidates;
    for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
        const auto& c = plan.candidates[i];
        boost::json::object item;
        item["index"] = static_cast<std::int64_t>(i);
        item["route"] = c.route_name;
        // null on the "*" route: the requested name goes upstream unchanged.
        if (c.upstream_model.empty()) {
            item["upstream_model"] = nullptr;
        } else {
            item["upstream_model"] = c.upstream_model;
        }
        item["model"] = c.model;
        item["fallback"] = c.fallback;
        candidates.emplace_back(std::move(item));
    }
    o["candidates"] = std::move(candidates);
    o["deadline_route"] = plan.deadline_route;
    o["deadline"] = plan.deadline_ms;
    o["max_attempts"] = plan.max_attempts;
    o["worst_case_ms"] = plan.worst_case_ms;
    // null: one candidate, or a hang before the last holds the turn until the deadline.
    if (plan.reach_last_ms) {
        o["stream_reach_last_ms"] = *plan.reach_last_ms;
    } else {
        o["stream_reach_last_ms"] = nullptr;
    }
    boost::json::array warnings;
    for (const auto& w : plan.warnings) {
        boost::json::object item;
        item["kind"] = to_string(w.kind);
        item["message"] = plan_warning_message(plan, w);
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
            boost::json::object o = envelope_json(envelope);
            add_load_json(route, o);
            routes.emplace_back(std::move(o));
        } else {
            for (const auto& line : policy::render_envelope(envelope)) std::cout << line << "\n";
            for (const auto& line : config::render_route_load(route)) std::cout << line << "\n";
            if (const auto quota = config::render_route_quota(route, file.config->fleet.has_value()))
                std::cout << *quota << "\n";
            if (const auto resume = config::render_route_resume(route)) std::cout << *resume << "\n";
        }
        // Warnings inform; they never change the exit code (docs/behaviour.md section 2).
        for (const auto& w : envelope.warnings) std::cerr << "modelproxy: " << policy::render_warning(envelope, w) << "\n";
    }
    // Then each client model with more than one candidate, a models entry
    // or a warning (docs/behaviour.md section 13).
    boost::json::array models;
    for (const auto& plan : config::model_plans(*file.config)) {
        if (json) {
            models.emplace_back(plan_json(plan));
        } else {
            for (const auto& line : config::render_model_plan(plan)) std::cout << line << "\n";
        }
        for (const auto& w : plan.warnings) std::cerr << "modelproxy: " << config::render_plan_warning(plan, w) << "\n";
    }
    if (json) {
        boost::json::object out;
        out["routes"] = std::move(routes);
        out["models"] = std::move(models);
        out["fleet"] = fleet_json(*file.config);
        std::cout << boost::json::serialize(out) << "\n";
    } else {
        std::cout << config::render_fleet(*file.config) << "\n";
    }
    std::cout.flush();
    if (!std::cout) {
        std::cerr << "modelproxy: cannot write the report to stdout\n";
        return 1;
    }
    return 0;
}

}  // namespace modelproxy::proxy
