#include "request/digest.hpp"

#include <catch2/catch.hpp>
#include <openssl/evp.h>

#include <string>
#include <thread>
#include <vector>

using modelproxy::request::payload_digest;
using modelproxy::request::replay_matches;

TEST_CASE("the payload digest is SHA-256 over method, target and body", "[digest]") {
    // sha256("POST\n/v1/chat/completions\n{}"), computed independently with
    // `printf 'POST\n/v1/chat/completions\n{}' | sha256sum`.
    CHECK(payload_digest("POST", "/v1/chat/completions", "{}") ==
          "sha256:eddd36aa377c75b2cf6b105236749ded8b7888d76dfbb613b7019943050ddac4");
}

TEST_CASE("the digest is the same whether method and target go in as one piece or several", "[digest]") {
    // Short method + target lines are hashed as one update, long ones piece
    // by piece: across that boundary, each digest must equal SHA-256 of the
    // whole text, computed here in one call.
    const std::string body = R"({"model":"m"})";
    for (std::size_t n : {1u, 400u, 505u, 506u, 507u, 508u, 509u, 510u, 600u, 5000u}) {
        const std::string target = "/v1/" + std::string(n, 'x');
        const std::string text = "POST\n" + target + "\n" + body;
        unsigned char md[32];
        std::size_t len = 0;
        REQUIRE(EVP_Q_digest(nullptr, "SHA256", nullptr, text.data(), text.size(), md, &len) == 1);
        std::string expected = "sha256:";
        for (std::size_t i = 0; i < len; ++i) {
            static constexpr char hex[] = "0123456789abcdef";
            expected += hex[md[i] >> 4];
            expected += hex[md[i] & 15];
        }
        INFO("target of " << target.size() << " bytes");
        CHECK(payload_digest("POST", target, body) == expected);
    }
}

TEST_CASE("the digest changes with any byte of method, target or body", "[digest]") {
    const auto base = payload_digest("POST", "/v1/chat/completions", R"({"model":"m"})");
    CHECK(payload_digest("PUT", "/v1/chat/completions", R"({"model":"m"})") != base);
    CHECK(payload_digest("POST", "/v1/chat/completion", R"({"model":"m"})") != base);
    CHECK(payload_digest("POST", "/v1/chat/completions", R"({"model":"n"})") != base);
    CHECK(payload_digest("POST", "/v1/chat/completions", R"({"model":"m"} )") != base);
}

TEST_CASE("the replay guard passes an identical payload", "[digest]") {
    const auto first = payload_digest("POST", "/v1/embeddings", R"({"model":"e","input":"x"})");
    CHECK(replay_matches(first, "POST", "/v1/embeddings", R"({"model":"e","input":"x"})"));
}

TEST_CASE("the replay guard refuses a payload that changed after attempt 1", "[digest]") {
    const auto first = payload_digest("POST", "/v1/embeddings", R"({"model":"e","input":"x"})");
    CHECK_FALSE(replay_matches(first, "POST", "/v1/embeddings", R"({"model":"e","input":"y"})"));
    CHECK_FALSE(replay_matches(first, "POST", "/v1/embeddings?x=1", R"({"model":"e","input":"x"})"));
    CHECK_FALSE(replay_matches("sha256:", "POST", "/v1/embeddings", R"({"model":"e","input":"x"})"));
}

TEST_CASE("the digest is the same from call to call and on every thread", "[digest]") {
    // Nothing of one digest may carry into the next (each thread reuses one
    // hashing context): many in a row, interleaved with other payloads, on
    // several threads at once, all give the known value.
    const std::string known = "sha256:eddd36aa377c75b2cf6b105236749ded8b7888d76dfbb613b7019943050ddac4";
    const auto run = [&](int rounds) {
        int right = 0;
        std::string out;
        for (int i = 0; i < rounds; ++i) {
            payload_digest(out, "POST", "/v1/embeddings", std::string(static_cast<std::size_t>(i), 'x'));
            payload_digest(out, "POST", "/v1/chat/completions", "{}");
            right += out == known ? 1 : 0;
        }
        return right;
    };
    std::vector<int> right(4, 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < right.size(); ++t) threads.emplace_back([&, t] { right[t] = run(200); });
    for (std::thread& thread : threads) thread.join();
    for (const int r : right) CHECK(r == 200);
    CHECK(run(3) == 3);
}

TEST_CASE("the digest written into a reused string equals the returned one", "[digest]") {
    std::string out = "left over from an earlier turn, longer than any digest: " + std::string(100, 'x');
    payload_digest(out, "POST", "/v1/chat/completions", "{}");
    CHECK(out == payload_digest("POST", "/v1/chat/completions", "{}"));
    CHECK(out == "sha256:eddd36aa377c75b2cf6b105236749ded8b7888d76dfbb613b7019943050ddac4");
}
