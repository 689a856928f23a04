// transport/strict_head.hpp: where a head ends, the one-pass readers' first
// step (it looks at sixteen positions at a time), against
// string_view::find.
#include "transport/strict_head.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace {

namespace strict = modelproxy::transport::strict;

std::optional<std::size_t> by_find(std::string_view bytes, std::size_t limit) {
    const std::size_t at = bytes.find("\r\n\r\n");
    if (at == std::string_view::npos || at + 4 > limit) return std::nullopt;
    return at + 4;
}

}  // namespace

TEST_CASE("whole_head finds a head's first CRLFCRLF within the limit, as find does", "[strict_head]") {
    CHECK(strict::whole_head("GET / HTTP/1.1\r\n\r\n", 100) == 18u);
    CHECK(strict::whole_head("GET / HTTP/1.1\r\n\r\n", 18) == 18u);
    CHECK(strict::whole_head("GET / HTTP/1.1\r\n\r\n", 17) == std::nullopt);
    CHECK(strict::whole_head("GET / HTTP/1.1\r\n\r", 100) == std::nullopt);
    CHECK(strict::whole_head("\r\n\r\n", 4) == 4u);
    CHECK(strict::whole_head("", 100) == std::nullopt);
    // Every place of the end, from 0 to 69 (inside a sixteen-byte step, across
    // one, in the last positions after the steps), every limit around it, and
    // near misses before it: CR LF CR without LF, LF CR LF, CR CR LF LF.
    for (std::size_t at = 0; at < 70; ++at) {
        for (const std::string_view decoy : {"", "\r\n\r", "\n\r\n", "\r\r\n\n", "\r\n\r\r\n\n"}) {
            std::string bytes(at, 'a');
            if (decoy.size() <= at) bytes.replace(at - decoy.size(), decoy.size(), decoy);
            bytes += "\r\n\r\nbody\r\n\r\n";
            for (std::size_t limit = at; limit < at + 10; ++limit) {
                INFO(at << ' ' << decoy.size() << ' ' << limit);
                CHECK(strict::whole_head(bytes, limit) == by_find(bytes, limit));
            }
        }
    }
}

TEST_CASE("whole_head agrees with find on random bytes of CR, LF and others", "[strict_head]") {
    std::mt19937 random(20261201);
    const char alphabet[] = {'\r', '\n', 'a', ' '};
    int found = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string bytes(random() % 80, ' ');
        for (char& c : bytes) c = alphabet[random() % 4];
        const std::size_t limit = random() % 90;
        INFO(i);
        const auto end = strict::whole_head(bytes, limit);
        CHECK(end == by_find(bytes, limit));
        if (end) ++found;
    }
    CHECK(found > 1000);
}
