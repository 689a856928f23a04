// Counters the soak's clients keep on their own and merge at the end: turn
// durations in a log-scale histogram (2 % wide buckets from 10 us, so memory
// stays fixed however long the run), outcome counts by label, and the first
// few wrong outcomes in full.
#pragma once

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace modelproxy::soak {

class Histogram {
public:
    void add(std::chrono::steady_clock::duration d) {
        const double us = std::max(1.0, std::chrono::duration<double, std::micro>(d).count());
        const double index = std::log(std::max(us / floor_us, 1.0)) / std::log(growth);
        ++buckets_[std::min<std::size_t>(static_cast<std::size_t>(index), buckets_.size() - 1)];
        ++count_;
    }
    void merge(const Histogram& other) {
        for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
        count_ += other.count_;
    }
    std::uint64_t count() const { return count_; }
    // The upper edge of the bucket holding quantile q, in milliseconds.
    double quantile_ms(double q) const {
        if (count_ == 0) return 0;
        const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < buckets_.size(); ++i) {
            seen += buckets_[i];
            if (seen >= std::max<std::uint64_t>(rank, 1)) return floor_us * std::pow(growth, double(i + 1)) / 1000.0;
        }
        return floor_us * std::pow(growth, double(buckets_.size())) / 1000.0;
    }

private:
    static constexpr double floor_us = 10.0;
    static constexpr double growth = 1.02;
    std::array<std::uint64_t, 1024> buckets_{};  // up to 10 us * 1.02^1024, ~6.4e9 s
    std::uint64_t count_ = 0;
};

struct Wrong {
    std::uint64_t turn = 0;
    std::string what;  // case, plan, expected vs got
};

// A turn the records must show resumed (docs/behaviour.md section 16): its
// turn record's `resumed`, and the resume_offset of its attempts (-1: none
// has one); every other turn's records show no resume.
struct ResumeTurn {
    std::uint64_t turn = 0;
    int resumed = 0;
    std::int64_t offset = -1;
    bool operator<(const ResumeTurn& o) const { return turn < o.turn; }
};

struct ClientStats {
    Histogram durations;
    std::map<std::string, std::uint64_t> outcomes;  // label -> turns
    std::uint64_t turns = 0;
    std::uint64_t stream_turns = 0;
    std::uint64_t wrong = 0;
    std::uint64_t crosstalk = 0;      // turns whose response held another turn's id
    std::uint64_t attempts = 0;       // sum of x-modelproxy-attempts
    std::vector<Wrong> first_wrong;   // at most a few
    std::vector<std::uint64_t> wrong_turns;
    std::vector<std::uint64_t> successes;  // turn numbers answered with the success bytes
    std::vector<ResumeTurn> resume_turns;  // resume cases' turns answered as predicted

    void merge(const ClientStats& other) {
        durations.merge(other.durations);
        for (const auto& [label, n] : other.outcomes) outcomes[label] += n;
        turns += other.turns;
        stream_turns += other.stream_turns;
        wrong += other.wrong;
        crosstalk += other.crosstalk;
        attempts += other.attempts;
        for (const auto& w : other.first_wrong)
            if (first_wrong.size() < 10) first_wrong.push_back(w);
        successes.insert(successes.end(), other.successes.begin(), other.successes.end());
        wrong_turns.insert(wrong_turns.end(), other.wrong_turns.begin(), other.wrong_turns.end());
        resume_turns.insert(resume_turns.end(), other.resume_turns.begin(), other.resume_turns.end());
    }
};

}  // namespace modelproxy::soak
