#include "policy/ascii.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

using modelproxy::policy::iequals;

TEST_CASE("iequals compares ASCII case-insensitively and only within both strings", "[ascii]") {
    CHECK(iequals("Transfer-Encoding", "transfer-encoding"));
    CHECK(iequals("transfer-encodinG", "transfer-encoding"));  // only the last byte's case differs
    CHECK(iequals("", ""));
    CHECK_FALSE(iequals("transfer-encodinh", "transfer-encoding"));
    CHECK_FALSE(iequals("te", "tE "));
    CHECK_FALSE(iequals("[", "{"));  // 0x5b and 0x7b are 0x20 apart but not letters
    CHECK_FALSE(iequals("\xc3\xa9", "\xc3\x89"));  // ASCII only: UTF-8 letters keep their case

    // Exactly-sized heap copies, so an AddressSanitizer build sees any read
    // past either string (Boost 1.81's beast::iequals makes one when only the
    // last byte's case differs).
    const std::string a = "keep-alivE", b = "keep-alive";
    const auto heap_a = std::make_unique<char[]>(a.size());
    const auto heap_b = std::make_unique<char[]>(b.size());
    a.copy(heap_a.get(), a.size());
    b.copy(heap_b.get(), b.size());
    CHECK(iequals({heap_a.get(), a.size()}, {heap_b.get(), b.size()}));
}
