#include "config/model_plan.hpp"

#include <algorithm>
#include <limits>

namespace modelproxy::config {
namespace {

constexpr std::int64_t max_i64 = std::numeric_limits<std::int64_t>::max();

std::int64_t sat_add(std::int64_t a, std::int64_t b) {
    return a > max_i64 - b ? max_i64 : a + b;
}

std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
    if (a != 0 && b > max_i64 / a) return max_i64;
    return a * b;
}

// FallbackOn::matches and has belong to policy/; this reads the list alone.
bool falls_over_on_timeout(const ModelPolicy& policy) {
    const auto& classes = policy.fallback_on.classes;
    return std::find(classes.begin(), classes.end(), policy::ErrorClass::timeout) != classes.end();
}

void add_deployments(const Config& config, std::string_view name, bool fallback,
                     std::vector<PlanCandidate>& out) {
    for (const Deployment& d : deployments_of(config, name)) {
        const Route& route = config.routes[d.route];
        out.push_back(PlanCandidate{d.route, route.name, route.models[d.model].upstream_model, std::string(name),
                                    fallback});
    }
}

// Section 13's per-attempt bound on a stream candidate that hangs: connect,
// then no head for first_byte, then no answer text for first_token. Where a
// timer is off, or does not fall over, only the deadline ends the hang.
void reach_last(const Config& config, ModelPlan& plan, const policy::RetryConfig& retry) {
    const ModelPolicy& policy = *plan.policy;
    const std::size_t last = plan.candidates.size() - 1;
    std::int64_t total = 0;
    std::int64_t replays = 0;
    for (std::size_t i = 0; i < last; ++i) {
        const Route& route = config.routes[plan.candidates[i].route];
        std::string why;
        if (!falls_over_on_timeout(policy)) {
            why = "timeout is not in fallback_on";
        } else if (route.first_byte_timeout_ms == 0) {
            why = "first_byte_timeout_ms is off on route " + route.name;
        } else if (route.first_token_timeout_ms == 0) {
            why = "first_token_timeout_ms is off on route " + route.name;
        }
        if (!why.empty()) {
            plan.hang_candidate = i;
            plan.hang_why = std::move(why);
            return;
        }
        const std::int64_t attempt =
            sat_add(route.connect_timeout_ms, sat_add(route.first_byte_timeout_ms, route.first_token_timeout_ms));
        total = sat_add(total, sat_mul(policy.attempts_per_candidate, attempt));
        replays += policy.attempts_per_candidate - 1;
    }
    // The replays on one candidate wait as section 6 says: each at most
    // max_delay_ms, all of them at most max_total_delay_ms. Falling over
    // does not wait.
    const std::int64_t waits = std::min(retry.max_total_delay_ms, sat_mul(replays, retry.max_delay_ms));
    plan.reach_last_ms = sat_add(total, waits);
}

bool has_warning(const ModelPlan& plan, PlanWarningKind kind, std::size_t route, const std::string& timer,
                 bool no_later) {
    return std::any_of(plan.warnings.begin(), plan.warnings.end(), [&](const PlanWarning& w) {
        return w.kind == kind && plan.candidates[w.candidate].route == route && w.timer == timer &&
               w.no_later_candidate == no_later;
    });
}

// One warning per route and timer: a route listed twice among the
// candidates (a deployment and a fallback's) is named at its first index.
void add_warnings(const Config& config, ModelPlan& plan) {
    const bool on_timeout = falls_over_on_timeout(*plan.policy);
    for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
        const std::size_t r = plan.candidates[i].route;
        const Route& route = config.routes[r];
        const std::pair<const char*, std::int64_t> timers[] = {
            {"first_byte_timeout_ms", route.first_byte_timeout_ms},
            {"first_token_timeout_ms", route.first_token_timeout_ms},
            {"stream_idle_timeout_ms", route.stream_idle_timeout_ms},
        };
        for (const auto& [timer, value] : timers) {
            if (value > 0 && value >= plan.deadline_ms &&
                !has_warning(plan, PlanWarningKind::timer_at_deadline, r, timer, false)) {
                plan.warnings.push_back(PlanWarning{PlanWarningKind::timer_at_deadline, i, timer, value, false});
            }
        }
        const bool last = i + 1 == plan.candidates.size();
        if (route.first_token_timeout_ms > 0 && (last || !on_timeout) &&
            !has_warning(plan, PlanWarningKind::first_token_never_applies, r, "first_token_timeout_ms", last)) {
            plan.warnings.push_back(PlanWarning{PlanWarningKind::first_token_never_applies, i,
                                                "first_token_timeout_ms", route.first_token_timeout_ms, last});
        }
    }
    // Every earlier candidate taking attempts_per_candidate attempts: the
    // first candidate the turn's attempts never reach.
    const std::int64_t per = plan.policy->attempts_per_candidate;
    const std::size_t unreached = static_cast<std::size_t>((plan.max_attempts + per - 1) / per);
    if (unreached < plan.candidates.size()) {
        plan.warnings.push_back(PlanWarning{PlanWarningKind::attempts_run_out, unreached, "", 0, false});
    }
}

void fill_bounds(const Config& config, ModelPlan& plan) {
    const Route& first = config.routes[plan.candidates.front().route];
    plan.deadline_route = first.name;
    plan.deadline_ms = first.timeout_ms;
    plan.max_attempts = first.retry.max_attempts;
    plan.worst_case_ms = first.timeout_ms;
    if (plan.candidates.size() > 1) {
        reach_last(config, plan, first.retry);
    }
    add_warnings(config, plan);
}

std::string candidate_text(const ModelPlan& plan, std::size_t i) {
    return "candidate " + std::to_string(i) + " (route " + plan.candidates[i].route_name + ")";
}

}  // namespace

ModelPlan model_plan(const Config& config, std::string_view name) {
    ModelPlan plan;
    plan.model = std::string(name);
    plan.policy = &model_policy(config, name);
    plan.has_entry = !plan.policy->name.empty();
    add_deployments(config, name, false, plan.candidates);
    if (plan.candidates.empty()) {
        return plan;
    }
    for (const std::string& fallback : plan.policy->fallbacks) {
        add_deployments(config, fallback, true, plan.candidates);
    }
    fill_bounds(config, plan);
    return plan;
}

std::vector<ModelPlan> model_plans(const Config& config) {
    std::vector<ModelPlan> plans;
    std::vector<std::string_view> seen;
    for (const Route& route : config.routes) {
        for (const Model& model : route.models) {
            if (std::find(seen.begin(), seen.end(), model.name) != seen.end()) continue;
            seen.push_back(model.name);
            ModelPlan plan = model_plan(config, model.name);
            if (plan.candidates.size() > 1 || plan.has_entry || !plan.warnings.empty()) {
                plans.push_back(std::move(plan));
            }
        }
    }
    for (std::size_t r = 0; r < config.routes.size(); ++r) {
        if (!config.routes[r].wildcard) continue;
        // The catch-all: one candidate, the requested name forwarded as is,
        // no models entry (one may name only models listed by name).
        ModelPlan plan;
        plan.model = "*";
        plan.policy = &model_policy(config, "");
        plan.candidates.push_back(PlanCandidate{r, config.routes[r].name, "", "*", false});
        fill_bounds(config, plan);
        if (!plan.warnings.empty()) plans.push_back(std::move(plan));
    }
    return plans;
}

std::string fallback_on_text(const policy::FallbackOn& on) {
    std::string text;
    for (const policy::ErrorClass cls : on.classes) {
        text += text.empty() ? "" : ", ";
        text += policy::to_string(cls);
    }
    for (const std::string& code : on.codes) {
        text += text.empty() ? "" : ", ";
        text += "code:" + code;
    }
    return text.empty() ? "(none: never falls over)" : text;
}

std::vector<std::string> render_model_plan(const ModelPlan& plan) {
    const ModelPolicy& policy = *plan.policy;
    const std::size_t n = plan.candidates.size();
    std::vector<std::string> lines;
    lines.push_back("model " + plan.model + ": " + std::to_string(n) + (n == 1 ? " candidate" : " candidates") +
                    ", balance " + (policy.balance == policy::Balance::ordered ? "ordered" : "weighted") + ", " +
                    std::to_string(policy.attempts_per_candidate) + " attempts per candidate");
    lines.push_back("  fallback_on: " + fallback_on_text(policy.fallback_on));
    for (std::size_t i = 0; i < n; ++i) {
        const PlanCandidate& c = plan.candidates[i];
        std::string line = "  candidate " + std::to_string(i) + ": route " + c.route_name + ", upstream model " +
                           (c.upstream_model.empty() ? "(the requested name)" : c.upstream_model);
        if (c.fallback) line += " (fallback " + c.model + ")";
        lines.push_back(std::move(line));
    }
    lines.push_back("  turn bounds from route " + plan.deadline_route + " (the first deployment): timeout_ms " +
                    std::to_string(plan.deadline_ms) + ", max_attempts " + std::to_string(plan.max_attempts));
    lines.push_back("  worst case, through every candidate: " + std::to_string(plan.worst_case_ms) +
                    " ms (the turn deadline)");
    if (n > 1 && plan.reach_last_ms) {
        const std::string last = std::to_string(n - 1);
        lines.push_back(*plan.reach_last_ms < plan.deadline_ms
                            ? "  a stream turn reaches candidate " + last + " within " +
                                  std::to_string(*plan.reach_last_ms) + " ms when every earlier candidate hangs"
                            : "  a stream turn whose earlier candidates hang may meet the deadline before candidate " +
                                  last + " (" + std::to_string(*plan.reach_last_ms) + " ms)");
    } else if (n > 1) {
        lines.push_back("  a hang on candidate " + std::to_string(plan.hang_candidate) +
                        " keeps a stream turn from later candidates until the deadline: " + plan.hang_why);
    }
    return lines;
}

std::string render_plan_warning(const ModelPlan& plan, const PlanWarning& w) {
    std::string line = "warning: model " + plan.model + ": ";
    switch (w.kind) {
        case PlanWarningKind::timer_at_deadline:
            line += w.timer + " " + std::to_string(w.value_ms) + " of " + candidate_text(plan, w.candidate) +
                    " is at or above the turn deadline (timeout_ms " + std::to_string(plan.deadline_ms) +
                    " of route " + plan.deadline_route + "): ";
            line += w.timer == "stream_idle_timeout_ms" ? "it can fire only once a stream publishes"
                                                        : "it can never fire";
            break;
        case PlanWarningKind::first_token_never_applies:
            line += "first_token_timeout_ms " + std::to_string(w.value_ms) + " of " +
                    candidate_text(plan, w.candidate) + " never applies: " +
                    (w.no_later_candidate ? "no later candidate" : "timeout is not in fallback_on");
            break;
        case PlanWarningKind::attempts_run_out:
            line += "max_attempts " + std::to_string(plan.max_attempts) + " (route " + plan.deadline_route +
                    ") ends a turn before candidate " + std::to_string(w.candidate) +
                    " when each earlier candidate takes its " +
                    std::to_string(plan.policy->attempts_per_candidate) + " attempts";
            break;
    }
    return line;
}

}  // namespace modelproxy::config
