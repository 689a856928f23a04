#include "load/rows.hpp"

#include <catch2/catch.hpp>

using namespace modelproxy::load;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("each row's config differs from the others only in section 14's keys", "[load]") {
    struct Case {
        RowKind row;
        std::vector<std::string> present, absent;
    };
    const std::vector<Case> cases{
        {RowKind::v1, {"  budget_min_concurrency: 10000\n", "admission:\n  enabled: false\n"},
         {"budget_ratio", "honour_ratelimit_headers"}},
        {RowKind::budget, {"  budget_ratio: 0.2\n  budget_min_concurrency: 3\n", "admission:\n  enabled: false\n"},
         {"honour_ratelimit_headers"}},
        {RowKind::admission, {"  budget_min_concurrency: 3\n", "  enabled: true\n  honour_ratelimit_headers: false\n"},
         {}},
        {RowKind::pacing, {"  budget_min_concurrency: 3\n", "  enabled: true\n  honour_ratelimit_headers: true\n"}, {}},
    };
    for (const auto& c : cases) {
        CAPTURE(to_string(c.row));
        const std::string y = row_config(c.row, {.provider_port = 4321});
        CHECK(has(y, "    upstream: http://127.0.0.1:4321/v1\n    timeout_ms: 60000\n    models: [gpt-4o]\n"));
        CHECK_FALSE(has(y, "max_attempts"));  // section 6's bounds stay at their defaults
        for (const auto& p : c.present) CHECK(has(y, p));
        for (const auto& a : c.absent) CHECK_FALSE(has(y, a));
    }
}

TEST_CASE("the v1 row leaves out only the section 14 keys a binary refuses", "[load]") {
    const std::string both = row_config(RowKind::v1, {.provider_port = 1, .budget_keys = false, .admission_keys = false});
    CHECK_FALSE(has(both, "retry:"));
    CHECK_FALSE(has(both, "admission:"));
    const std::string no_admission = row_config(RowKind::v1, {.provider_port = 1, .admission_keys = false});
    CHECK(has(no_admission, "budget_min_concurrency: 10000"));
    CHECK_FALSE(has(no_admission, "admission:"));
}
