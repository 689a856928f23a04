#include "sse/credentials.hpp"

#include "sse/inspect.hpp"
#include "sse/reader.hpp"

#include <catch2/catch.hpp>

#include <hs/hs.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

using modelproxy::policy::Endpoint;
using modelproxy::sse::AnswerFragment;
using modelproxy::sse::AnswerTextKey;
using modelproxy::sse::CredentialScanner;
using modelproxy::sse::CredentialVerdict;
using modelproxy::sse::Inspector;
using modelproxy::sse::StreamScan;

namespace {

using Strings = std::vector<std::string>;

CredentialScanner make(const Strings& keys = {}, const Strings& patterns = {}, bool defaults = true) {
    auto built = CredentialScanner::build(keys, patterns, defaults);
    if (auto* error = std::get_if<std::string>(&built)) FAIL(*error);
    return std::move(std::get<CredentialScanner>(built));
}

const CredentialScanner& defaults() {
    static const CredentialScanner scanner = make();
    return scanner;
}

// The body whole in block mode, and as a stream whole, byte by byte and at
// random split points: all must agree (fragmentation invariance).
bool found(const CredentialScanner& scanner, const std::string& body) {
    const bool block = scanner.contains_secret(body);
    std::mt19937 random(7);
    for (int split = 0; split < 4; ++split) {
        StreamScan scan = scanner.stream_scan();
        std::size_t at = 0;
        while (at < body.size()) {
            std::size_t n = body.size() - at;
            if (split == 1) n = 1;
            if (split >= 2) n = std::min<std::size_t>(n, 1 + random() % 17);
            scan.feed_bytes(std::string_view(body).substr(at, n));
            at += n;
        }
        const bool streamed = scan.finish() == CredentialVerdict::credential_in_response;
        CAPTURE(split);
        CHECK(streamed == block);
    }
    return block;
}

const std::string chars40 = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0";  // 40 of [A-Za-z0-9]
const std::string sk = "sk-proj-" + chars40 + "_-xy";
const std::string sk_plain = "sk-" + chars40;
const std::string sk_svc = "sk-svcacct-" + chars40;
const std::string sk_admin = "sk-admin-" + chars40;
const std::string akia = "AKIAZ7Q2LMNOPQRSTUVW";
// 64 base64 characters: the least a private key block must hold after its header.
const std::string base64_64 = "MIIEpAIBAAKCAQEAx4+/Zq7LmN3pR8sT1vW4xY6zA9bC2dE5fG8hJ0kL3mN6pQ9r";
const std::string pem = "-----BEGIN RSA PRIVATE KEY-----" + base64_64;
const std::string pem_plain = "-----BEGIN PRIVATE KEY-----" + base64_64;
const std::string pem_ssh = "-----BEGIN OPENSSH PRIVATE KEY-----" + base64_64;
const std::string ghp = "ghp_" + chars40.substr(0, 36);
const std::string nvapi = "nvapi-" + chars40 + "-_";

// One SSE chat chunk whose content is `text` (already JSON-escaped).
std::string chunk(std::string_view text, int index = 0, std::string_view field = "content") {
    return R"({"id":"c","model":"gpt-4o","choices":[{"index":)" + std::to_string(index) + R"(,"delta":{")" +
           std::string(field) + R"(":")" + std::string(text) + R"("}}]})";
}

// Feeds events as the relay does (raw bytes, then the answer-text fragments
// the Inspector found in the data line); the index of the first event that
// refused, or -1.
int refused_at(StreamScan& scan, const Strings& lines, Endpoint endpoint = Endpoint::chat_completions) {
    Inspector inspector;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        scan.feed_bytes("data: " + lines[i] + "\n\n");
        if (scan.feed_answer_text(inspector.inspect(lines[i], endpoint).answer_fragments) ==
            CredentialVerdict::credential_in_response)
            return static_cast<int>(i);
    }
    return scan.finish() == CredentialVerdict::credential_in_response ? static_cast<int>(lines.size()) : -1;
}

int refused_at(const CredentialScanner& scanner, const Strings& lines, Endpoint endpoint = Endpoint::chat_completions) {
    StreamScan scan = scanner.stream_scan();
    return refused_at(scan, lines, endpoint);
}

}  // namespace

TEST_CASE("credentials: each default shape, raw and in JSON", "[credentials]") {
    auto [name, secret] = GENERATE_REF(table<std::string, std::string>({
        {"sk-proj-", sk},
        {"sk-", sk_plain},
        {"sk-svcacct-", sk_svc},
        {"sk-admin-", sk_admin},
        {"AKIA", akia},
        {"RSA private key", pem},
        {"private key", pem_plain},
        {"OpenSSH private key", pem_ssh},
        {"ghp_", ghp},
        {"nvapi-", nvapi},
    }));
    auto [context, prefix, suffix] = GENERATE(table<std::string, std::string, std::string>({
        {"the whole body", "", ""},
        {"a JSON string", R"({"choices":[{"message":{"content":")", R"("}}]})"},
        {"after a space", "your key is ", " ok"},
        {"after a colon", "key:", ""},
        {"after a JSON \\n escape", R"({"content":"line one\n)", R"("})"},
        {"after a JSON \\u escape", R"({"content":"\u00a0)", R"("})"},
        {"inside SSE", "data: {\"choices\":[{\"delta\":{\"content\":\"", "\"}}]}\n\n"},
    }));
    CAPTURE(name, context);
    CHECK(found(defaults(), prefix + secret + suffix));
}

TEST_CASE("credentials: whole tokens only", "[credentials]") {
    auto [name, secret] = GENERATE_REF(table<std::string, std::string>({
        {"sk-proj-", sk},
        {"AKIA", akia},
        {"private key", pem},
        {"ghp_", ghp},
        {"nvapi-", nvapi},
    }));
    auto [before, expected] = GENERATE(table<std::string, bool>({
        {"x", false},
        {"Z", false},
        {"7", false},
        {"_", false},
        {"-", false},
        {"\"", true},
        {" ", true},
        {":", true},
        {"=", true},
        {"\n", true},
        {"/", true},
    }));
    CAPTURE(name, before);
    CHECK(found(defaults(), "text " + before + secret + " more") == expected);
}

TEST_CASE("credentials: prose that must pass", "[credentials]") {
    auto [name, body] = GENERATE_REF(table<std::string, std::string>({
        {"risk-free-", "a risk-free-" + chars40 + " plan"},
        {"talk about the prefix", "your key starts with sk- and is long"},
        {"sk- and 10 chars", "sk-0123456789 is too short"},
        {"sk- and 39 chars", "sk-" + chars40.substr(0, 39)},
        {"inside a longer word", "mask-proj-" + chars40},
        {"documentation AWS key", "AKIAIOSFODNN7EXAMPLE"},
        {"documentation AWS key in JSON", R"({"content":"use AKIAIOSFODNN7EXAMPLE here"})"},
        {"AKIA and 15", "AKIAIOSFODNN7EXAM"},
        {"lowercase AKIA body", "AKIAiosfodnn7example"},
        {"public key", "-----BEGIN PUBLIC KEY-----" + base64_64},
        {"a private key header alone", "how a key starts: -----BEGIN PRIVATE KEY----- and so on"},
        {"ghp_ and 35", "ghp_" + chars40.substr(0, 35)},
        {"nvapi- and 39", "nvapi-" + chars40.substr(0, 39)},
        {"a JSON \\\\ then n", R"({"content":"x\\\\nope"})"},
    }));
    CAPTURE(name);
    CHECK_FALSE(found(defaults(), body));
}

TEST_CASE("credentials: a private key block needs 64 base64 characters after its header, line breaks allowed",
          "[credentials]") {
    const std::string header = "-----BEGIN EC PRIVATE KEY-----";
    const std::string first = base64_64.substr(0, 32), rest = base64_64.substr(32);
    auto [name, body, expected] = GENERATE_REF(table<std::string, std::string, bool>({
        {"64 at once", header + base64_64, true},
        {"63", header + base64_64.substr(0, 63), false},
        {"the header alone", header, false},
        {"a space after the header", header + " " + base64_64, false},
        {"LF line breaks", header + "\n" + first + "\n" + rest + "\n", true},
        {"CRLF line breaks", header + "\r\n" + first + "\r\n" + rest, true},
        {"in JSON, \\n escapes", R"({"k":")" + header + R"(\n)" + first + R"(\n)" + rest + R"("})", true},
        {"in JSON, \\r\\n escapes and \\/", R"({"k":")" + header + R"(\r\nMIIE\/)" + rest + first + R"("})",
         true},
        {"in JSON, 63 split by escapes", R"({"k":")" + header + R"(\n)" + first + R"(\n)" + rest.substr(1) + R"("})",
         false},
    }));
    CAPTURE(name);
    CHECK(found(defaults(), body) == expected);
}

TEST_CASE("credentials: the AKIA...EXAMPLE exclusion is exact", "[credentials]") {
    auto [key, expected] = GENERATE(table<std::string, bool>({
        {"AKIAIOSFODNN7EXAMPLE", false},
        {"AKIA123456789EXAMPLE", false},
        {"AKIA1234567890EXAMPLE", true},  // the 16 after AKIA are 1234567890EXAMPL
        {"AKIAIOSFODNN7EXAMPLF", true},
        {"AKIAIOSFODNN7FXAMPLE", true},
        {"AKIAIOSFODNN7EXAMPLA", true},
        {"AKIAIOSFODNN7XXAMPLE", true},
        {"AKIAEXAMPLEEXAMPLEXX", true},
        {"AKIAEXAMPLEEXAMPLEX", false},  // 15 after AKIA: too short
    }));
    CAPTURE(key);
    CHECK(found(defaults(), " " + key + " ") == expected);
}

TEST_CASE("credentials: configured keys raw and JSON-escaped", "[credentials]") {
    const std::string key = R"(k3y/with"quote\and/slash)";
    const CredentialScanner scanner = make({key}, {}, false);
    auto [form, body, expected] = GENERATE_REF(table<std::string, std::string, bool>({
        {"raw", "leak " + key + " here", true},
        {"raw, inside a word", "xx" + key + "yy", true},  // a configured key needs no token edge
        {"JSON, / as is", R"({"k":"k3y/with\"quote\\and/slash"})", true},
        {"JSON, / escaped", R"({"k":"k3y\/with\"quote\\and\/slash"})", true},
        {"a prefix only", R"({"k":"k3y/with\"quote"})", false},
        {"another key", "k3y/with'quote", false},
    }));
    CAPTURE(form);
    CHECK(found(scanner, body) == expected);
}

TEST_CASE("credentials: default_patterns false keeps only keys and secret_patterns", "[credentials]") {
    const CredentialScanner scanner = make({"my-upstream-key-123"}, {"corp-[0-9]{8}"}, false);
    CHECK_FALSE(found(scanner, sk));
    CHECK(found(scanner, "x my-upstream-key-123 x"));
    CHECK(found(scanner, "id corp-12345678"));
    const CredentialScanner nothing = make({""}, {}, false);
    CHECK(nothing.empty());
    CHECK_FALSE(found(nothing, sk));
}

TEST_CASE("credentials: a bad secret pattern is named", "[credentials]") {
    auto built = CredentialScanner::build({}, Strings{"corp-[0-9]{8}", "(unclosed", "a*", "[z-a]"}, true);
    const auto* error = std::get_if<std::string>(&built);
    REQUIRE(error);
    CHECK_THAT(*error, Catch::Contains("boundary.secret_patterns[1]: invalid regular expression"));
    CHECK_THAT(*error, Catch::Contains("boundary.secret_patterns[2]: matches the empty string"));
    CHECK_THAT(*error, Catch::Contains("boundary.secret_patterns[3]: invalid regular expression"));
    CHECK_THAT(*error, !Catch::Contains("boundary.secret_patterns[0]"));
    CHECK(std::count(error->begin(), error->end(), '\n') == 2);  // one line per problem
}

TEST_CASE("credentials: the rule is reported, never the bytes", "[credentials]") {
    auto body = defaults().body_scan();
    REQUIRE(body.contains_secret("x " + ghp));
    CHECK(body.matched_rule() == "default GitHub token");
    CHECK_FALSE(body.contains_secret("nothing"));
    CHECK(body.matched_rule().empty());
    const CredentialScanner keyed = make({"abc-secret-key"}, {"corp-[0-9]{8}"}, true);
    auto scan = keyed.body_scan();
    REQUIRE(scan.contains_secret("abc-secret-key"));
    CHECK(scan.matched_rule() == "upstream key 0");
    REQUIRE(scan.contains_secret("corp-12345678"));
    CHECK(scan.matched_rule() == "boundary.secret_patterns[0]");
}

// ---- streams ---------------------------------------------------------------------

TEST_CASE("credentials: a key split across two events' raw bytes", "[credentials]") {
    const CredentialScanner scanner = make({"upstream-KEY-0123456789"}, {}, false);
    StreamScan scan = scanner.stream_scan();
    CHECK(scan.feed_bytes("data: {\"x\":\"upstream-KEY-01") == CredentialVerdict::clean);
    CHECK(scan.feed_bytes("23456789\"}\n\n") == CredentialVerdict::credential_in_response);
    CHECK(scan.matched_rule() == "upstream key 0");
    CHECK(scan.feed_bytes("more") == CredentialVerdict::credential_in_response);  // final
}

TEST_CASE("credentials: a secret split across answer-text fragments", "[credentials]") {
    const std::string tail = "BBBB" + chars40;
    auto [name, lines, endpoint, at] = GENERATE_REF(table<std::string, Strings, Endpoint, int>({
        {"chat content", {chunk("sk-proj-AAAA"), chunk(tail)}, Endpoint::chat_completions, 1},
        {"chat content in three", {chunk("sk-"), chunk("proj-AAAA"), chunk(tail)}, Endpoint::chat_completions, 2},
        {"chat content with an escape", {chunk("sk-\\u0070roj-AAAA"), chunk(tail)}, Endpoint::chat_completions, 1},
        {"chat: the text starts after a newline", {chunk("see:\\nsk-pr"), chunk("oj-" + tail)},
         Endpoint::chat_completions, 1},
        {"chat: reasoning does not join content",
         {chunk("abc", 0, "reasoning_content"), chunk("sk-proj-AAAA"), chunk(tail)}, Endpoint::chat_completions, 2},
        {"chat: two choices interleaved", {chunk("sk-proj-AAAA", 0), chunk("hello", 1), chunk(tail, 0)},
         Endpoint::chat_completions, 2},
        {"chat: second choice", {chunk("sk-proj-AAAA", 1), chunk("x", 0), chunk(tail, 1)},
         Endpoint::chat_completions, 2},
        {"chat refusal", {chunk("sk-proj-AAAA", 0, "refusal"), chunk(tail, 0, "refusal")},
         Endpoint::chat_completions, 1},
        {"chat tool call arguments",
         {R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"k\":\"sk-proj-AA"}}]}}]})",
          R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":")" + tail + R"("}}]}}]})"},
         Endpoint::chat_completions, 1},
        {"completions text",
         {R"({"choices":[{"text":"sk-proj-AAAA","index":0}]})", R"({"choices":[{"text":")" + tail + R"(","index":0}]})"},
         Endpoint::completions, 1},
        {"responses delta",
         {R"({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"sk-proj-AAAA"})",
          R"({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":")" + tail + R"("})"},
         Endpoint::responses, 1},
        {"messages text",
         {R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sk-proj-AAAA"}})",
          R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":")" + tail + R"("}})"},
         Endpoint::messages, 1},
        {"messages partial_json",
         {R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"k\": \"sk-proj-AA"}})",
          R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":")" + tail + R"("}})"},
         Endpoint::messages, 1},
        {"nothing split", {chunk("Hello"), chunk(" world")}, Endpoint::chat_completions, -1},
        {"a word then the tail", {chunk("risk-proj-AAAA"), chunk(tail)}, Endpoint::chat_completions, -1},
        {"joined to the text before it", {chunk("hi"), chunk("sk-proj-AAAA"), chunk(tail)}, Endpoint::chat_completions,
         -1},  // the client reads "hisk-proj-...": inside a longer word
        {"different choices never join", {chunk("sk-proj-AAAA", 0), chunk(tail, 1)}, Endpoint::chat_completions, -1},
    }));
    CAPTURE(name);
    CHECK(refused_at(make(), lines, endpoint) == at);
}

TEST_CASE("credentials: the raw bytes of the split case never hold the secret", "[credentials]") {
    // Proves the answer-text channel is what finds it.
    const std::string a = chunk("sk-proj-AAAA");
    const std::string b = chunk("BBBB" + chars40);
    StreamScan scan = defaults().stream_scan();
    CHECK(scan.feed_bytes("data: " + a + "\n\ndata: " + b + "\n\n") == CredentialVerdict::clean);
    CHECK_FALSE(defaults().contains_secret("data: " + a + "\n\ndata: " + b + "\n\n"));
}

TEST_CASE("credentials: events from sse::Reader, any read size", "[credentials]") {
    const std::string body = "data: " + chunk("hi ") + "\n\n" + ": keep-alive\n\n" + "data: " + chunk("sk-proj-AAAA") +
                             "\r\n\r\n" + "data: " + chunk("BBBB" + chars40) + "\n\n" + "data: [DONE]\n\n";
    for (std::size_t read : {body.size(), std::size_t{1}, std::size_t{7}}) {
        CAPTURE(read);
        modelproxy::sse::Reader reader;
        Inspector inspector;
        StreamScan scan = defaults().stream_scan();
        int event = 0, refused = -1;
        for (std::size_t at = 0; at < body.size(); at += read) {
            reader.feed(std::string_view(body).substr(at, read));
            while (const auto* e = reader.next()) {
                // As proxy/stream_events.cpp: the raw bytes, then each data line's fragments.
                scan.feed_bytes(e->raw);
                for (std::size_t i = 0; i < e->data.size(); ++i)
                    scan.feed_answer_text(inspector.inspect(*e, i, Endpoint::chat_completions).answer_fragments);
                if (scan.verdict() != CredentialVerdict::clean && refused < 0) refused = event;
                ++event;
            }
        }
        CHECK(refused == 3);  // the comment is event 1
    }
}

TEST_CASE("credentials: reset starts a fresh attempt", "[credentials]") {
    StreamScan scan = defaults().stream_scan();
    CHECK(refused_at(scan, {chunk("sk-proj-AAAA"), chunk("BBBB" + chars40)}) == 1);
    scan.reset();
    CHECK(scan.verdict() == CredentialVerdict::clean);
    CHECK(refused_at(scan, {chunk("BBBB" + chars40)}) == -1);  // no memory of the last attempt
    scan.reset();
    CHECK(refused_at(scan, {chunk("x " + ghp)}) == 0);
}

TEST_CASE("credentials: a secret pattern anchored at the end of the stream", "[credentials]") {
    const CredentialScanner scanner = make({}, {"TRAILER-[0-9]{4}$"}, false);
    StreamScan scan = scanner.stream_scan();
    CHECK(scan.feed_bytes("x TRAILER-12") == CredentialVerdict::clean);
    CHECK(scan.feed_bytes("34") == CredentialVerdict::clean);
    CHECK(scan.finish() == CredentialVerdict::credential_in_response);
}

TEST_CASE("answer-text fragments of each endpoint", "[credentials]") {
    using F = AnswerTextKey::Field;
    Inspector inspector;
    // The fragments as "index/sub/field=text", in line order.
    auto texts = [&](std::string_view line, Endpoint endpoint, std::string_view event = {}) {
        std::vector<std::string> out;
        for (const AnswerFragment& f : inspector.inspect(line, endpoint, event).answer_fragments)
            out.push_back(std::to_string(f.key.index) + "/" + std::to_string(f.key.sub) + "/" +
                          std::to_string(static_cast<int>(f.key.field)) + "=" + std::string(f.text));
        return out;
    };
    using V = std::vector<std::string>;
    const auto key = [](std::int64_t index, std::int64_t sub, F field) {
        return std::to_string(index) + "/" + std::to_string(sub) + "/" + std::to_string(static_cast<int>(field)) + "=";
    };

    SECTION("chat: every text member, each choice by its index, decoded") {
        CHECK(texts(R"({"choices":[{"delta":{"content":"a\"b\u00e9"},"index":3}]})", Endpoint::chat_completions) ==
              V{key(3, 0, F::content) + "a\"b\xc3\xa9"});  // index after delta
        CHECK(texts(R"({"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"r","reasoning":"s",)"
                    R"("refusal":"no","function_call":{"name":"f","arguments":"{}"}}},{"delta":{"content":"c"}}]})",
                    Endpoint::chat_completions) == V{key(0, 0, F::reasoning) + "r", key(0, 0, F::reasoning) + "s",
                                                     key(0, 0, F::refusal) + "no", key(0, 0, F::arguments) + "{}",
                                                     key(1, 0, F::content) + "c"});  // 2nd choice: its position
        CHECK(texts(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{"},"index":2},)"
                    R"({"function":{"arguments":"}"}}]}}]})",
                    Endpoint::chat_completions) == V{key(0, 2, F::arguments) + "{", key(0, 1, F::arguments) + "}"});
    }
    SECTION("chat: empty and non-string values are no fragments") {
        CHECK(texts(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})", Endpoint::chat_completions).empty());
        CHECK(texts(R"({"choices":[{"delta":{"content":null,"refusal":7}}]})", Endpoint::chat_completions).empty());
        CHECK(texts(R"({"choices":[{"text":"not on chat"}]})", Endpoint::chat_completions).empty());
    }
    SECTION("completions: choice text") {
        CHECK(texts(R"({"choices":[{"text":"Hi","index":1},{"delta":{"content":"not here"}}]})", Endpoint::completions) ==
              V{key(1, 0, F::text) + "Hi"});
    }
    SECTION("responses: the delta of a response.*.delta event, keyed by its type and indexes") {
        CHECK(texts(R"({"delta":"x","type":"response.reasoning_summary_text.delta","output_index":1,"summary_index":2})",
                    Endpoint::responses) == V{key(1, 2, F::reasoning_summary) + "x"});  // type after delta
        CHECK(texts(R"({"type":"response.output_text.delta","output_index":0,"content_index":1,"delta":"t"})",
                    Endpoint::responses) == V{key(0, 1, F::content) + "t"});
        CHECK(texts(R"({"type":"response.function_call_arguments.delta","output_index":2,"delta":"{"})",
                    Endpoint::responses) == V{key(2, 0, F::arguments) + "{"});
        CHECK(texts(R"({"type":"response.audio_transcript.delta","delta":"a"})", Endpoint::responses) ==
              V{key(0, 0, F::other_delta) + "a"});
        CHECK(texts(R"({"type":"response.output_text.done","delta":"x","text":"whole"})", Endpoint::responses).empty());
    }
    SECTION("messages: a content_block_delta's text, partial_json and thinking") {
        CHECK(texts(R"({"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"T"}})",
                    Endpoint::messages) == V{key(2, 0, F::content) + "T"});
        CHECK(texts(R"({"delta":{"partial_json":"{\"a"},"index":1,"type":"content_block_delta"})", Endpoint::messages) ==
              V{key(1, 0, F::arguments) + "{\"a"});
        CHECK(texts(R"({"type":"content_block_delta","index":0,"delta":{"thinking":"hm"}})", Endpoint::messages) ==
              V{key(0, 0, F::reasoning) + "hm"});
        CHECK(texts(R"({"type":"content_block_start","index":0,"delta":{"text":"x"}})", Endpoint::messages).empty());
    }
    SECTION("no fragments: [DONE], other endpoints") {
        CHECK(texts("[DONE]", Endpoint::chat_completions).empty());
        CHECK(texts(R"({"data":[{"embedding":"sk-"}]})", Endpoint::embeddings).empty());
        CHECK(texts(R"({"choices":[{"delta":{"content":"x"}}]})", Endpoint::other).empty());
    }
    SECTION("a line that does not parse keeps the text read before the fault") {
        // Section 7 refuses it on dialect routes; a generic route forwards
        // it, so its text is still scanned.
        CHECK(texts(R"({"choices":[{"delta":{"content":"sk-proj-AA"}}],"x":tru})", Endpoint::chat_completions) ==
              V{key(0, 0, F::content) + "sk-proj-AA"});
        CHECK(inspector.inspect(R"({"choices":[{"delta":{"content":"x"}}],"x":tru})", Endpoint::chat_completions).kind ==
              modelproxy::sse::DataKind::unparseable);
    }
}

TEST_CASE("credentials: a secret split across two events' answer text, through the Inspector", "[credentials]") {
    // The relay's path: one Inspector walk per data line, its fragments fed
    // to the second channel; escapes are decoded before the scan.
    const std::string tail = "BBBB" + chars40;
    auto [name, first, second, endpoint] = GENERATE_REF(table<std::string, std::string, std::string, Endpoint>({
        {"chat", chunk("sk-pr"), chunk("oj-" + tail), Endpoint::chat_completions},
        {"chat, escaped", chunk("sk\\u002dproj-AA"), chunk(tail), Endpoint::chat_completions},
        {"completions", R"({"choices":[{"index":0,"text":"sk-proj-AA"}]})",
         R"({"choices":[{"index":0,"text":")" + tail + R"("}]})", Endpoint::completions},
        {"responses", R"({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"sk-proj-AA"})",
         R"({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":")" + tail + R"("})",
         Endpoint::responses},
        {"messages", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sk-proj-AA"}})",
         R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":")" + tail + R"("}})",
         Endpoint::messages},
    }));
    CAPTURE(name);
    Inspector inspector;
    StreamScan scan = defaults().stream_scan();
    CHECK(scan.feed_bytes("data: " + first + "\n\n") == CredentialVerdict::clean);
    CHECK(scan.feed_answer_text(inspector.inspect(first, endpoint).answer_fragments) == CredentialVerdict::clean);
    CHECK(scan.feed_bytes("data: " + second + "\n\n") == CredentialVerdict::clean);  // not in the raw bytes
    CHECK(scan.feed_answer_text(inspector.inspect(second, endpoint).answer_fragments) ==
          CredentialVerdict::credential_in_response);
    CHECK(scan.matched_rule() == "default sk- key");
}

// ---- reuse of the thread's scratch and streams -----------------------

TEST_CASE("credentials: a new stream scan never continues a dropped one's partial match", "[credentials]") {
    // A dropped scan's streams are reset and kept for the next scan on the
    // thread: half a key fed before the drop must not complete with the
    // other half fed after it, in the raw bytes or an answer text.
    const CredentialScanner scanner = make({"key-0123456789abcdef"});
    for (int round = 0; round < 3; ++round) {
        {
            StreamScan dropped = scanner.stream_scan();
            CHECK(dropped.feed_bytes("data: key-01234") == CredentialVerdict::clean);
            CHECK(dropped.feed_answer_text(std::vector<AnswerFragment>{{AnswerTextKey{}, "key-01234"}}) ==
                  CredentialVerdict::clean);
        }
        StreamScan next = scanner.stream_scan();
        CHECK(next.feed_bytes("56789abcdef") == CredentialVerdict::clean);
        CHECK(next.feed_answer_text(std::vector<AnswerFragment>{{AnswerTextKey{}, "56789abcdef"}}) ==
              CredentialVerdict::clean);
        CHECK(next.finish() == CredentialVerdict::clean);
        // ...and still finds a whole key.
        CHECK(refused_at(scanner, {chunk("the key-0123456789abcdef")}) == 0);
    }
}

TEST_CASE("credentials: a pattern anchored at the end, scan after scan", "[credentials]") {
    // finish() reports end-of-stream matches and keeps the streams for the
    // next scan; each later scan must report them again.
    const CredentialScanner scanner = make({}, {"tail-[0-9]+$"}, false);
    for (int round = 0; round < 3; ++round) {
        StreamScan scan = scanner.stream_scan();
        CHECK(scan.feed_bytes("data: tail-12") == CredentialVerdict::clean);
        CHECK(scan.finish() == CredentialVerdict::credential_in_response);
        CHECK(scan.matched_rule() == "boundary.secret_patterns[0]");
        scan.reset();
        CHECK(scan.feed_bytes("data: tail-12 and more") == CredentialVerdict::clean);
        CHECK(scan.finish() == CredentialVerdict::clean);
    }
}

TEST_CASE("credentials: scans of two configs interleaved on one thread", "[credentials]") {
    // A reload builds new databases while scans of the old ones still run on
    // the same worker thread: its one scratch must serve both, and kept
    // streams must never cross from one config to the other.
    const CredentialScanner small = make({"old-key-0001"}, {}, false);
    const CredentialScanner large = make({"new-key-0002"}, {"custom-[a-z]{8}", "^begin-[0-9]+"}, true);
    for (int round = 0; round < 3; ++round) {
        StreamScan old_stream = small.stream_scan();
        StreamScan new_stream = large.stream_scan();
        CHECK(old_stream.feed_bytes("data: new-key-0002 " + sk) == CredentialVerdict::clean);
        CHECK(new_stream.feed_bytes("data: old-key-0001 custom-") == CredentialVerdict::clean);
        CHECK(small.contains_secret("old-key-0001"));
        CHECK_FALSE(small.contains_secret("new-key-0002 custom-abcdefgh " + sk));
        CHECK(large.contains_secret("custom-abcdefgh"));
        CHECK(large.contains_secret(sk));
        CHECK_FALSE(large.contains_secret("old-key-0001"));
        CHECK(new_stream.feed_bytes("abcdefgh") == CredentialVerdict::credential_in_response);
        CHECK(old_stream.feed_bytes("old-key-") == CredentialVerdict::clean);
        CHECK(old_stream.feed_bytes("0001") == CredentialVerdict::credential_in_response);
        CHECK(refused_at(small, {chunk("old-key-"), chunk("0001")}) == 1);
        CHECK(refused_at(large, {chunk("sk-proj-"), chunk(chars40)}) == 1);
    }
}

TEST_CASE("credentials: scans on several threads at once", "[credentials]") {
    // Each thread has its own scratch and kept streams; none is shared.
    const CredentialScanner scanner = make({"thread-key-123"});
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 100; ++i) {
                if (!scanner.contains_secret("x thread-key-123 y") || scanner.contains_secret("thread-key-12"))
                    ++wrong;
                StreamScan scan = scanner.stream_scan();
                scan.feed_bytes("thread-key-");
                if (scan.feed_bytes("123") != CredentialVerdict::credential_in_response) ++wrong;
                StreamScan clean = scanner.stream_scan();
                clean.feed_bytes("123 thread-key-");
                if (clean.finish() != CredentialVerdict::clean) ++wrong;
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    CHECK(wrong == 0);
}

namespace {

std::atomic<int> vectorscan_allocations{0};
void* counting_malloc(std::size_t size) {
    ++vectorscan_allocations;
    return std::malloc(size);
}
void plain_free(void* pointer) { std::free(pointer); }

}  // namespace

TEST_CASE("credentials: body and stream scans allocate nothing once the thread is warm", "[credentials]") {
    // No heap allocation per body or per stream. Vectorscan's own
    // allocators are counted (scratch and stream state); the first scans
    // size the thread's scratch and fill its kept streams.
    const CredentialScanner scanner = make({"warm-key-0001"}, {"tail-[0-9]+$"}, true);
    const auto one_turn = [&] {
        CHECK_FALSE(scanner.contains_secret(R"({"model":"gpt-4o","choices":[{"message":{"content":"hi"}}]})"));
        StreamScan scan = scanner.stream_scan();
        Inspector inspector;
        for (const std::string& line : {chunk("Hello"), chunk(" world", 1), chunk("!")}) {
            scan.feed_bytes("data: " + line + "\n\n");
            scan.feed_answer_text(inspector.inspect(line, Endpoint::chat_completions).answer_fragments);
        }
        CHECK(scan.finish() == CredentialVerdict::clean);
    };
    one_turn();
    one_turn();
    hs_set_scratch_allocator(counting_malloc, plain_free);
    hs_set_stream_allocator(counting_malloc, plain_free);
    vectorscan_allocations = 0;
    for (int i = 0; i < 20; ++i) one_turn();
    const int counted = vectorscan_allocations;
    hs_set_scratch_allocator(nullptr, nullptr);
    hs_set_stream_allocator(nullptr, nullptr);
    CHECK(counted == 0);
}

TEST_CASE("credentials: the raw channel per read refuses at the event the secret ends in", "[credentials]") {
    // What the stream relay does (feed_read per upstream read, event_passed
    // per event) refuses at the same event as feed_bytes per event, for any
    // read size: the clean events before it, in the same read or not, pass.
    const CredentialScanner scanner = make({"upstream-KEY-0123456789"}, {}, false);
    const Strings events = {"data: {\"a\":1}\n\n", ": keep-alive\n\n", "\n\ndata: {\"b\":2}\r\n\r\n",
                            "data: {\"x\":\"upstream-KEY-0123456789\"}\n\n", "data: {\"c\":3}\n\n"};
    std::string body;
    for (const std::string& e : events) body += e;
    {
        StreamScan scan = scanner.stream_scan();
        int refused = -1;
        for (std::size_t i = 0; i < events.size() && refused < 0; ++i)
            if (scan.feed_bytes(events[i]) != CredentialVerdict::clean) refused = static_cast<int>(i);
        REQUIRE(refused == 3);
    }
    for (std::size_t read : {body.size(), std::size_t{1}, std::size_t{7}, std::size_t{30}, std::size_t{64}}) {
        CAPTURE(read);
        modelproxy::sse::Reader reader;
        StreamScan scan = scanner.stream_scan();
        int event = 0, refused = -1;
        for (std::size_t at = 0; at < body.size() && refused < 0; at += read) {
            const std::string_view piece = std::string_view(body).substr(at, read);
            scan.feed_read(piece);
            reader.feed(piece);
            while (const auto* e = reader.next()) {
                if (scan.event_passed(e->raw.size(), true) != CredentialVerdict::clean) {
                    refused = event;
                    break;
                }
                ++event;
            }
        }
        CHECK(refused == 3);
        CHECK(scan.matched_rule().size() > 0);
    }
}

TEST_CASE("credentials: a secret in a tail the relay drops refuses nothing", "[credentials]") {
    // A broken stream's unterminated last event is not relayed (sse::event_counts):
    // a secret only there is not a leak, as with feed_bytes, which never saw it.
    const CredentialScanner scanner = make({"upstream-KEY-0123456789"}, {}, false);
    const std::string body = "data: {\"a\":1}\n\ndata: {\"x\":\"upstream-KEY-0123456789";
    modelproxy::sse::Reader reader;
    StreamScan scan = scanner.stream_scan();
    scan.feed_read(body);
    reader.feed(body);
    reader.finish();
    std::vector<bool> counted;
    while (const auto* e = reader.next()) {
        const bool counts = e->terminated;
        counted.push_back(counts);
        CHECK(scan.event_passed(e->raw.size(), counts) == CredentialVerdict::clean);
    }
    CHECK(counted == std::vector<bool>{true, false});
}

TEST_CASE("credentials: a secret that ends in a later read waits for its event", "[credentials]") {
    const CredentialScanner scanner = make({"upstream-KEY-0123456789"}, {}, false);
    StreamScan scan = scanner.stream_scan();
    const std::string first = "data: {\"a\":1}\n\ndata: {\"x\":\"upstream-KEY-01";
    const std::string second = "23456789\"}\n\ndata: {\"b\":2}\n\n";
    scan.feed_read(first);
    CHECK(scan.event_passed(15, true) == CredentialVerdict::clean);  // data: {"a":1}\n\n
    scan.feed_read(second);
    CHECK(scan.verdict() == CredentialVerdict::clean);  // held, not yet charged
    const std::size_t leaking = first.size() - 15 + second.find("\n\n") + 2;
    CHECK(scan.event_passed(leaking, true) == CredentialVerdict::credential_in_response);
    scan.reset();
    CHECK(scan.verdict() == CredentialVerdict::clean);
    scan.feed_read("data: {\"b\":2}\n\n");
    CHECK(scan.event_passed(15, true) == CredentialVerdict::clean);  // nothing held over the reset
}
