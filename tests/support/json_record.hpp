// One JSON-lines record (docs/behaviour.md section 10) as tests query it. Boost.JSON is
// compiled once in config/boost_src.cpp.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::test {

class JsonRecord {
public:
    // nullopt when `line` is not one JSON object (the record contract:
    // every stdout line is exactly one object).
    static std::optional<JsonRecord> parse(std::string_view line);

    const boost::json::object& object() const { return object_; }
    const std::string& line() const { return line_; }

    bool has(std::string_view key) const;
    bool is_null(std::string_view key) const;  // present and null
    // Typed reads: nullopt when absent or of another type.
    std::optional<std::string> str(std::string_view key) const;
    std::optional<std::int64_t> integer(std::string_view key) const;  // also a whole double
    std::optional<double> number(std::string_view key) const;
    std::optional<bool> boolean(std::string_view key) const;

    // Shorthand for str("event").value_or("").
    std::string event() const;

private:
    boost::json::object object_;
    std::string line_;
};

// Every line that parses, in order; lines that do not parse are skipped and,
// when `bad` is given, appended to it so a test can require it stays empty.
std::vector<JsonRecord> parse_records(const std::vector<std::string>& lines,
                                      std::vector<std::string>* bad = nullptr);

}  // namespace modelproxy::test
