// A turn's candidates (docs/behaviour.md section 13): which deployment a turn
// starts on, which failures fall over to the next candidate, and the
// cooldown after a 429. Pure values: the caller passes what it knows of each
// candidate now (usable, turns in flight) and keeps the round-robin state.
#pragma once

#include "policy/error_class.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::policy {

// models[].balance.
enum class Balance { ordered, weighted };

// One deployment of the requested model, as the start choice sees it.
struct DeploymentView {
    bool usable = true;   // breaker lets a turn through, not cooling down, admitted (section 13)
    int inflight = 0;     // turns in flight on it now
    int weight = 1;       // routes[].weight (1..1000)
};

// The deployment (index into `deployments`) a turn starts on:
//   ordered:  the first usable one;
//   weighted: among the usable ones, the fewest turns in flight per unit of
//             weight (inflight / weight, compared exactly), ties broken by
//             smooth weighted round-robin over `current` (one entry per
//             deployment, kept by the caller between turns, zero at first):
//             each tied deployment's entry grows by its weight, the largest
//             wins (the first on a tie) and gives back the tied weights' sum.
// nullopt when none is usable.
std::optional<std::size_t> pick_start(std::span<const DeploymentView> deployments, Balance balance,
                                      std::span<std::int64_t> current);

// models[].fallback_on: error classes, and `code:<X>` entries that match a
// provider error whose `code` is X (else, without a code, whose `type` is X).
struct FallbackOn {
    std::vector<ErrorClass> classes{ErrorClass::network, ErrorClass::timeout, ErrorClass::server,
                                    ErrorClass::rate_limit, ErrorClass::stream_incomplete};
    std::vector<std::string> codes;  // the X of each `code:X`, in file order

    // `code` and `type`: the provider error's, "" when none.
    bool matches(ErrorClass cls, std::string_view code, std::string_view type) const;
    bool has(ErrorClass cls) const;
};

// What happens after a failed attempt on candidate C, nothing published, on
// an endpoint whose failures are replayed (section 4).
enum class Move {
    fall_over,     // to the next usable candidate, at once (decision `fallback`)
    replay_here,   // section 6 decides on C (its wait, its bounds)
};

struct FallOverFacts {
    ErrorClass cls = ErrorClass::network;
    bool retryable = false;              // section 5 replays the class on this endpoint
    bool http_429 = false;               // an HTTP 429 status line
    TimeoutSource timeout_source = TimeoutSource::none;
    std::string_view code;               // the provider error's code, "" when none
    std::string_view type;               // its type, "" when none
    bool later_usable = false;           // a later candidate in the turn's list is usable now
    int attempts_on_candidate = 1;       // attempts C has had in this turn, this one included
    int attempts_per_candidate = 2;      // models[].attempts_per_candidate
};

// Section 13's rule: when the failure matches `fallback_on` and a later
// usable candidate exists, a class section 5 does not replay, a 429, and a
// first-byte or first-token timeout fall over at once; any other replayable
// failure replays on C while C has had fewer than attempts_per_candidate
// attempts, then falls over. Otherwise section 6 decides on C.
Move fall_over(const FallOverFacts& facts, const FallbackOn& on);

// The cooldown after a 429 on C: new turns skip C until this time, while a
// later usable candidate exists: the answer's Retry-After (`retry_after_ms`,
// parsed; 0 for a past date), else 1 s.
inline std::int64_t cooldown_ms(std::optional<std::int64_t> retry_after_ms) {
    if (!retry_after_ms) return 1000;
    return *retry_after_ms > 0 ? *retry_after_ms : 0;
}

}  // namespace modelproxy::policy
