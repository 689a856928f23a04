// A tiny timing harness for the micro-benchmarks in tests/bench/ (plain
// chrono-style loops, no framework): each case runs its loop several times
// and reports the median time per operation with the min-max spread, so one
// run slowed by a neighbour on a shared machine does not decide the figure.
//
// Times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a loaded
// machine a preempted run does not count the time it was not running.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string_view>
#include <vector>

namespace modelproxy::bench {

// Keeps the compiler from discarding a value it can see is unused.
template <class T>
inline void keep(const T& value) {
    asm volatile("" : : "g"(&value) : "memory");
}

inline double thread_cpu_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

struct Figure {
    double median = 0;
    double min = 0;
    double max = 0;
};

// Runs f(i) for i in [0, ops) `runs` times (after one untimed warm-up run)
// and returns ns per op: the median run and the spread.
template <class F>
Figure ns_per_op(std::size_t ops, F&& f, int runs = 7) {
    for (std::size_t i = 0; i < ops; ++i) f(i);
    std::vector<double> per_op;
    for (int run = 0; run < runs; ++run) {
        const double start = thread_cpu_ns();
        for (std::size_t i = 0; i < ops; ++i) f(i);
        per_op.push_back((thread_cpu_ns() - start) / static_cast<double>(ops));
    }
    std::sort(per_op.begin(), per_op.end());
    return {per_op[per_op.size() / 2], per_op.front(), per_op.back()};
}

// One aligned line: "name   median unit  (min-max)".
inline void print(std::string_view name, const Figure& f, std::string_view unit = "ns/op") {
    std::printf("%-58.*s %9.1f %.*s  (%.1f-%.1f)\n", static_cast<int>(name.size()), name.data(), f.median,
                static_cast<int>(unit.size()), unit.data(), f.min, f.max);
}

// The iteration count: argv[1] when given, else `fallback`.
inline std::size_t ops_from(int argc, char** argv, std::size_t fallback) {
    if (argc < 2) return fallback;
    const long long n = std::atoll(argv[1]);
    return n > 0 ? static_cast<std::size_t>(n) : fallback;
}

}  // namespace modelproxy::bench
