// Byte mutations of HTTP messages for the differential tests of the
// one-pass readers (whole_request_test.cpp, whole_answer_test.cpp): from a
// fixed seed, so a failure is repeatable.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace modelproxy::test {

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
