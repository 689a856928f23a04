// What a config implies for the turns of one client model (docs/behaviour.md
// section 13), as `modelproxy doctor` prints it: the candidate list in
// config order, the bounds of a turn, its worst case, how soon a stream turn
// gets past candidates that hang, and warnings where a timer can never act.
// Pure: a function of the loaded Config.
#pragma once

#include "config/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::config {

// One candidate: a deployment of the requested model or of a fallback.
struct PlanCandidate {
    std::size_t route = 0;          // index into Config::routes
    std::string route_name;
    std::string upstream_model;     // "" on the "*" route: the requested name, unchanged
    std::string model;              // the client model it is a deployment of
    bool fallback = false;          // a deployment of a fallback, not of the requested model
};

enum class PlanWarningKind {
    timer_at_deadline,           // a timer at or above the turn deadline
    first_token_never_applies,   // no later candidate, or `timeout` not in fallback_on
    attempts_run_out,            // max_attempts ends a turn before its last candidate
};

struct PlanWarning {
    PlanWarningKind kind = PlanWarningKind::timer_at_deadline;
    std::size_t candidate = 0;      // the first candidate it concerns
    std::string timer;              // "first_byte_timeout_ms", "first_token_timeout_ms", "stream_idle_timeout_ms"
    std::int64_t value_ms = 0;      // the timer's value
    bool no_later_candidate = false;  // first_token_never_applies: why (else `timeout` not in fallback_on)
    friend bool operator==(const PlanWarning&, const PlanWarning&) = default;
};

struct ModelPlan {
    std::string model;              // the client model name; "*" for the catch-all route
    bool has_entry = false;         // the `models` block names it
    const ModelPolicy* policy = nullptr;  // its entry, or the defaults
    std::vector<PlanCandidate> candidates;
    // The turn's bounds: those of the requested model's first deployment.
    std::string deadline_route;
    std::int64_t deadline_ms = 0;   // its timeout_ms
    int max_attempts = 0;           // its retry.max_attempts
    // Every turn ends, or starts publishing, within the deadline however many
    // candidates it falls through: the worst case is the deadline.
    std::int64_t worst_case_ms = 0;
    // With more than one candidate: the longest a stream turn can take to
    // start its first attempt on the last candidate when every earlier one
    // hangs, or nullopt when a hang on `hang_candidate` holds it until the
    // deadline (`hang_why` says which timer is missing). Formula in
    // docs/configuration.md.
    std::optional<std::int64_t> reach_last_ms;
    std::size_t hang_candidate = 0;
    std::string hang_why;
    std::vector<PlanWarning> warnings;
};

// The plan of every client model that has more than one candidate, a
// `models` entry or a warning, in the order routes first list them, then the
// "*" route's (model "*") when it has a warning.
std::vector<ModelPlan> model_plans(const Config& config);

// The plan of one client model listed by name (empty candidates when none is).
ModelPlan model_plan(const Config& config, std::string_view name);

// Human lines for stdout, e.g.
//   model gpt-4o: 3 candidates, balance ordered, 2 attempts per candidate
//     fallback_on: network, timeout, server, rate-limit, stream-incomplete
//     candidate 0: route azure-east, upstream model gpt-4o
//     candidate 1: route openai, upstream model gpt-4o
//     candidate 2: route openai, upstream model gpt-4o-mini (fallback gpt-4o-mini)
//     turn bounds from route azure-east (the first deployment): timeout_ms 300000, max_attempts 8
//     worst case, through every candidate: 300000 ms (the turn deadline)
//     a stream turn reaches candidate 2 within 24000 ms when every earlier candidate hangs
std::vector<std::string> render_model_plan(const ModelPlan& plan);

// One stderr line per warning: "warning: model gpt-4o: ...".
std::string render_plan_warning(const ModelPlan& plan, const PlanWarning& warning);

// "network, timeout, code:context_length_exceeded"; "(none: never falls over)" when empty.
std::string fallback_on_text(const policy::FallbackOn& on);

}  // namespace modelproxy::config
