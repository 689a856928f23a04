// Whether a stream cut after publication is continued (docs/behaviour.md
// section 16), and on which candidate, as a pure function of the facts the
// turn gathers at the break: what was published, the route's resume block,
// the turn's bounds and its candidates as they stand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace modelproxy::policy {

// One candidate of the turn's list, at the break.
struct ResumeCandidate {
    bool same_model = false;      // a deployment of the client model that published (never a fallback's)
    bool usable = false;          // usable for a turn's first attempt (breaker, cooldown, hold, admission)
    bool breaker_usable = false;  // its breaker lets an attempt through
};

struct ResumeFacts {
    bool readable = false;        // the stream was read for a resume throughout (endpoint, one choice,
                                  // temperature 0 or a seed where required, every line read)
    bool one_choice = true;       // the published lines named no other choice
    std::uint64_t published = 0;  // answer text published, in code points
    std::int64_t max_offset = 0;
    int tries = 0;                // resumes this turn already decided
    int max_resumes = 0;
    bool bounds_allow = false;    // one more attempt fits the turn's bounds now, sent at once
    bool per_candidate = false;   // the model has a `models` entry: attempts_per_candidate bounds a candidate
    int attempts_on_current = 0;
    int attempts_per_candidate = 0;
    std::size_t current = 0;
    std::span<const ResumeCandidate> candidates;  // the turn's list, in order
};

// The candidate the resume's attempt goes to: the current one while it has
// attempts left and its breaker lets it through, else the next usable
// deployment of the same client model after it; nullopt when a rule rules
// the resume out (skipped).
std::optional<std::size_t> resume_target(const ResumeFacts& facts);

}  // namespace modelproxy::policy
