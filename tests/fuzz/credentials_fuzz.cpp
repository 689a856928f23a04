// libFuzzer target: the response-side credential scan (docs/behaviour.md section 8). The
// input picks a secret (a configured key or a default shape), how each of
// its characters is spelled (raw, a short JSON escape, \u00XX in either hex
// case), where the stream's reads are cut and where the secret is split
// between two events, and gives the bytes around it. Whatever those bytes
// are, the scan must refuse:
//  - the whole body (BodyScan, any Content-Type: the proxy ignores it);
//  - the body as one SSE data line, read as the relay reads it
//    (proxy/stream_events.cpp) in reads cut anywhere;
//  - the secret split between two chat events' answer text, each half
//    spelled on its own.
// Also: the decoder never writes past its input's length (ASan: the buffer
// is exactly that long), and arbitrary bytes never crash a scan.
#include "check.hpp"

#include "policy/endpoint.hpp"
#include "sse/credentials.hpp"
#include "sse/inspect.hpp"
#include "sse/json_unescape.hpp"
#include "sse/reader.hpp"
#include "tests/unit/sse/relay_scan.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

using modelproxy::policy::Endpoint;
using modelproxy::sse::CredentialScanner;
using modelproxy::sse::CredentialVerdict;
using modelproxy::sse::Event;
using modelproxy::sse::Inspector;
using modelproxy::sse::LineMemo;
using modelproxy::sse::Reader;
using modelproxy::sse::StreamScan;

const std::vector<std::string> keys = {"mpk-Zq7LmN3pR8sT1vW4xY6zA9bC2dE5fG8h", "b64/Key+With/Slashes=0123456789abcd/x==",
                                       "odd\"quote\\slash\tkey-42-0123456789"};

const CredentialScanner& scanner() {
    static const CredentialScanner built = [] {
        auto made = CredentialScanner::build(keys, std::vector<std::string>{"corp-[0-9]{8}"}, true);
        if (!std::holds_alternative<CredentialScanner>(made)) std::abort();
        return std::get<CredentialScanner>(std::move(made));
    }();
    return built;
}

// Reads the input's bytes one at a time; zeros once it is used up.
struct Input {
    const std::uint8_t* at;
    const std::uint8_t* end;
    std::uint8_t byte() { return at < end ? *at++ : 0; }
    std::string_view take(std::size_t n) {
        n = std::min<std::size_t>(n, static_cast<std::size_t>(end - at));
        const std::string_view out(reinterpret_cast<const char*>(at), n);
        at += n;
        return out;
    }
};

std::string secret_of(Input& in) {
    constexpr std::string_view alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const auto run = [&](std::size_t n, std::string_view alphabet) {
        std::string out;
        for (std::size_t i = 0; i < n; ++i) out += alphabet[in.byte() % alphabet.size()];
        return out;
    };
    switch (in.byte() % 8) {
        case 0: return keys[0];
        case 1: return keys[1];
        case 2: return keys[2];
        case 3: return "sk-proj-" + run(40 + in.byte() % 8, alnum);
        case 4: return "AKIA" + run(15, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + "Q";
        case 5: return "ghp_" + run(36, alnum);
        case 6: return "-----BEGIN EC PRIVATE KEY-----\n" + run(40, alnum) + "\r\n" + run(24, alnum);
        default: return "corp-" + run(8, "0123456789");
    }
}

// `text` as the inside of a JSON string, each character spelled as the
// input's next byte says (raw where JSON allows it, a short escape where
// there is one, else \u00XX in either case).
std::string spelled(std::string_view text, Input& in) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        const unsigned pick = in.byte();
        const bool must = c == '"' || c == '\\' || u < 0x20;
        if (pick % 3 == 0 && !must) {
            out += c;
        } else if (pick % 3 == 1 && (c == '"' || c == '\\' || c == '/' || c == '\t')) {
            out += '\\';
            out += c == '\t' ? 't' : c;
        } else {
            char escape[7];
            std::snprintf(escape, sizeof escape, pick & 4 ? "\\u%04x" : "\\u%04X", u);
            out += escape;
        }
    }
    return out;
}

// Bytes that stay on one SSE line (no CR, no LF).
std::string one_line(std::string_view bytes) {
    std::string out(bytes);
    for (char& c : out)
        if (c == '\r' || c == '\n') c = ' ';
    return out;
}

// Printable ASCII without `"` and `\`: text that is a JSON string as it is.
std::string plain(std::string_view bytes) {
    std::string out(bytes);
    for (char& c : out) {
        c = static_cast<char>(' ' + static_cast<unsigned char>(c) % 95);
        if (c == '"' || c == '\\') c = ' ';
    }
    return out;
}

std::string chunk_event(std::string_view content) {
    return R"(data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":")" +
           std::string(content) + R"("},"finish_reason":null}]})"
                                  "\n\n";
}

bool relay_refuses(std::string_view stream, const std::vector<std::size_t>& cuts) {
    return modelproxy::sse::test::relay_refuses(scanner(), stream, cuts);
}

std::vector<std::size_t> cuts_of(Input& in, std::size_t size) {
    std::vector<std::size_t> cuts;
    for (std::size_t at = 1 + in.byte() % 64; at < size && cuts.size() < 16; at += 1 + in.byte() % 64)
        cuts.push_back(at);
    return cuts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    // The decoder over the raw input, into a buffer exactly as long.
    {
        const std::string_view text(reinterpret_cast<const char*>(bytes), size);
        const std::unique_ptr<char[]> out(new char[size + 1]);
        const char* end = modelproxy::sse::unescape_json(text, out.get());
        MP_FUZZ_CHECK(end >= out.get() && static_cast<std::size_t>(end - out.get()) <= size);
        MP_FUZZ_CHECK(modelproxy::sse::holds_escape(text) || std::string_view(out.get(), size) == text);
        scanner().contains_secret(text);
        scanner().key_in_body(text);
    }

    Input in{bytes, bytes + size};
    const std::string secret = secret_of(in);
    const std::string written = spelled(secret, in);
    const std::size_t split = 1 + in.byte() % (secret.size() - 1);
    const std::size_t prefix_size = in.byte() % 128;
    const std::string_view prefix = in.take(prefix_size);
    const std::string_view suffix = in.take(in.byte() % 128);

    // A space on each side: no escape in the surrounding bytes reaches into
    // the secret, and a default shape starts a whole token.
    const std::string body = std::string(prefix) + " " + written + " " + std::string(suffix);
    MP_FUZZ_CHECK_THAT(scanner().contains_secret(body), "a spelled secret in a body passed the scan");

    const std::string stream = "data: " + one_line(prefix) + " " + written + " " + one_line(suffix) + "\n\n";
    MP_FUZZ_CHECK_THAT(relay_refuses(stream, cuts_of(in, stream.size())),
                       "a spelled secret in one event passed the stream scan");

    const std::string first = chunk_event(plain(prefix) + " " + spelled(secret.substr(0, split), in));
    const std::string second = chunk_event(spelled(secret.substr(split), in) + " " + plain(suffix));
    const std::string split_stream = chunk_event("Hi") + first + second + "data: [DONE]\n\n";
    MP_FUZZ_CHECK_THAT(relay_refuses(split_stream, cuts_of(in, split_stream.size())),
                       "a secret split across two events' answer text passed the stream scan");
    return 0;
}
