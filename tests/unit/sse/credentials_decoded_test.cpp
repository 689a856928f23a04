// The credential scan's decoded pass and its key-only scans (docs/behaviour.md section 8),
// and a property test of the response-side key scan: for any body and any
// way of spelling a secret in it (raw, JSON-escaped, \u-escaped in any mix
// of characters, split across events or across reads at any position), the
// scan refuses.
#include "sse/credentials.hpp"

#include "sse/inspect.hpp"
#include "sse/reader.hpp"
#include "tests/unit/sse/relay_scan.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

using modelproxy::policy::Endpoint;
using modelproxy::sse::CredentialScanner;
using modelproxy::sse::CredentialVerdict;
using modelproxy::sse::Event;
using modelproxy::sse::Inspector;
using modelproxy::sse::LineMemo;
using modelproxy::sse::Reader;
using modelproxy::sse::StreamScan;

namespace {

using Strings = std::vector<std::string>;

CredentialScanner make(const Strings& keys, const Strings& patterns = {}, bool defaults = true) {
    auto built = CredentialScanner::build(keys, patterns, defaults);
    if (auto* error = std::get_if<std::string>(&built)) FAIL(*error);
    return std::move(std::get<CredentialScanner>(built));
}

// Configured keys of several alphabets: letters and digits; base64 with `/`
// (which JSON may write `\/`); and bytes JSON must escape (`"`, `\`, a tab).
const Strings keys = {"mpk-Zq7LmN3pR8sT1vW4xY6zA9bC2dE5fG8h", "b64/Key+With/Slashes=0123456789abcd/x==",
                      "odd\"quote\\slash\tkey-42-0123456789"};

const CredentialScanner& scanner() {
    static const CredentialScanner built = make(keys, {"corp-[0-9]{8}"}, true);
    return built;
}

// `text` as the inside of a JSON string: each byte raw (where JSON allows
// it), by its short escape, or as \u00XX in either hex case, chosen by
// `random` (way 0: raw where allowed; 1: all \u; 2: a random mix).
std::string spelled(std::string_view text, std::mt19937& random, int way) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        const bool must = c == '"' || c == '\\' || u < 0x20;
        const unsigned pick = way == 0 ? 0 : way == 1 ? 2 : random() % 3;
        if (pick == 0 && !must) {
            out += c;
        } else if (pick <= 1 && (c == '"' || c == '\\' || c == '/' || c == '\t' || c == '\n')) {
            out += '\\';
            out += c == '\t' ? 't' : c == '\n' ? 'n' : c;
        } else {
            char escape[7];
            std::snprintf(escape, sizeof escape, random() % 2 ? "\\u%04x" : "\\u%04X", u);
            out += escape;
        }
    }
    return out;
}

std::string random_of(std::string_view alphabet, std::size_t n, std::mt19937& random) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += alphabet[random() % alphabet.size()];
    return out;
}

// A secret the scanner must find: a configured key, or an instance of a
// default shape (section 8's list), or of the configured secret pattern.
std::string any_secret(std::mt19937& random) {
    constexpr std::string_view alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    constexpr std::string_view upper_digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    constexpr std::string_view key_chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    constexpr std::string_view base64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    switch (random() % 9) {
        case 0:
        case 1:
        case 2: return keys[random() % keys.size()];
        case 3: return "sk-proj-" + random_of(key_chars, 40 + random() % 20, random);
        case 4: return "AKIA" + random_of(upper_digits, 15, random) + "Q";
        case 5: return "ghp_" + random_of(alnum, 36, random);
        case 6: return "nvapi-" + random_of(alnum, 40 + random() % 10, random);
        case 7:
            return "-----BEGIN RSA PRIVATE KEY-----\n" + random_of(base64, 32, random) + "\r\n" +
                   random_of(base64, 32, random);
        default: return "corp-" + random_of("0123456789", 8, random);
    }
}

// Clean text around the secret: words, spaces, escapes that decode to
// separators, never a letter run long enough to be a secret.
std::string filler(std::mt19937& random) {
    static const Strings words = {"the", "answer", "is", " ", "\\n", "\\u00e9t\\u00e9", "\\\"", "42", ", ", "\\/"};
    std::string out;
    for (std::size_t i = random() % 6; i > 0; --i) out += words[random() % words.size()];
    return out;
}

// A chat chunk data line whose content is `content` and whose
// system_fingerprint is `other` (both already JSON-escaped).
std::string chunk_line(std::string_view content, std::string_view other = "fp_1") {
    return R"({"id":"c1","object":"chat.completion.chunk","model":"m","system_fingerprint":")" + std::string(other) +
           R"(","choices":[{"index":0,"delta":{"content":")" + std::string(content) + R"("},"finish_reason":null}]})";
}
std::string chunk_event(std::string_view content, std::string_view other = "fp_1") {
    return "data: " + chunk_line(content, other) + "\n\n";
}

bool relay_refuses(std::string_view stream, const std::vector<std::size_t>& cuts) {
    return modelproxy::sse::test::relay_refuses(scanner(), stream, cuts);
}

}  // namespace

TEST_CASE("credentials: a key spelled with any mix of escapes is found in a body", "[credentials][decoded]") {
    const CredentialScanner only_key = make({"b64/Key+With/Slashes=0123456789abcd/x=="}, {}, false);
    auto [name, spelling] = GENERATE(table<std::string, std::string>({
        {"every character \\u-escaped", R"(\u0062\u0036\u0034\u002f\u004b\u0065\u0079\u002b\u0057\u0069\u0074)"
                                        R"(\u0068\u002f\u0053\u006c\u0061\u0073\u0068\u0065\u0073\u003d\u0030)"
                                        R"(\u0031\u0032\u0033\u0034\u0035\u0036\u0037\u0038\u0039\u0061\u0062)"
                                        R"(\u0063\u0064\u002f\u0078\u003d\u003d)"},
        {"one character \\u-escaped", R"(b64/Key+With/Slashes=0123456789\u0061bcd/x==)"},
        {"upper-case hex", R"(b64/Key+With/Slashes=0123456789\u0061bcd\u002F\u0078==)"},
        {"some slashes \\/", R"(b64\/Key+With/Slashes=0123456789abcd\/x==)"},
    }));
    CAPTURE(name);
    const std::string body = R"({"message":"here: )" + spelling + R"(!"})";
    CHECK(only_key.contains_secret(body));
    CHECK(only_key.key_in_body(body));
    // The raw bytes alone never held it: the decoded pass found it.
    CHECK_FALSE(only_key.key_in_head(body));
}

TEST_CASE("credentials: each default shape \\u-escaped is found", "[credentials][decoded]") {
    const std::string secret = GENERATE(as<std::string>{}, "sk-proj-" + std::string(44, 'Q'), "AKIAZ7Q2LMNOPQRSTUVW",
                                        "ghp_" + std::string(36, 'z'), "nvapi-" + std::string(41, '9'),
                                        "-----BEGIN PRIVATE KEY-----\n" + std::string(64, 'M'));
    std::mt19937 random(3);
    const std::string body = R"({"a":"x )" + spelled(secret, random, 1) + R"("})";
    CAPTURE(body);
    CHECK(scanner().contains_secret(body));
    StreamScan scan = scanner().stream_scan();
    CHECK(scan.check_decoded_line(body) == CredentialVerdict::credential_in_response);
    CHECK(scan.matched_rule().size() > 0);
}

TEST_CASE("credentials: a decoded secret inside a longer word is not a whole token", "[credentials][decoded]") {
    // The decoded pass keeps the whole-token rule: a body with escapes is
    // scanned again, and a shape inside a longer word still passes.
    const std::string body = R"({"a":"risk-free-sk-proj-)" + std::string(44, 'Q') + R"(\n"})";
    CHECK_FALSE(scanner().contains_secret(body));
}

TEST_CASE("credentials: clean lines pass the decoded pass, with or without escapes", "[credentials][decoded]") {
    StreamScan scan = scanner().stream_scan();
    CHECK(scan.check_decoded_line(chunk_line("Hello")) == CredentialVerdict::clean);
    CHECK(scan.check_decoded_line(chunk_line(R"(line\none \"quoted\" \u00e9t\u00e9 a\/b)")) ==
          CredentialVerdict::clean);
    CHECK(scan.check_decoded_line("[DONE]") == CredentialVerdict::clean);
    CHECK_FALSE(scanner().contains_secret(chunk_line(R"(line\none \"quoted\" \u00e9t\u00e9)")));
}

TEST_CASE("credentials: heads and non-2xx bodies are searched for the keys only", "[credentials][decoded]") {
    const std::string shape = "sk-proj-" + std::string(44, 'Q');
    CHECK(scanner().key_in_head("OKx-echo-authBearer " + keys[0] + "content-typeapplication/json"));
    CHECK_FALSE(scanner().key_in_head("OKx-shape" + shape + "x-corpcorp-12345678"));
    CHECK(scanner().key_in_body(R"({"error":{"message":"Incorrect API key provided: )" + keys[0] + R"("}})"));
    std::mt19937 random(5);
    CHECK(scanner().key_in_body(R"({"error":{"message":")" + spelled(keys[2], random, 1) + R"("}})"));
    CHECK_FALSE(scanner().key_in_body(R"({"error":{"message":"bad key )" + shape + R"("}})"));
    CHECK(scanner().has_keys());

    const CredentialScanner no_keys = make({}, {}, true);
    CHECK_FALSE(no_keys.has_keys());
    CHECK_FALSE(no_keys.key_in_head("anything " + keys[0]));
    CHECK_FALSE(no_keys.key_in_body("anything " + keys[0]));
}

TEST_CASE("credentials property: any spelling of a secret in a body is refused", "[credentials][property]") {
    std::mt19937 random(20240801);
    for (int round = 0; round < 3000; ++round) {
        const std::string secret = any_secret(random);
        const std::string written = spelled(secret, random, static_cast<int>(random() % 3));
        const std::string body = R"({"id":")" + filler(random) + R"(","choices":[{"message":{"content":")" +
                                 filler(random) + " " + written + " " + filler(random) + R"("}}],"n":1})";
        CAPTURE(round, body);
        REQUIRE(scanner().contains_secret(body));
    }
}

TEST_CASE("credentials property: a spelled secret in one event is refused however the reads fall",
          "[credentials][property]") {
    // In the answer text or in another member, each read cut at every
    // position of the leaking event (one cut), and at random (several).
    std::mt19937 random(77);
    for (int round = 0; round < 60; ++round) {
        const std::string secret = any_secret(random);
        const std::string written = spelled(secret, random, static_cast<int>(random() % 3));
        const std::string clean = chunk_event("Hello") + chunk_event(R"( wor\nld)");
        const std::string leaking = random() % 2 ? chunk_event(filler(random) + " " + written + " ")
                                                 : chunk_event(" there", filler(random) + " " + written);
        const std::string stream = clean + leaking + chunk_event("!") + "data: [DONE]\n\n";
        CAPTURE(round, stream);
        REQUIRE(relay_refuses(stream, {}));
        for (std::size_t cut = clean.size(); cut <= clean.size() + leaking.size(); ++cut) {
            CAPTURE(cut);
            REQUIRE(relay_refuses(stream, {cut}));
        }
        for (int k = 0; k < 10; ++k) {
            std::vector<std::size_t> cuts;
            for (std::size_t at = 1 + random() % 40; at < stream.size(); at += 1 + random() % 40) cuts.push_back(at);
            CAPTURE(cuts);
            REQUIRE(relay_refuses(stream, cuts));
        }
    }
}

TEST_CASE("credentials property: a secret split across two events' answer text at any position is refused",
          "[credentials][property]") {
    // Each part spelled on its own (an escape never straddles two JSON
    // strings), split at every position, and the stream read whole or
    // event by event.
    std::mt19937 random(99);
    for (int round = 0; round < 40; ++round) {
        const std::string secret = any_secret(random);
        const int way = static_cast<int>(random() % 3);
        for (std::size_t split = 1; split < secret.size(); ++split) {
            const std::string first = chunk_event(filler(random) + " " + spelled(secret.substr(0, split), random, way));
            const std::string second = chunk_event(spelled(secret.substr(split), random, way) + " ok");
            const std::string stream = chunk_event("Hello") + first + second + "data: [DONE]\n\n";
            CAPTURE(round, split, stream);
            REQUIRE(relay_refuses(stream, {}));
            const std::size_t a = chunk_event("Hello").size();
            REQUIRE(relay_refuses(stream, {a, a + first.size(), a + first.size() + second.size()}));
        }
    }
}

TEST_CASE("credentials property: clean bodies and streams with escapes pass", "[credentials][property]") {
    // The decoded pass must not refuse what holds no secret.
    std::mt19937 random(123);
    for (int round = 0; round < 500; ++round) {
        const std::string text = filler(random) + " " + filler(random);
        CAPTURE(text);
        CHECK_FALSE(scanner().contains_secret(chunk_line(text)));
        CHECK_FALSE(relay_refuses(chunk_event("Hello") + chunk_event(text, filler(random)) + "data: [DONE]\n\n", {}));
    }
}
