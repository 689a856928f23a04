#include "proxy/digest.hpp"

#include <catch2/catch.hpp>

using modelproxy::proxy::payload_digest;
using modelproxy::proxy::replay_matches;

TEST_CASE("the payload digest is SHA-256 over method, target and body", "[digest]") {
    // sha256("POST\n/v1/chat/completions\n{}"), computed independently with
    // `printf 'POST\n/v1/chat/completions\n{}' | sha256sum`.
    CHECK(payload_digest("POST", "/v1/chat/completions", "{}") ==
          "sha256:eddd36aa377c75b2cf6b105236749ded8b7888d76dfbb613b7019943050ddac4");
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
