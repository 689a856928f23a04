#include "policy/candidates.hpp"

#include <algorithm>

namespace modelproxy::policy {
namespace {

// routes[].weight is 1..1000; a weight below 1 would make inflight / weight
// meaningless, so it is read as 1.
std::int64_t weight_of(const DeploymentView& d) { return std::max(1, d.weight); }

// a.inflight / a.weight < b.inflight / b.weight, exactly: cross-multiplied in
// 64 bits (inflight is an int, weight at most an int).
bool fewer_per_weight(const DeploymentView& a, const DeploymentView& b) {
    return std::int64_t{a.inflight} * weight_of(b) < std::int64_t{b.inflight} * weight_of(a);
}

bool same_per_weight(const DeploymentView& a, const DeploymentView& b) {
    return std::int64_t{a.inflight} * weight_of(b) == std::int64_t{b.inflight} * weight_of(a);
}

std::optional<std::size_t> pick_weighted(std::span<const DeploymentView> deployments,
                                         std::span<std::int64_t> current) {
    std::optional<std::size_t> least;
    for (std::size_t i = 0; i < deployments.size(); ++i) {
        if (!deployments[i].usable) continue;
        if (!least || fewer_per_weight(deployments[i], deployments[*least])) least = i;
    }
    if (!least) return std::nullopt;
    // Without one round-robin entry per deployment there is nothing to
    // rotate: the first of the least loaded.
    if (current.size() < deployments.size()) return least;

    // Smooth weighted round-robin among the tied: each grows by its weight,
    // the largest wins (the first on a tie) and gives back the tied sum.
    const DeploymentView& best = deployments[*least];
    std::int64_t tied_sum = 0;
    std::optional<std::size_t> winner;
    for (std::size_t i = 0; i < deployments.size(); ++i) {
        const DeploymentView& d = deployments[i];
        if (!d.usable || !same_per_weight(d, best)) continue;
        current[i] += weight_of(d);
        tied_sum += weight_of(d);
        if (!winner || current[i] > current[*winner]) winner = i;
    }
    current[*winner] -= tied_sum;
    return winner;
}

}  // namespace

std::optional<std::size_t> pick_start(std::span<const DeploymentView> deployments, Balance balance,
                                      std::span<std::int64_t> current) {
    switch (balance) {
        case Balance::ordered:
            for (std::size_t i = 0; i < deployments.size(); ++i) {
                if (deployments[i].usable) return i;
            }
            return std::nullopt;
        case Balance::weighted:
            return pick_weighted(deployments, current);
    }
    return std::nullopt;
}

bool FallbackOn::has(ErrorClass cls) const {
    return std::find(classes.begin(), classes.end(), cls) != classes.end();
}

bool FallbackOn::matches(ErrorClass cls, std::string_view code, std::string_view type) const {
    if (has(cls)) return true;
    // `code:X` names the error's code; the type stands in only for an error
    // that has no code.
    const std::string_view name = code.empty() ? type : code;
    if (name.empty()) return false;
    return std::find(codes.begin(), codes.end(), name) != codes.end();
}

Move fall_over(const FallOverFacts& facts, const FallbackOn& on) {
    if (!facts.later_usable || !on.matches(facts.cls, facts.code, facts.type)) return Move::replay_here;
    // Replaying here could not help (a class section 5 does not replay), or
    // the provider said so (429), or a timer said it is slow to start.
    if (!facts.retryable || facts.http_429) return Move::fall_over;
    if (facts.timeout_source == TimeoutSource::first_byte ||
        facts.timeout_source == TimeoutSource::first_token) {
        return Move::fall_over;
    }
    return facts.attempts_on_candidate < facts.attempts_per_candidate ? Move::replay_here
                                                                      : Move::fall_over;
}

}  // namespace modelproxy::policy
