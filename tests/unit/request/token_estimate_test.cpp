// request/token_estimate.hpp: the token estimate a quota reserves for one
// attempt (docs/behaviour.md section 15): text bytes / 4 without base64
// data or file parts, plus the output bound, at most tokens_per_minute.
#include "request/token_estimate.hpp"
#include "bodies.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy::request;
using namespace modelproxy::test;

namespace Catch {
template <>
struct StringMaker<TokenEstimate> {
    static std::string convert(const TokenEstimate& e) {
        return "{text_bytes " + std::to_string(e.text_bytes) + ", output_tokens " + std::to_string(e.output_tokens) +
               ", tokens " + std::to_string(e.tokens) + "}";
    }
};
}  // namespace Catch

namespace {

const std::string json_type = "application/json";

// n base64 characters (never "data:", never a space).
std::string base64_run(std::size_t n) {
    static constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += alphabet[(i * 7) % alphabet.size()];
    return out + "==";
}

const std::string png = base64_run(20000);

TokenEstimate estimate(std::int64_t text_bytes, std::int64_t output, std::int64_t cap = 0) {
    std::int64_t tokens = (text_bytes + 3) / 4 + output;
    if (cap > 0 && tokens > cap) tokens = cap;
    return TokenEstimate{text_bytes, output, tokens};
}

}  // namespace

TEST_CASE("the text bytes of JSON bodies: string values only, base64 data skipped", "[token_estimate]") {
    auto [name, body, text_bytes] = GENERATE_REF(table<std::string, std::string, std::int64_t>({
        // "gpt-4o" 6 + "user" 4 + "Hello there!" 12
        {"a plain chat", R"({"model":"gpt-4o","messages":[{"role":"user","content":"Hello there!"}]})", 22},
        {"keys are not text", R"({"a_very_long_key_name_indeed":"b","n":12345,"t":true,"z":null})", 1},
        // m 1 + user 4 + text 4 + "What is this?" 13 + image_url 9 + low 3; the URL not at all
        {"an image data URL",
         R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},)"
         R"({"type":"image_url","image_url":{"url":"data:image/png;base64,)" + png + R"(","detail":"low"}}]}]})",
         34},
        {"a data URL inside a longer string", R"({"t":"see data:image/png;base64,)" + png + R"( here"})", 9},
        {"a data URL whose slashes are escaped", R"({"t":"data:image/png;base64,ab\/cd+\/==\n\/x"})", 0},
        {"a data URL with parameters before base64", R"({"t":"data:image/png;name=a.png;BASE64,QUJD"})", 0},
        {"a data URL that is not base64 is text", R"({"t":"data:text/plain,hello"})", 21},
        {"data: without a comma is text", R"({"t":"data: the numbers"})", 17},
        // input_audio 11 + wav 3
        {"input_audio data",
         R"({"content":[{"type":"input_audio","input_audio":{"data":")" + png + R"(","format":"wav"}}]})", 14},
        {"image_url data", R"({"image_url":{"data":")" + png + R"("}})", 0},
        {"b64_json", R"({"data":[{"b64_json":")" + png + R"(","revised_prompt":"a cat"}]})", 5},
        // claude 6 + user 4 + image 5 + base64 6 + image/png 9 + text 4 + Describe 8
        {"an Anthropic base64 image",
         R"({"model":"claude","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64",)"
         R"("media_type":"image/png","data":")" + png + R"("}},{"type":"text","text":"Describe"}]}]})",
         42},
        // base64 6 + application/pdf 15
        {"an Anthropic base64 document, data before its type",
         R"({"source":{"data":")" + png + R"(","media_type":"application/pdf","type":"base64"}})", 21},
        // text 4 + text/plain 10 + "Hello doc" 9
        {"an Anthropic plain-text document source is text",
         R"({"source":{"type":"text","media_type":"text/plain","data":"Hello doc"}})", 23},
        {"data elsewhere is text", R"({"data":"plain words"})", 11},
        {"escapes count decoded", R"({"a":"caf\u00e9","b":"\ud83d\ude00","c":"\n\"\\","d":"\ud800"})", 5 + 4 + 3 + 3},
        {"a JSON array", R"(["abc",{"d":"efgh"}])", 7},
        {"a JSON string", R"("hello")", 5},
        {"a JSON number", "42", 0},
    }));
    CAPTURE(name);
    CHECK(estimate_tokens(json_type, body, 0) == estimate(text_bytes, default_output_tokens));
}

TEST_CASE("a long conversation counts every message", "[token_estimate]") {
    std::string body = R"({"model":"gpt-4o","messages":[)";
    std::int64_t text = 6;
    for (int i = 0; i < 200; ++i) {
        const std::string role = i % 2 == 0 ? "user" : "assistant";
        const std::string content(300 + i, 'w');
        body += std::string(i == 0 ? "" : ",") + R"({"role":")" + role + R"(","content":")" + content + R"("})";
        text += static_cast<std::int64_t>(role.size() + content.size());
    }
    body += "]}";
    CHECK(estimate_tokens(json_type, body, 0) == estimate(text, default_output_tokens));
}

TEST_CASE("the output bound: the first of max_tokens, max_completion_tokens, max_output_tokens", "[token_estimate]") {
    // Every body's text is "abcd": 4 bytes, 1 token.
    auto [members, output] = GENERATE(table<std::string, std::int64_t>({
        {"", default_output_tokens},
        {R"(,"max_tokens":300)", 300},
        {R"(,"max_completion_tokens":200)", 200},
        {R"(,"max_output_tokens":100)", 100},
        {R"(,"max_output_tokens":100,"max_completion_tokens":200,"max_tokens":300)", 300},
        {R"(,"max_output_tokens":100,"max_completion_tokens":200)", 200},
        {R"(,"max_tokens":0)", 0},
        {R"(,"max_tokens":1e3)", 1000},
        {R"(,"max_tokens":2.9)", 2},
        {R"(,"max_tokens":-1,"max_completion_tokens":60)", 60},
        {R"(,"max_tokens":null,"max_output_tokens":70)", 70},
        {R"(,"max_tokens":1e300)", 1000000000000000},
        {R"(,"options":{"max_tokens":5})", default_output_tokens},  // top level only
    }));
    CAPTURE(members);
    const std::string body = R"({"t":"abcd")" + members + "}";
    CHECK(estimate_tokens(json_type, body, 0) == estimate(4, output));
}

TEST_CASE("a max_tokens written as a string is text, and no bound", "[token_estimate]") {
    CHECK(estimate_tokens(json_type, R"({"max_tokens":"100"})", 0) == estimate(3, default_output_tokens));
}

TEST_CASE("tokens_per_minute caps the estimate, 0 caps nothing", "[token_estimate]") {
    const std::string body = R"({"t":"abcdefgh","max_tokens":5000})";  // 2 + 5000
    CHECK(estimate_tokens(json_type, body, 0).tokens == 5002);
    CHECK(estimate_tokens(json_type, body, 5002).tokens == 5002);
    CHECK(estimate_tokens(json_type, body, 5001) == estimate(8, 5000, 5001));
    CHECK(estimate_tokens(json_type, body, 1).tokens == 1);
}

TEST_CASE("a multipart body counts its fields, not its files", "[token_estimate]") {
    const std::string b = "----est";
    const std::string type = "multipart/form-data; boundary=" + b;
    // whisper-1 9 + en 2 + "Hello" 5 + "plain" 5
    const std::string body = part(b, model_part_headers, "whisper-1") +
                             part(b, file_part_headers, std::string(5000, 'R')) +
                             part(b, "Content-Disposition: form-data; name=\"language\"", "en") +
                             part(b, "Content-Disposition: form-data; name=\"prompt\"", "Hello") +
                             part(b, "Content-Disposition: form-data; name=\"image\"\r\nContent-Type: image/png",
                                  std::string(3000, 'P')) +
                             part(b, "Content-Disposition: form-data; name=\"f\"; filename*=UTF-8''a.txt", "abc") +
                             part(b, "Content-Disposition: form-data; name=\"n\"\r\nContent-Type: text/plain", "plain") +
                             close(b);
    CHECK(estimate_tokens(type, body, 0) == estimate(21, default_output_tokens));
}

TEST_CASE("a body that is not JSON counts its raw bytes", "[token_estimate]") {
    auto [type, body] = GENERATE(table<std::string, std::string>({
        {"text/plain", "hello world, this is not json {"},
        {json_type, R"({"model":"m","messages":[)"},
        {json_type, R"({"a":"b"} trailing)"},
        {"", R"({"a":"b"},)"},
        {"multipart/form-data; boundary=x", "--x\r\nno end of the headers"},
        {json_type, std::string(600, '[') + std::string(600, ']')},  // deeper than the walk goes
    }));
    CAPTURE(type, body);
    CHECK(estimate_tokens(type, body, 0) ==
          estimate(static_cast<std::int64_t>(body.size()), default_output_tokens));
}

TEST_CASE("JSON is read whatever the Content-Type", "[token_estimate]") {
    const std::string body = R"({"t":"abcd","max_tokens":9})";
    CHECK(estimate_tokens("", body, 0) == estimate(4, 9));
    CHECK(estimate_tokens("text/plain", body, 0) == estimate(4, 9));
}

TEST_CASE("an empty body is only the output bound", "[token_estimate]") {
    CHECK(estimate_tokens(json_type, "", 0) == estimate(0, default_output_tokens));
    CHECK(estimate_tokens("", "", 100) == estimate(0, default_output_tokens, 100));
}

TEST_CASE("a body read in place gives what a copy gives", "[token_estimate]") {
    std::string body = R"({"model":"m","messages":[{"role":"user","content":"in place"}],"max_tokens":7})";
    const std::size_t size = body.size();
    body.reserve(size + json_padding);
    CHECK(estimate_tokens(json_type, std::string_view(body.data(), size), 0, body.capacity()) == estimate(13, 7));
}
