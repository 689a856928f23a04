#include "config/yaml_reader.hpp"

#include "config/schema.hpp"
#include "policy/decimal.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace modelproxy::config::detail {
namespace {

// yaml-cpp tags a plain (unquoted, untagged) scalar "?"; only those can be
// integers or booleans. "8" in quotes is a string, as YAML says.
bool is_plain_scalar(const YAML::Node& node) {
    return node.IsScalar() && node.Tag() == "?";
}

enum class Number { ok, not_a_number, too_large };

// Decimal only, optional sign; no hex, octal, exponent or separators.
Number parse_decimal(std::string_view text, std::int64_t& out) {
    bool negative = false;
    if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
        negative = text.front() == '-';
        text.remove_prefix(1);
    }
    if (text.empty()) {
        return Number::not_a_number;
    }
    std::int64_t value = 0;
    bool overflow = false;
    for (char c : text) {
        if (c < '0' || c > '9') {
            return Number::not_a_number;
        }
        const int digit = c - '0';
        if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) {
            overflow = true;
        } else {
            value = value * 10 + digit;
        }
    }
    if (overflow) {
        return Number::too_large;
    }
    out = negative ? -value : value;
    return Number::ok;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string unknown_key_why(std::string_view schema_prefix, std::string_view key) {
    std::string best;
    std::size_t best_distance = 3;  // suggest only close typos
    for (const std::string& child : schema_children(schema_prefix)) {
        const std::size_t distance = edit_distance(key, child);
        if (distance < best_distance && distance < key.size()) {
            best = child;
            best_distance = distance;
        }
    }
    return best.empty() ? "unknown key" : "unknown key (did you mean " + best + "?)";
}

}  // namespace

std::string join_key(std::string_view path, std::string_view key) {
    // A key that would make the path ambiguous (a header "x.y", a query name
    // "") is quoted: routes[0].query."".
    const bool plain = !key.empty() && key.find_first_of(".[]\" \t") == std::string_view::npos;
    std::string out(path);
    if (!out.empty()) {
        out += '.';
    }
    if (plain) {
        out += key;
    } else {
        out += '"';
        out += key;
        out += '"';
    }
    return out;
}

std::string join_index(std::string_view path, std::size_t index) {
    return std::string(path) + "[" + std::to_string(index) + "]";
}

void Problems::add(const YAML::Node& at, std::string path, std::string why) {
    entries_.push_back(Entry{at.Mark().pos, Problem{std::move(path), std::move(why)}});
}

bool Problems::has(std::string_view path) const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [&](const Entry& entry) { return entry.problem.path == path; });
}

std::vector<Problem> Problems::sorted() const {
    std::vector<Entry> entries = entries_;
    // Cross-field problems found after the walk carry the offset of the value
    // they name; a node without a position (an empty document) sorts first.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.pos < b.pos; });
    std::vector<Problem> out;
    out.reserve(entries.size());
    for (Entry& entry : entries) {
        out.push_back(std::move(entry.problem));
    }
    return out;
}

bool expect_map(const YAML::Node& node, const std::string& path, Problems& problems) {
    if (node.IsMap()) {
        return true;
    }
    problems.add(node, path, "must be a map");
    return false;
}

bool expect_list(const YAML::Node& node, const std::string& path, Problems& problems) {
    if (node.IsSequence()) {
        return true;
    }
    problems.add(node, path, "must be a list");
    return false;
}

bool read_string(const YAML::Node& node, const std::string& path, Problems& problems, std::string& out) {
    if (!node.IsScalar()) {
        problems.add(node, path, "must be a string");
        return false;
    }
    out = node.Scalar();
    return true;
}

std::vector<std::pair<YAML::Node, YAML::Node>> map_entries(const YAML::Node& map, const std::string& path,
                                                           Problems& problems) {
    std::vector<std::pair<YAML::Node, YAML::Node>> entries;
    for (auto it = map.begin(); it != map.end(); ++it) {
        const YAML::Node key = it->first;
        if (!key.IsScalar()) {
            problems.add(key, path, "keys must be strings");
            continue;
        }
        const bool seen = std::any_of(entries.begin(), entries.end(), [&](const auto& entry) {
            return entry.first.Scalar() == key.Scalar();
        });
        if (seen) {
            problems.add(key, join_key(path, key.Scalar()), "duplicate key");
            continue;
        }
        entries.emplace_back(key, it->second);
    }
    return entries;
}

MapReader::MapReader(const YAML::Node& map, std::string path, std::string schema_prefix, Problems& problems)
    : map_(map), path_(std::move(path)), schema_prefix_(std::move(schema_prefix)), problems_(problems) {
    for (auto& [key, value] : map_entries(map_, path_, problems_)) {
        const std::string name = key.Scalar();
        if (!is_schema_child(schema_prefix_, name)) {
            problems_.add(key, path_of(name), unknown_key_why(schema_prefix_, name));
            continue;
        }
        entries_.emplace_back(name, value);
    }
}

const YAML::Node* MapReader::find(std::string_view key) const {
    for (const auto& [name, value] : entries_) {
        if (name == key) {
            return &value;
        }
    }
    return nullptr;
}

void MapReader::problem(std::string_view key, std::string why) {
    const YAML::Node* value = find(key);
    problems_.add(value != nullptr ? *value : map_, path_of(key), std::move(why));
}

bool MapReader::integer(std::string_view key, std::int64_t& out) {
    // Looked up before the presence check: a key the schema lacks aborts.
    const IntRange& range = integer_range(join_key(schema_prefix_, key));
    const YAML::Node* value = find(key);
    if (value == nullptr) {
        return false;
    }
    std::int64_t number = 0;
    const Number parsed = is_plain_scalar(*value) ? parse_decimal(value->Scalar(), number)
                                                  : Number::not_a_number;
    if (parsed == Number::not_a_number) {
        problem(key, "must be an integer");
        return false;
    }
    const bool zero_off = range.zero_is_off && number == 0;
    if (parsed == Number::too_large || (!zero_off && (number < range.min || number > range.max))) {
        problem(key, range_violation(range, value->Scalar()));
        return false;
    }
    out = number;
    return true;
}

bool MapReader::integer(std::string_view key, int& out) {
    std::int64_t wide = out;
    if (!integer(key, wide)) {
        return false;
    }
    out = static_cast<int>(wide);  // every int key's range fits an int
    return true;
}

bool MapReader::decimal(std::string_view key, double& out) {
    const DecimalRange& range = decimal_range(join_key(schema_prefix_, key));
    const YAML::Node* value = find(key);
    if (value == nullptr) {
        return false;
    }
    // Counted in millionths, rounded down and up, so that a digit beyond the
    // sixth can neither slip under the minimum nor over the maximum.
    const std::string& text = value->Scalar();
    const bool plain = is_plain_scalar(*value) && text.find_first_of(" \t") == std::string::npos;
    const std::optional<std::int64_t> micros =
        plain ? policy::parse_decimal_scaled(text, micro, policy::Rounding::down) : std::nullopt;
    const std::optional<std::int64_t> micros_up =
        plain ? policy::parse_decimal_scaled(text, micro, policy::Rounding::up) : std::nullopt;
    if (!micros || !micros_up) {
        problem(key, "must be a decimal number, as 0.5");
        return false;
    }
    if (*micros < range.min_micro || *micros_up > range.max_micro) {
        problem(key, "must be " + describe_range(range) + ", got " + text);
        return false;
    }
    out = static_cast<double>(*micros) / static_cast<double>(micro);
    return true;
}

bool MapReader::boolean(std::string_view key, bool& out) {
    const YAML::Node* value = find(key);
    if (value == nullptr) {
        return false;
    }
    // YAML 1.2's core schema; yes/no/on/off are strings there, not booleans.
    const std::string& text = value->Scalar();
    if (is_plain_scalar(*value) && (text == "true" || text == "True" || text == "TRUE")) {
        out = true;
        return true;
    }
    if (is_plain_scalar(*value) && (text == "false" || text == "False" || text == "FALSE")) {
        out = false;
        return true;
    }
    problem(key, "must be true or false");
    return false;
}

bool MapReader::string(std::string_view key, std::string& out) {
    const YAML::Node* value = find(key);
    if (value == nullptr) {
        return false;
    }
    return read_string(*value, path_of(key), problems_, out);
}

bool MapReader::string_list(std::string_view key, std::vector<std::string>& out) {
    const YAML::Node* value = find(key);
    if (value == nullptr) {
        return false;
    }
    if (!value->IsSequence()) {
        problem(key, "must be a list of strings");
        return false;
    }
    std::vector<std::string> items;
    bool ok = true;
    for (std::size_t i = 0; i < value->size(); ++i) {
        std::string item;
        ok = read_string((*value)[i], join_index(path_of(key), i), problems_, item) && ok;
        items.push_back(std::move(item));
    }
    if (ok) {
        out = std::move(items);
    }
    return ok;
}

}  // namespace modelproxy::config::detail
