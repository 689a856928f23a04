// The load simulation's rows: one proxy config each, written in the YAML of
// docs/behaviour.md sections 3 and 14. Every row has the same one route to
// the fake provider, with section 6's retry bounds at their defaults and
// timeout_ms 60000 (unscaled: the proxy's own times are what is measured),
// so the rows differ only in what section 14 adds:
//   "v1": the budget effectively off (budget_min_concurrency 10000), admission off;
//   "budget": section 14's defaults, written out (budget on, admission off);
//   "budget+admission": admission on, honour_ratelimit_headers false;
//   "budget+admission+pacing": admission on, honour_ratelimit_headers true.
// Every row names a section 14 key, so a binary without them refuses each;
// the v1 row can then be written without the keys that binary refuses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace modelproxy::load {

enum class RowKind { v1, budget, admission, pacing };

struct RowSettings {
    std::uint16_t provider_port = 0;
    bool budget_keys = true;     // false: leave retry's budget keys out (v1 on a binary without them)
    bool admission_keys = true;  // false: leave the admission block out (the same)
};

inline constexpr long kTurnTimeoutMs = 60000;  // routes[].timeout_ms
inline constexpr std::string_view kModel = "gpt-4o";
inline constexpr std::string_view kRoute = "provider";

inline std::string_view to_string(RowKind r) {
    switch (r) {
        case RowKind::v1: return "v1";
        case RowKind::budget: return "budget";
        case RowKind::admission: return "budget+admission";
        case RowKind::pacing: return "budget+admission+pacing";
    }
    return "?";
}

// The name --rows takes and the row's files are named by.
inline std::string_view slug(RowKind r) {
    switch (r) {
        case RowKind::v1: return "v1";
        case RowKind::budget: return "budget";
        case RowKind::admission: return "admission";
        case RowKind::pacing: return "pacing";
    }
    return "row";
}

std::string row_config(RowKind row, const RowSettings& settings);

}  // namespace modelproxy::load
