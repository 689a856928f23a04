// Typed, problem-collecting access to a yaml-cpp document: every read that
// finds a wrong type, a value out of its schema range, an unknown or a
// duplicate key records a Problem and carries on, so one pass reports all of
// them. Internal to config/.
#pragma once

#include "config/config.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace modelproxy::config::detail {

// "a.b" (or "b" when `path` is empty), "a[3]".
std::string join_key(std::string_view path, std::string_view key);
std::string join_index(std::string_view path, std::size_t index);

// Problems with their offset in the document, handed out in file order.
class Problems {
public:
    void add(const YAML::Node& at, std::string path, std::string why);
    bool has(std::string_view path) const;  // a problem recorded at exactly `path`
    bool empty() const { return entries_.empty(); }
    std::vector<Problem> sorted() const;

private:
    struct Entry {
        int pos;
        Problem problem;
    };
    std::vector<Entry> entries_;
};

// Type checks: true when `node` has the shape; else a problem at `path`.
bool expect_map(const YAML::Node& node, const std::string& path, Problems& problems);
bool expect_list(const YAML::Node& node, const std::string& path, Problems& problems);
// Any scalar (quoted or plain) is a string; null, lists and maps are not.
bool read_string(const YAML::Node& node, const std::string& path, Problems& problems, std::string& out);

// The entries of a map in file order. Keys must be scalars; a key seen twice is
// a problem at its second occurrence and only the first is kept.
std::vector<std::pair<YAML::Node, YAML::Node>> map_entries(const YAML::Node& map, const std::string& path,
                                                           Problems& problems);

// One map of the schema. Keys that are not children of `schema_prefix` in the
// schema are reported as unknown when the reader is made. Each typed read
// returns true when the key is present with a valid value (then `out` is set),
// false when it is absent (`out` keeps its default) or refused (a problem).
class MapReader {
public:
    MapReader(const YAML::Node& map, std::string path, std::string schema_prefix, Problems& problems);

    const std::string& path() const { return path_; }
    std::string path_of(std::string_view key) const { return join_key(path_, key); }
    const YAML::Node& node() const { return map_; }
    const YAML::Node* find(std::string_view key) const;  // nullptr when absent
    bool has(std::string_view key) const { return find(key) != nullptr; }

    bool integer(std::string_view key, std::int64_t& out);  // range from the schema
    bool integer(std::string_view key, int& out);
    // A plain decimal (`0.5`, `1`; no sign or exponent), range from the schema.
    bool decimal(std::string_view key, double& out);
    bool boolean(std::string_view key, bool& out);
    bool string(std::string_view key, std::string& out);
    bool string_list(std::string_view key, std::vector<std::string>& out);

    // A problem at `key` (or at the map when it is absent).
    void problem(std::string_view key, std::string why);

private:
    YAML::Node map_;
    std::string path_;
    std::string schema_prefix_;
    Problems& problems_;
    std::vector<std::pair<std::string, YAML::Node>> entries_;
};

}  // namespace modelproxy::config::detail
