// request/routing.hpp: section 4's routing table.
#include "request/routing.hpp"
#include "bodies.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <utility>
#include <variant>

using namespace modelproxy;
using namespace modelproxy::request;
using namespace modelproxy::test;

namespace {

config::Model model(std::string name, std::string upstream) {
    config::Model m;
    m.name = std::move(name);
    m.upstream_model = std::move(upstream);
    m.accept = {m.upstream_model};
    return m;
}

// openai: gpt-4o (same upstream name), fast -> gpt-4o-mini; anthropic:
// claude; with_wildcard adds a "*" route named "rest".
config::Config make_config(bool with_wildcard) {
    config::Config c;
    config::Route openai;
    openai.name = "openai";
    openai.upstream.base_path = "/v1";
    openai.models = {model("gpt-4o", "gpt-4o"), model("fast", "gpt-4o-mini")};
    config::Route anthropic;
    anthropic.name = "anthropic";
    anthropic.upstream.base_path = "/v1";
    anthropic.models = {model("claude", "claude-3-5-sonnet")};
    c.routes = {openai, anthropic};
    if (with_wildcard) {
        config::Route rest;
        rest.name = "rest";
        rest.wildcard = true;
        c.routes.push_back(rest);
    }
    return c;
}

// The expected decision: a route name (empty for a refusal), the client model
// the route serves (empty for "*"), the rewrite, or the refusal's code.
struct Expect {
    std::string route;
    std::string model;
    std::string rewrite;
    std::string refusal;
};

Expect to(std::string route, std::string model = "", std::string rewrite = "") {
    return {std::move(route), std::move(model), std::move(rewrite), ""};
}
Expect refused(std::string code) { return {"", "", "", std::move(code)}; }

const std::string json_type = "application/json";
const std::string mp_type = "multipart/form-data; boundary=B";

std::string mp_body(std::string_view model_value) {
    return part("B", model_part_headers, model_value) + close("B");
}

}  // namespace

TEST_CASE("decide_route follows section 4's routing table", "[routing]") {
    auto [wildcard, method, path, content_type, body, expected] =
        GENERATE_REF(table<bool, std::string, std::string, std::string, std::string, Expect>({
            // POST with a JSON top-level string model: the route serving it.
            {false, "POST", "/v1/chat/completions", json_type, R"({"model":"gpt-4o"})", to("openai", "gpt-4o")},
            {false, "POST", "/v1/chat/completions", json_type, R"({"model":"fast"})",
             to("openai", "fast", "gpt-4o-mini")},
            {false, "POST", "/v1/messages", json_type, R"({"model":"claude"})",
             to("anthropic", "claude", "claude-3-5-sonnet")},
            {true, "POST", "/v1/chat/completions", json_type, R"({"model":"fast"})",
             to("openai", "fast", "gpt-4o-mini")},
            {false, "POST", "/v1/chat/completions", json_type, R"({"model":"unknown"})",
             refused("model_not_found")},
            {true, "POST", "/v1/chat/completions", json_type, R"({"model":"unknown"})", to("rest")},
            {false, "POST", "/v1/models", json_type, R"({"model":"gpt-4o"})", to("openai", "gpt-4o")},
            // Bad JSON is refused even when a "*" route exists (section 9).
            {false, "POST", "/v1/chat/completions", json_type, R"({"model":)", refused("invalid_json")},
            {true, "POST", "/v1/chat/completions", json_type, R"({"model":)", refused("invalid_json")},
            {true, "PUT", "/v1/x", json_type, R"({"a":1,})", refused("invalid_json")},
            {false, "POST", "/v1/chat/completions", json_type, R"({"model":"a","model":"b"})",
             refused("duplicate_model")},
            {true, "POST", "/v1/chat/completions", json_type, R"({"model":"a","model":"b"})",
             refused("duplicate_model")},
            // JSON without a string model: "*" route, else missing_model.
            {false, "POST", "/v1/chat/completions", json_type, R"({"messages":[]})", refused("missing_model")},
            {true, "POST", "/v1/chat/completions", json_type, R"({"messages":[]})", to("rest")},
            {false, "POST", "/v1/chat/completions", json_type, R"({"model":5})", refused("missing_model")},
            {true, "POST", "/v1/chat/completions", json_type, R"({"model":null})", to("rest")},
            {false, "POST", "/v1/chat/completions", json_type, R"(["gpt-4o"])", refused("missing_model")},
            {false, "PUT", "/v1/x", json_type, R"({"x":1})", refused("missing_model")},
            // Multipart with a model part routes the same way.
            {false, "POST", "/v1/audio/transcriptions", mp_type, mp_body("fast"), to("openai", "fast", "gpt-4o-mini")},
            {false, "POST", "/v1/audio/transcriptions", mp_type, mp_body("unknown"), refused("model_not_found")},
            {true, "POST", "/v1/audio/transcriptions", mp_type, mp_body("unknown"), to("rest")},
            {false, "POST", "/v1/audio/transcriptions", mp_type,
             part("B", model_part_headers, "a") + part("B", model_part_headers, "b") + close("B"),
             refused("duplicate_model")},
            {false, "POST", "/v1/audio/transcriptions", mp_type, part("B", file_part_headers, "x") + close("B"),
             refused("no_route")},
            {true, "POST", "/v1/audio/transcriptions", mp_type, part("B", file_part_headers, "x") + close("B"),
             to("rest")},
            // Any other method or body under /v1/.
            {false, "POST", "/v1/files", "text/plain", "hello", refused("no_route")},
            {true, "POST", "/v1/files", "text/plain", "hello", to("rest")},
            {false, "POST", "/v1/batches/b1/cancel", json_type, "", refused("no_route")},
            {true, "POST", "/v1/batches/b1/cancel", json_type, "", to("rest")},
            {false, "GET", "/v1/files", "", "", refused("no_route")},
            {true, "GET", "/v1/files", "", "", to("rest")},
            {false, "DELETE", "/v1/files/f1", "", "", refused("no_route")},
            {true, "DELETE", "/v1/files/f1", "", "", to("rest")},
            {false, "GET", "/v1/chat/completions", json_type, R"({"model":"gpt-4o"})", refused("no_route")},
            {true, "GET", "/v1/chat/completions", json_type, R"({"model":"gpt-4o"})", to("rest")},
            {false, "POST", "/v1/chat/completions", "text/plain", R"({"model":"gpt-4o"})", refused("no_route")},
            // A known local path with a wrong method: 405 unless "*" takes it.
            {false, "POST", "/v1/models", json_type, R"({"x":1})", refused("method_not_allowed")},
            {false, "DELETE", "/v1/models/gpt-4o", "", "", refused("method_not_allowed")},
            {true, "DELETE", "/v1/models/ft:gpt-4o:org", "", "", to("rest")},
        }));
    CAPTURE(wildcard, method, path, content_type, body);
    const config::Config config = make_config(wildcard);
    const RouteDecision decision = decide_route(method, path, inspect_body(content_type, body), config);
    if (expected.refusal.empty()) {
        REQUIRE(std::holds_alternative<Forward>(decision));
        const Forward& f = std::get<Forward>(decision);
        REQUIRE(f.route != nullptr);
        CHECK(f.route->name == expected.route);
        CHECK((f.model ? f.model->name : std::string()) == expected.model);
        CHECK(f.upstream_model.value_or("") == expected.rewrite);
    } else {
        REQUIRE(std::holds_alternative<Refusal>(decision));
        const Refusal& r = std::get<Refusal>(decision);
        CHECK(code_of(r.error) == expected.refusal);
        CHECK_FALSE(r.message.empty());
    }
}

TEST_CASE("decide_route carries the client's model name and the refusal status", "[routing]") {
    const config::Config open = make_config(false);
    const config::Config star = make_config(true);
    const std::string body = R"({"model":"my-model"})";
    const BodyFacts facts = inspect_body("application/json", body);

    const auto forwarded = decide_route("POST", "/v1/chat/completions", facts, star);
    REQUIRE(std::holds_alternative<Forward>(forwarded));
    CHECK(std::get<Forward>(forwarded).client_model == "my-model");
    CHECK(std::get<Forward>(forwarded).model == nullptr);
    CHECK_FALSE(std::get<Forward>(forwarded).upstream_model.has_value());

    const auto refusal = decide_route("POST", "/v1/chat/completions", facts, open);
    REQUIRE(std::holds_alternative<Refusal>(refusal));
    CHECK(status_of(std::get<Refusal>(refusal).error) == 404);
    CHECK(std::get<Refusal>(refusal).message == "No route serves the model `my-model`.");

    const auto not_string = decide_route("POST", "/v1/x", inspect_body("application/json", R"({"model":1})"), open);
    REQUIRE(std::holds_alternative<Refusal>(not_string));
    CHECK(status_of(std::get<Refusal>(not_string).error) == 400);
    CHECK(std::get<Refusal>(not_string).message == "The top-level `model` of the request body must be a string.");
}
