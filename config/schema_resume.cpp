// The schema rows of docs/behaviour.md section 16: a route's `resume` block.
#include "config/schema.hpp"

#include "config/config.hpp"

namespace modelproxy::config::detail {
namespace {

// Each resume replays the request once more inside the turn's deadline and
// retry bounds; three is past any useful count and keeps a flapping provider
// from being asked again and again for one answer.
constexpr IntRange resumes_per_turn{1, 3, Unit::count};
// Code points of published answer text a resume may have to reproduce before
// it forwards anything; the upper end catches a misplaced digit.
constexpr IntRange resume_offset{1, 1000000, Unit::count};

}  // namespace

std::vector<KeySpec> resume_specs() {
    const Resume resume;
    return {
        other_key("routes[].resume.enabled", resume.enabled ? "true" : "false", "true or false",
                  "true: a stream of this route cut after answer text was published is continued by one more "
                  "attempt on a deployment of the same model, forwarded only past the text already published "
                  "(docs/behaviour.md section 16)"),
        integer_key("routes[].resume.max_resumes", resume.max_resumes, resumes_per_turn,
                    "resumes at most per turn"),
        integer_key("routes[].resume.max_offset", resume.max_offset, resume_offset,
                    "the longest published answer text, in Unicode code points, a resume may catch up; a stream "
                    "cut later ends with the closing error event"),
        other_key("routes[].resume.only_deterministic", resume.only_deterministic ? "true" : "false",
                  "true or false",
                  "true: only a request that sets temperature 0 or a seed is resumed"),
    };
}

}  // namespace modelproxy::config::detail
