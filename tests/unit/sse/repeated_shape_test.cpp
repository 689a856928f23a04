// sse/repeated_shape.hpp: which lines it learns from, and which later lines
// it takes as the learned line with only the answer text changed.
#include "sse/repeated_shape.hpp"

#include <catch2/catch.hpp>

#include <string>

using modelproxy::sse::RepeatedShape;

namespace {

const std::string chunk =
    R"({"id":"c1","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]})";

std::string with_text(std::string_view text) {
    std::string line = chunk;
    line.replace(line.find(" the"), 4, text);
    return line;
}

}  // namespace

TEST_CASE("repeated shape: a chunk with other answer text matches, and its text is the new bytes", "[shape]") {
    RepeatedShape shape;
    REQUIRE(shape.learn(chunk, " the"));
    CHECK(shape.match(chunk) == " the");
    CHECK(shape.match(with_text(" quick brown fox")) == " quick brown fox");
    CHECK(shape.match(with_text("x")) == "x");
    CHECK(shape.match(with_text("caf\xc3\xa9 \xf0\x9f\x98\x80")) == "caf\xc3\xa9 \xf0\x9f\x98\x80");
    CHECK(shape.match(with_text("{}[],:\x7f")) == "{}[],:\x7f");
}

TEST_CASE("repeated shape: answer text that could end, escape or break the string does not match", "[shape]") {
    RepeatedShape shape;
    REQUIRE(shape.learn(chunk, " the"));
    CHECK_FALSE(shape.match(with_text("")));                        // empty: section 1 reads it otherwise
    CHECK_FALSE(shape.match(with_text(R"(x","model":"evil)")));     // ends the string early
    CHECK_FALSE(shape.match(with_text(R"(a\"b)")));                 // an escape
    CHECK_FALSE(shape.match(with_text(R"(\u0041)")));
    CHECK_FALSE(shape.match(with_text("a\nb")));                    // a raw control byte
    CHECK_FALSE(shape.match(with_text("a\tb")));
    CHECK_FALSE(shape.match(with_text("\xc3")));                    // invalid UTF-8
    CHECK_FALSE(shape.match(with_text("\xed\xa0\x80")));            // a surrogate
    CHECK_FALSE(shape.match(with_text("\xff")));
}

TEST_CASE("repeated shape: a change outside the answer text does not match", "[shape]") {
    RepeatedShape shape;
    REQUIRE(shape.learn(chunk, " the"));
    std::string other_model = chunk;
    other_model.replace(other_model.find("mini"), 4, "mino");
    CHECK_FALSE(shape.match(other_model));
    std::string finished = chunk;
    finished.replace(finished.find("null"), 4, "\"x\"");
    CHECK_FALSE(shape.match(finished));
    CHECK_FALSE(shape.match(chunk + " "));
    CHECK_FALSE(shape.match(" " + chunk));
    CHECK_FALSE(shape.match(chunk.substr(0, chunk.size() - 1)));
    CHECK_FALSE(shape.match(""));
}

TEST_CASE("repeated shape: it learns only when the answer text's token is certain", "[shape]") {
    RepeatedShape shape;
    // A backslash anywhere: string bytes are not their values.
    CHECK_FALSE(shape.learn(R"({"id":"a\/b","choices":[{"delta":{"content":"x"}}]})", "x"));
    CHECK_FALSE(shape.known());
    // Two tokens with the text's bytes: which one is the answer is not known.
    CHECK_FALSE(shape.learn(R"({"id":"x","choices":[{"delta":{"content":"x"}}]})", "x"));
    CHECK_FALSE(shape.learn(R"({"choices":[{"delta":{"content":"content"}}]})", "content"));
    // No token with them, or nothing to learn.
    CHECK_FALSE(shape.learn(chunk, "absent"));
    CHECK_FALSE(shape.learn(chunk, ""));
    // The quotes of neighbouring tokens never count as a token: `":"` here
    // spans a key's close and a value's open.
    CHECK_FALSE(shape.learn(R"({"a":"b"})", ":"));
    CHECK(shape.learn(R"({"a":"b"})", "b"));
    CHECK(shape.match(R"({"a":"zz"})") == "zz");
    // A failed learn forgets what was learned before.
    CHECK_FALSE(shape.learn(chunk, "absent"));
    CHECK_FALSE(shape.match(R"({"a":"zz"})"));
}
