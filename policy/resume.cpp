#include "policy/resume.hpp"

namespace modelproxy::policy {

std::optional<std::size_t> resume_target(const ResumeFacts& f) {
    if (!f.readable || !f.one_choice || f.published == 0) return std::nullopt;
    if (f.published > static_cast<std::uint64_t>(f.max_offset) || f.tries >= f.max_resumes) return std::nullopt;
    if (!f.bounds_allow || f.current >= f.candidates.size()) return std::nullopt;
    const bool attempts_left = !f.per_candidate || f.attempts_on_current < f.attempts_per_candidate;
    if (attempts_left && f.candidates[f.current].breaker_usable) return f.current;
    for (std::size_t i = f.current + 1; i < f.candidates.size(); ++i)
        if (f.candidates[i].same_model && f.candidates[i].usable) return i;
    return std::nullopt;
}

}  // namespace modelproxy::policy
