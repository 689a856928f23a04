#include "sse/inspect.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using modelproxy::policy::Endpoint;
using modelproxy::sse::body_identity;
using modelproxy::sse::parse_error_body;

// ---- parse_error_body (non-2xx bodies) ----------------------------------------

TEST_CASE("error body: OpenAI shape") {
    const auto e = parse_error_body(R"({"error":{"message":"m","type":"server_error","param":null,"code":"boom"}})");
    REQUIRE(e);
    CHECK(e->type == "server_error");
    CHECK(e->code == "boom");
    CHECK_FALSE(e->code_int);
}

TEST_CASE("error body: integer code") {
    const auto e = parse_error_body(R"({"error":{"code":429,"message":"m"}})");
    REQUIRE(e);
    CHECK(e->code_int == 429);
}

TEST_CASE("error body: Anthropic shape with request_id") {
    const auto e = parse_error_body(R"({"type":"error","error":{"type":"overloaded_error","message":"m"},"request_id":"r"})");
    REQUIRE(e);
    CHECK(e->type == "overloaded_error");
}

TEST_CASE("error body: Azure inner code") {
    const auto e = parse_error_body(
        R"({"error":{"message":"m","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}})");
    REQUIRE(e);
    CHECK(e->code == "content_filter");
    CHECK(e->inner_code == "ResponsibleAIPolicyViolation");
    CHECK(e->type.empty());
}

TEST_CASE("error body: an error string declares nothing but is an error") {
    const auto e = parse_error_body(R"({"error":"Not Found"})");
    REQUIRE(e);
    CHECK(e->code.empty());
}

TEST_CASE("error body: no error member") { CHECK_FALSE(parse_error_body(R"({"detail":"x"})")); }

TEST_CASE("error body: not JSON") { CHECK_FALSE(parse_error_body("<html>502 Bad Gateway</html>")); }

TEST_CASE("error body: a JSON array") { CHECK_FALSE(parse_error_body(R"([{"error":{}}])")); }

TEST_CASE("error body: empty") { CHECK_FALSE(parse_error_body("")); }

// ---- body_identity (non-stream 200 bodies) ----------------------------------

TEST_CASE("body identity: chat completion") {
    const auto id = body_identity(
        R"({"id":"c","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]})",
        Endpoint::chat_completions);
    CHECK(id.json_object);
    CHECK(id.models == std::vector<std::string>{"gpt-4o-mini-2024-07-18"});
}

TEST_CASE("body identity: embeddings") {
    const auto id = body_identity(R"({"object":"list","data":[{"embedding":[0.1,-2e-3]}],"model":"text-embedding-3-small"})",
                                  Endpoint::embeddings);
    CHECK(id.models == std::vector<std::string>{"text-embedding-3-small"});
}

TEST_CASE("body identity: messages") {
    const auto id = body_identity(R"({"id":"m","type":"message","model":"claude-3-5-haiku","content":[]})", Endpoint::messages);
    CHECK(id.models == std::vector<std::string>{"claude-3-5-haiku"});
}

TEST_CASE("body identity: responses") {
    const auto id = body_identity(R"({"id":"r","object":"response","model":"gpt-4o","output":[]})", Endpoint::responses);
    CHECK(id.models == std::vector<std::string>{"gpt-4o"});
}

TEST_CASE("body identity: a JSON object without a model") {
    const auto id = body_identity(R"({"id":"c"})", Endpoint::chat_completions);
    CHECK(id.json_object);
    CHECK(id.models.empty());
}

TEST_CASE("body identity: an empty model names none") {
    CHECK(body_identity(R"({"model":""})", Endpoint::chat_completions).models.empty());
}

TEST_CASE("body identity: not an object") {
    CHECK_FALSE(body_identity(R"(["gpt-4o"])", Endpoint::chat_completions).json_object);
    CHECK_FALSE(body_identity("data: {}\n\n", Endpoint::chat_completions).json_object);
    CHECK_FALSE(body_identity(R"({"model":"m"} trailing)", Endpoint::chat_completions).json_object);
}

TEST_CASE("body identity: one Inspector, body after body, answers each body alone") {
    // The worker's Inspector answers into storage it reuses: no
    // model, flag or usage of an earlier body may show in a later answer.
    modelproxy::sse::Inspector inspector;
    using Models = std::vector<std::string>;
    const std::string two = R"({"model":"gpt-4o-2024-08-06","response":{"model":"gpt-4o-mini-2024-07-18"}})";
    const std::string one_with_usage = R"({"model":"gpt-4o-mini-2024-07-18","usage":{"total_tokens":7}})";
    const std::string short_model = R"({"model":"o3"})";

    const auto* first = &inspector.body_identity(two, Endpoint::responses);
    CHECK(first->json_object);
    CHECK(first->models == Models{"gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"});
    CHECK_FALSE(first->usage.present());

    const auto& second = inspector.body_identity(one_with_usage, Endpoint::chat_completions);
    CHECK(second.models == Models{"gpt-4o-mini-2024-07-18"});
    CHECK(second.usage.total_tokens == 7u);

    const auto& third = inspector.body_identity(R"(["gpt-4o"])", Endpoint::chat_completions);
    CHECK_FALSE(third.json_object);
    CHECK(third.models.empty());
    CHECK_FALSE(third.usage.present());

    const auto& fourth = inspector.body_identity(short_model, Endpoint::chat_completions);
    CHECK(fourth.json_object);
    CHECK(fourth.models == Models{"o3"});

    CHECK(inspector.body_identity(R"({"id":"c"})", Endpoint::chat_completions).models.empty());
    CHECK(inspector.body_identity(two, Endpoint::responses).models == body_identity(two, Endpoint::responses).models);
}
