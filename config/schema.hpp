// The schema of docs/behaviour.md section 3 as one table: every key the loader accepts,
// its default, its range and its meaning. The loader takes its integer ranges
// and the set of keys each map may hold from here, and docs/configuration.md is
// generated from the same rows, so documentation and validation cannot drift.
// Internal to config/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::config::detail {

enum class Unit { count, bytes, ms };

struct IntRange {
    std::int64_t min = 0;
    std::int64_t max = 0;
    Unit unit = Unit::count;
    bool zero_is_off = false;   // 0 is accepted below `min` and means `zero_means`
    const char* zero_means = "off";
};

// A decimal key's range, in millionths (the loader reads at most six
// digits after the point): 0.01..1 is {10000, 1000000}.
struct DecimalRange {
    std::int64_t min_micro = 0;
    std::int64_t max_micro = 0;
};
inline constexpr std::int64_t micro = 1000000;

struct KeySpec {
    std::string path;                 // `routes[].models[].accept`
    std::string default_value;        // as the reference shows it
    std::optional<IntRange> integer;  // set for integer keys
    std::optional<DecimalRange> decimal;  // set for decimal keys
    std::string range;                // allowed values in words (integers: generated)
    std::string description;
};

const std::vector<KeySpec>& key_specs();

// Row builders. Defaults are shown with their unit ("300000 (5 min)"), and
// 0 as `zero_meaning` when given ("0 (off)"); ranges are generated.
KeySpec integer_key(std::string path, std::int64_t default_value, IntRange range, std::string description,
                    const char* zero_meaning = nullptr);
// An integer key whose range has a bound set by another key: `also` names it
// after the table's range ("at most the route's timeout_ms").
KeySpec bounded_key(std::string path, std::int64_t default_value, IntRange range, std::string_view also,
                    std::string description, const char* zero_meaning = nullptr);
KeySpec decimal_key(std::string path, std::int64_t default_micro, DecimalRange range, std::string description);
KeySpec other_key(std::string path, std::string default_value, std::string range, std::string description);

// The rows of docs/behaviour.md section 15 (config/schema_fleet.cpp): the
// `fleet` block, and a route's `quota`.
std::vector<KeySpec> fleet_specs();
std::vector<KeySpec> quota_specs();

// The rows of docs/behaviour.md section 16 (config/schema_resume.cpp): a
// route's `resume`.
std::vector<KeySpec> resume_specs();

// The integer range of a schema path. A path that is not an integer key of the
// table is a programming error: it aborts, so a loader reading a key the
// schema does not document fails every test that loads a config.
const IntRange& integer_range(std::string_view path);
// The same for a decimal key.
const DecimalRange& decimal_range(std::string_view path);

// The keys a map at `prefix` may hold: the first segment after "prefix." of
// every schema path below it ("" is the document itself).
bool is_schema_child(std::string_view prefix, std::string_view key);
std::vector<std::string> schema_children(std::string_view prefix);

// "1..16", "1024..4294967296 (1 KiB..4 GiB)", "0 (off) or 10..86400000 (10 ms..24 h)".
std::string describe_range(const IntRange& range);

// "must be 1..16, got 40".
std::string range_violation(const IntRange& range, std::string_view got);

// "0.01..1"; a millionth count as a decimal ("0.5", "1").
std::string describe_range(const DecimalRange& range);
std::string decimal_text(std::int64_t value_micro);

}  // namespace modelproxy::config::detail
