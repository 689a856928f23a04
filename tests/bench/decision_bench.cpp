// Micro-benchmark of the replay decision (docs/behaviour.md sections 5 and 6,
// policy/decision.hpp): what the turn loop computes after each failed
// attempt. Not built by default; one of the micro_benchmarks target
// (tests/bench/CMakeLists.txt):
//
//   cmake --build BUILD --target decision_bench && BUILD/tests/bench/decision_bench [decisions]
//
// Prints ns per decision for policy::decide on its main rows (backoff, a 429
// with Retry-After under full jitter, terminal, exhausted, deadline), and for
// the whole step from an observed answer: classify + failure_of + decide.
#include "policy/classify.hpp"
#include "policy/decision.hpp"
#include "tests/bench/bench.hpp"

#include <cstdio>

using namespace modelproxy::policy;
using modelproxy::bench::keep;
using modelproxy::bench::ns_per_op;
using modelproxy::bench::print;

int main(int argc, char** argv) {
    const std::size_t decisions = modelproxy::bench::ops_from(argc, argv, 2'000'000);
    RetryConfig config;
    RetryConfig jittered;
    jittered.jitter = Jitter::full;
    const Failure server{ErrorClass::server, true, TimeoutSource::none, 503, std::nullopt};
    const Failure throttled{ErrorClass::rate_limit, true, TimeoutSource::none, 429, 2000};
    const Failure bad_request{ErrorClass::invalid_request, false, TimeoutSource::none, 400, std::nullopt};

    // The rows must decide what they are named after, or the figures mean nothing.
    if (decide({1, 0}, server, config, 300000, 0.5).verdict != Verdict::retry ||
        decide({8, 31500}, server, config, 300000, 0.5).verdict != Verdict::exhausted ||
        decide({1, 0}, server, config, 900, 0.5).verdict != Verdict::deadline ||
        decide({1, 0}, bad_request, config, 300000, 0.5).verdict != Verdict::terminal) {
        std::fprintf(stderr, "decision_bench: a row does not decide what it is named after\n");
        return 1;
    }
    std::printf("decisions per run: %zu\n", decisions);
    // The attempt count and draw vary with i, as they do over a turn.
    print("decide: 503, backoff (attempt 1..7)", ns_per_op(decisions, [&](std::size_t i) {
        keep(decide({static_cast<int>(i % 7) + 1, 0}, server, config, 300000, 0.5));
    }));
    print("decide: 429 + Retry-After, full jitter", ns_per_op(decisions, [&](std::size_t i) {
        keep(decide({static_cast<int>(i % 20) + 1, 0}, throttled, jittered, 300000,
                    static_cast<double>(i % 1000) / 1000.0));
    }));
    print("decide: 400, terminal", ns_per_op(decisions, [&](std::size_t) {
        keep(decide({1, 0}, bad_request, config, 300000, 0.5));
    }));
    print("decide: attempts bound, exhausted", ns_per_op(decisions, [&](std::size_t) {
        keep(decide({8, 31500}, server, config, 300000, 0.5));
    }));
    print("decide: too little time left, deadline", ns_per_op(decisions, [&](std::size_t) {
        keep(decide({1, 0}, server, config, 900, 0.5));
    }));
    const ProviderError no_body;
    print("classify_http(503) + failure_of + decide", ns_per_op(decisions, [&](std::size_t i) {
        const Classification c = classify_http(503, no_body, Endpoint::chat_completions);
        keep(decide({static_cast<int>(i % 7) + 1, 0}, failure_of(c, 503), config, 300000, 0.5));
    }));
    print("classify_transport(dropped) + failure_of + decide", ns_per_op(decisions, [&](std::size_t i) {
        const Classification c = classify_transport(Transport::dropped_before_head, Endpoint::chat_completions);
        keep(decide({static_cast<int>(i % 7) + 1, 0}, failure_of(c, 0), config, 300000, 0.5));
    }));
    return 0;
}
