// What the differential tests of the one-pass readers share
// (whole_request_test.cpp, whole_answer_test.cpp): the comparison of two
// heads' fields, and byte mutations of messages from a fixed seed, so a
// failure is repeatable.
#pragma once

#include "transport/flat_fields.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace modelproxy::test {

// The same fields in the same order: names, their enums, values.
inline void check_same_fields(const transport::FlatFields& ours, const transport::FlatFields& beast) {
    REQUIRE(ours.size() == beast.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
        CHECK(ours.at(i).name() == beast.at(i).name());
        CHECK(ours.at(i).name_string() == beast.at(i).name_string());
        CHECK(ours.at(i).value() == beast.at(i).value());
    }
}

// `count` mutants of `seeds`, each one to three insertions, deletions or
// replacements with bytes the HTTP grammar turns on (line ends, separators,
// digits, letters of both cases, DEL, obs-text, control bytes, NUL), each
// given to `check` (whether the one-pass reader took it, and if so read it
// as Beast does). Both outcomes must be seen: the comparison ran, and the
// reader declined.
template <class Check>
void check_mutants(const std::vector<std::string>& seeds, unsigned seed, Check check) {
    constexpr int count = 30000;
    const std::string alphabet = std::string("\r\n \t:,;0123456789aAzZ-_/?%\"\\\x7f\x80\xff\x01", 31) + '\0';
    std::mt19937 random(seed);
    int taken = 0;
    for (int i = 0; i < count; ++i) {
        std::string text = seeds[random() % seeds.size()];
        const int edits = 1 + static_cast<int>(random() % 3);
        for (int e = 0; e < edits && !text.empty(); ++e) {
            const std::size_t at = random() % text.size();
            const char c = alphabet[random() % alphabet.size()];
            switch (random() % 3) {
                case 0: text.insert(at, 1, c); break;
                case 1: text.erase(at, 1); break;
                default: text[at] = c; break;
            }
        }
        INFO(text);
        if (check(text)) ++taken;
    }
    CHECK(taken > 1000);
    CHECK(taken < count);
}

}  // namespace modelproxy::test
