#include "support/json_record.hpp"

#include <cmath>

namespace modelproxy::test {

std::optional<JsonRecord> JsonRecord::parse(std::string_view line) {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(line, ec);
    if (ec || !v.is_object()) return std::nullopt;
    JsonRecord r;
    r.object_ = std::move(v.as_object());
    r.line_ = std::string(line);
    return r;
}

bool JsonRecord::has(std::string_view key) const { return object_.contains(key); }

bool JsonRecord::is_null(std::string_view key) const {
    const auto* v = object_.if_contains(key);
    return v && v->is_null();
}

std::optional<std::string> JsonRecord::str(std::string_view key) const {
    const auto* v = object_.if_contains(key);
    if (!v || !v->is_string()) return std::nullopt;
    return std::string(v->as_string());
}

std::optional<std::int64_t> JsonRecord::integer(std::string_view key) const {
    const auto* v = object_.if_contains(key);
    if (!v) return std::nullopt;
    if (v->is_int64()) return v->as_int64();
    if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(v->as_uint64());
    if (v->is_double()) {
        double d = v->as_double();
        if (std::floor(d) == d && std::fabs(d) < 9.0e18) return static_cast<std::int64_t>(d);
    }
    return std::nullopt;
}

std::optional<double> JsonRecord::number(std::string_view key) const {
    const auto* v = object_.if_contains(key);
    if (!v) return std::nullopt;
    if (v->is_double()) return v->as_double();
    if (v->is_int64()) return static_cast<double>(v->as_int64());
    if (v->is_uint64()) return static_cast<double>(v->as_uint64());
    return std::nullopt;
}

std::optional<bool> JsonRecord::boolean(std::string_view key) const {
    const auto* v = object_.if_contains(key);
    if (!v || !v->is_bool()) return std::nullopt;
    return v->as_bool();
}

std::string JsonRecord::event() const { return str("event").value_or(""); }

std::vector<JsonRecord> parse_records(const std::vector<std::string>& lines, std::vector<std::string>* bad) {
    std::vector<JsonRecord> out;
    for (const auto& line : lines) {
        if (auto r = JsonRecord::parse(line))
            out.push_back(std::move(*r));
        else if (bad)
            bad->push_back(line);
    }
    return out;
}

}  // namespace modelproxy::test
