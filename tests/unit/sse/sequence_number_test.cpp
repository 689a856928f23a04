#include "sse/sequence_number.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>

using modelproxy::sse::sequence_number;

TEST_CASE("sequence_number: a Responses event's member, one row per case", "[sequence_number]") {
    using Want = std::optional<std::uint64_t>;
    auto [name, data, want] = GENERATE(table<std::string, std::string, Want>({
        {"delta", R"({"type":"response.output_text.delta","sequence_number":5,"delta":"Hi"})", Want{5}},
        {"last member", R"({"type":"response.created","response":{"id":"r"},"sequence_number":0})", Want{0}},
        {"whitespace", "{\"sequence_number\" :\t 12 }", Want{12}},
        {"largest", R"({"sequence_number":18446744073709551615})", Want{UINT64_MAX}},
        {"too large", R"({"sequence_number":18446744073709551616})", std::nullopt},
        {"none", R"({"type":"response.completed"})", std::nullopt},
        {"negative", R"({"sequence_number":-1})", std::nullopt},
        {"a string", R"({"sequence_number":"5"})", std::nullopt},
        {"a fraction", R"({"sequence_number":5.5})", std::nullopt},
        {"an exponent", R"({"sequence_number":5e2})", std::nullopt},
        {"the key's bytes as a value first", R"({"k":"sequence_number","sequence_number":7})", Want{7}},
        {"escaped inside text", R"({"delta":"\"sequence_number\":9","sequence_number":3})", Want{3}},
        {"cut short", R"({"sequence_number":)", std::nullopt},
        {"empty", "", std::nullopt},
    }));
    CAPTURE(name);
    CHECK(sequence_number(data) == want);
}
