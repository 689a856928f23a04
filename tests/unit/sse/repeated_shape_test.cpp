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

namespace {

// OpenAI's chunk with its per-line random `obfuscation`, and a Responses
// event with its `sequence_number`.
const std::string obfuscated =
    R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}],"obfuscation":"q8Zt"})";
const std::string responses_event =
    R"({"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","obfuscation":"xy"})";

std::string replaced(std::string line, std::string_view from, std::string_view to) {
    line.replace(line.find(from), from.size(), to);
    return line;
}

}  // namespace

TEST_CASE("repeated shape: members no rule reads may change with the answer text", "[shape]") {
    RepeatedShape shape;
    REQUIRE(shape.learn(obfuscated, " the"));
    CHECK(shape.match(replaced(replaced(obfuscated, "q8Zt", "AbCdEfGhIjK"), " the", " quick")) == " quick");
    CHECK(shape.match(replaced(obfuscated, "q8Zt", "")) == " the");
    CHECK(shape.match(replaced(replaced(obfuscated, "chatcmpl-1", "chatcmpl-22"), "1741569952", "1741569953")) ==
          " the");

    REQUIRE(shape.learn(responses_event, "Hel"));
    CHECK(shape.match(replaced(replaced(responses_event, ":5,", ":123,"), "\"Hel\"", "\"lo!\"")) == "lo!");
    CHECK(shape.match(replaced(responses_event, ":5,", ":0,")) == "Hel");
    CHECK(shape.match(replaced(responses_event, ":5,", ":-7,")) == "Hel");
}

TEST_CASE("repeated shape: a free member's new value must be one token of its kind", "[shape]") {
    RepeatedShape shape;
    REQUIRE(shape.learn(responses_event, "Hel"));
    for (const char* number : {"01", "1.5", "1e3", "-", "", "5 ", "true", "\"5\"", "5,\"x\":1"}) {
        CAPTURE(number);
        CHECK_FALSE(shape.match(replaced(responses_event, ":5,", std::string(":") + number + ",")));
    }
    REQUIRE(shape.learn(obfuscated, " the"));
    for (const char* value : {R"(a","model":"evil)", R"(a\"b)", "a\nb", "\xc3"}) {
        CAPTURE(value);
        CHECK_FALSE(shape.match(replaced(obfuscated, "q8Zt", value)));
    }
}

TEST_CASE("repeated shape: members a rule reads, and free keys below the top level, may not change", "[shape]") {
    RepeatedShape shape;
    REQUIRE(shape.learn(responses_event, "Hel"));
    CHECK_FALSE(shape.match(replaced(responses_event, "\"output_index\":0", "\"output_index\":1")));
    CHECK_FALSE(shape.match(replaced(responses_event, "output_text", "output_test")));
    const std::string nested = R"({"model":"m","choices":[{"id":"a","index":0,"delta":{"content":"x"}}],"id":"b"})";
    REQUIRE(shape.learn(nested, "x"));
    CHECK(shape.match(replaced(nested, "\"id\":\"b\"", "\"id\":\"bb\"")) == "x");
    CHECK_FALSE(shape.match(replaced(nested, "\"id\":\"a\"", "\"id\":\"aa\"")));
    CHECK_FALSE(shape.match(replaced(nested, "\"index\":0", "\"index\":1")));
    CHECK_FALSE(shape.match(replaced(nested, "\"m\"", "\"n\"")));
    // A free key whose value is not a string or an integer: fixed.
    const std::string object_id = R"({"id":{"v":"a"},"choices":[{"delta":{"content":"x"}}]})";
    REQUIRE(shape.learn(object_id, "x"));
    CHECK_FALSE(shape.match(replaced(object_id, "\"a\"", "\"b\"")));
    const std::string float_created = R"({"created":1.5,"choices":[{"delta":{"content":"x"}}]})";
    REQUIRE(shape.learn(float_created, "x"));
    CHECK_FALSE(shape.match(replaced(float_created, "1.5", "2")));
    CHECK_FALSE(shape.match(replaced(float_created, "1.5", "1.6")));
}
