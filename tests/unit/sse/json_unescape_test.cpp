#include "sse/json_unescape.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <random>
#include <string>

using modelproxy::sse::holds_escape;
using modelproxy::sse::unescape_json;

namespace {

std::string decoded(std::string_view text) {
    std::string out(text.size(), '\0');
    char* end = unescape_json(text, out.data());
    REQUIRE(end >= out.data());
    REQUIRE(static_cast<std::size_t>(end - out.data()) <= text.size());
    out.resize(static_cast<std::size_t>(end - out.data()));
    return out;
}

}  // namespace

TEST_CASE("unescape: each escape, and what is not one", "[unescape]") {
    auto [name, text, want] = GENERATE(table<std::string, std::string, std::string>({
        {"empty", "", ""},
        {"no escape", R"({"a":"b c"})", R"({"a":"b c"})"},
        {"quote", R"(a\"b)", "a\"b"},
        {"backslash", R"(a\\b)", "a\\b"},
        {"slash", R"(a\/b)", "a/b"},
        {"controls", R"(\b\f\n\r\t)", "\b\f\n\r\t"},
        {"\\u, lower hex", R"(\u0073k)", "sk"},
        {"\\u, upper hex", R"(\u004A\u004a)", "JJ"},
        {"two-byte UTF-8", R"(\u00e9)", "\xC3\xA9"},
        {"three-byte UTF-8", R"(\u20AC)", "\xE2\x82\xAC"},
        {"surrogate pair", R"(\ud83d\ude00)", "\xF0\x9F\x98\x80"},
        {"lone high surrogate", R"(\ud800x)", "\xED\xA0\x80x"},
        {"lone low surrogate", R"(\udc00)", "\xED\xB0\x80"},
        {"high surrogate then a non-surrogate", R"(\ud800\u0041)", "\xED\xA0\x80" "A"},
        {"NUL", R"(a\u0000b)", std::string("a\0b", 3)},
        {"an escaped backslash before u", R"(\\u0041)", R"(\u0041)"},
        {"not an escape", R"(\x41)", R"(\x41)"},
        {"short \\u", R"(\u12)", R"(\u12)"},
        {"\\u with a non-hex digit", R"(\u00G1)", R"(\u00G1)"},
        {"a final backslash", "ab\\", "ab\\"},
        {"escapes between plain runs", R"(x\ny\tz\u0021)", "x\ny\tz!"},
    }));
    CAPTURE(name);
    CHECK(decoded(text) == want);
    CHECK(holds_escape(text) == (text.find('\\') != std::string::npos));
}

TEST_CASE("unescape: any text written with escapes decodes to itself", "[unescape]") {
    // Every byte below 0x80 as itself (where JSON allows it), as its short
    // escape, or as \u00XX in either hex case: the decoded text is the text.
    std::mt19937 random(11);
    for (int round = 0; round < 500; ++round) {
        std::string text, written;
        const std::size_t size = random() % 40;
        for (std::size_t i = 0; i < size; ++i) {
            const char c = static_cast<char>(random() % 128);
            text += c;
            const unsigned way = random() % 3;
            const bool must = c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
            if (way == 0 && !must) {
                written += c;
            } else if (way == 1 && (c == '"' || c == '\\' || c == '/' || c == '\n' || c == '\t')) {
                written += '\\';
                written += c == '\n' ? 'n' : c == '\t' ? 't' : c;
            } else {
                char escape[7];
                std::snprintf(escape, sizeof escape, random() % 2 ? "\\u%04x" : "\\u%04X", static_cast<unsigned>(c));
                written += escape;
            }
        }
        CAPTURE(written);
        CHECK(decoded(written) == text);
    }
}
