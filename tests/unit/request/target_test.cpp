// request/target.hpp: the checks of a request target, dispatch, and the upstream target.
#include "request/target.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <tuple>

using namespace modelproxy;
using namespace modelproxy::request;

TEST_CASE("check_path refuses dot-dot segments and encoded dots and slashes", "[target]") {
    auto [target, status, path, query] = GENERATE(table<std::string, TargetStatus, std::string, std::string>({
        {"/v1/chat/completions", TargetStatus::ok, "/v1/chat/completions", ""},
        {"/v1/chat/completions?x=1&y=%2e", TargetStatus::ok, "/v1/chat/completions", "x=1&y=%2e"},
        {"/v1/x?p=/../", TargetStatus::ok, "/v1/x", "p=/../"},
        {"/v1/files/file-abc%20x", TargetStatus::ok, "/v1/files/file-abc%20x", ""},
        {"/v1/./models", TargetStatus::ok, "/v1/./models", ""},
        {"/v1/a..b/..c/d..", TargetStatus::ok, "/v1/a..b/..c/d..", ""},
        {"/v1//x", TargetStatus::ok, "/v1//x", ""},
        {"/", TargetStatus::ok, "/", ""},
        {"/v1/x?", TargetStatus::ok, "/v1/x", ""},
        {"/v1/../x", TargetStatus::dot_dot_segment, "/v1/../x", ""},
        {"/..", TargetStatus::dot_dot_segment, "/..", ""},
        {"/v1/a/..", TargetStatus::dot_dot_segment, "/v1/a/..", ""},
        {"/v1/a/../?q", TargetStatus::dot_dot_segment, "/v1/a/../", "q"},
        {"/v1/a/%2E%2E/b", TargetStatus::encoded_dot_or_slash, "/v1/a/%2E%2E/b", ""},
        {"/v1/a/%2e%2e/b", TargetStatus::encoded_dot_or_slash, "/v1/a/%2e%2e/b", ""},
        {"/v1/a/.%2e/b", TargetStatus::encoded_dot_or_slash, "/v1/a/.%2e/b", ""},
        {"/v1/a%2fb", TargetStatus::encoded_dot_or_slash, "/v1/a%2fb", ""},
        {"/v1/a%2Fb", TargetStatus::encoded_dot_or_slash, "/v1/a%2Fb", ""},
        {"/v1/fi%2eles", TargetStatus::encoded_dot_or_slash, "/v1/fi%2eles", ""},
        {"/v1/fi%2Eles?x", TargetStatus::encoded_dot_or_slash, "/v1/fi%2Eles", "x"},
        {"/v1/..\\x", TargetStatus::backslash, "/v1/..\\x", ""},
        {"/v1/a%5cb", TargetStatus::backslash, "/v1/a%5cb", ""},
        {"/v1/a%5Cb", TargetStatus::backslash, "/v1/a%5Cb", ""},
        {"/v1/a%%2eb", TargetStatus::encoded_dot_or_slash, "/v1/a%%2eb", ""},
        {"/v1/a%5c%2e", TargetStatus::encoded_dot_or_slash, "/v1/a%5c%2e", ""},
        {"/v1/a%5C", TargetStatus::backslash, "/v1/a%5C", ""},
        {"/v1/a%2", TargetStatus::ok, "/v1/a%2", ""},
        {"/v1/a%3e%2", TargetStatus::ok, "/v1/a%3e%2", ""},
        {"http://evil.example/v1/x", TargetStatus::not_origin_form, "http://evil.example/v1/x", ""},
        {"*", TargetStatus::not_origin_form, "*", ""},
        {"", TargetStatus::not_origin_form, "", ""},
        {"/v1/a#frag", TargetStatus::not_origin_form, "/v1/a#frag", ""},
    }));
    CAPTURE(target);
    const Target t = check_path(target);
    CHECK(t.status == status);
    CHECK(t.path == path);
    CHECK(t.query == query);
}

TEST_CASE("dispatch follows section 4's table", "[target]") {
    auto [method, path, expected] = GENERATE(table<std::string, std::string, Dispatch>({
        {"GET", "/healthz", Dispatch::healthz},
        {"HEAD", "/healthz", Dispatch::healthz},
        {"POST", "/healthz", Dispatch::method_not_allowed},
        {"GET", "/readyz", Dispatch::readyz},
        {"DELETE", "/readyz", Dispatch::method_not_allowed},
        {"GET", "/metrics", Dispatch::metrics},
        {"PUT", "/metrics", Dispatch::method_not_allowed},
        {"GET", "/v1/models", Dispatch::models_list},
        {"HEAD", "/v1/models", Dispatch::models_list},
        {"POST", "/v1/models", Dispatch::forward},
        {"GET", "/v1/models/gpt-4o", Dispatch::model_object},
        {"GET", "/v1/models/org/name", Dispatch::model_object},
        {"DELETE", "/v1/models/ft:gpt-4o:x", Dispatch::forward},
        {"GET", "/v1/models/", Dispatch::forward},
        {"POST", "/v1/chat/completions", Dispatch::forward},
        {"GET", "/v1/files", Dispatch::forward},
        {"GET", "/v1", Dispatch::forward},
        {"GET", "/v1models", Dispatch::not_found},
        {"GET", "/", Dispatch::not_found},
        {"POST", "/chat/completions", Dispatch::not_found},
        {"GET", "/healthz/", Dispatch::not_found},
        {"get", "/healthz", Dispatch::method_not_allowed},
    }));
    CAPTURE(method, path);
    CHECK(dispatch(method, path) == expected);
}

TEST_CASE("only requests under /v1/ need a client token", "[target]") {
    CHECK(needs_client_token(Dispatch::forward));
    CHECK(needs_client_token(Dispatch::models_list));
    CHECK(needs_client_token(Dispatch::model_object));
    CHECK_FALSE(needs_client_token(Dispatch::healthz));
    CHECK_FALSE(needs_client_token(Dispatch::readyz));
    CHECK_FALSE(needs_client_token(Dispatch::metrics));
    CHECK_FALSE(needs_client_token(Dispatch::not_found));
    CHECK_FALSE(needs_client_token(Dispatch::method_not_allowed));
    CHECK(allowed_methods() == "GET, HEAD");
}

TEST_CASE("model_id_from_path decodes the id", "[target]") {
    CHECK(model_id_from_path("/v1/models/gpt-4o") == std::optional<std::string>("gpt-4o"));
    CHECK(model_id_from_path("/v1/models/ft%3Agpt-4o%3Aorg") == std::optional<std::string>("ft:gpt-4o:org"));
    CHECK(model_id_from_path("/v1/models/meta/llama") == std::optional<std::string>("meta/llama"));
    CHECK(model_id_from_path("/v1/models/bad%4") == std::nullopt);
    CHECK(model_id_from_path("/v1/models/bad%zz") == std::nullopt);
    CHECK(model_id_from_path("/v1/models/") == std::nullopt);
    CHECK(model_id_from_path("/v1/models") == std::nullopt);
}

TEST_CASE("upstream_target composes base path, client path and both queries", "[target]") {
    using Params = std::vector<std::pair<std::string, std::string>>;
    auto [base, path, query, params, expected] =
        GENERATE(table<std::string, std::string, std::string, Params, std::string>({
            {"/v1", "/v1/chat/completions", "x=1", Params{{"api-version", "2024-06-01"}},
             "/v1/chat/completions?x=1&api-version=2024-06-01"},
            {"/v1", "/v1/chat/completions", "", Params{}, "/v1/chat/completions"},
            {"/v1/", "/v1/chat/completions", "", Params{}, "/v1/chat/completions"},
            {"", "/v1/chat/completions", "", Params{}, "/chat/completions"},
            {"", "/v1", "", Params{}, "/"},
            {"/v1", "/v1", "", Params{}, "/v1"},
            {"", "/v1/", "", Params{}, "/"},
            {"/openai/deployments/gpt", "/v1/chat/completions", "", Params{{"api-version", "2024-06-01"}},
             "/openai/deployments/gpt/chat/completions?api-version=2024-06-01"},
            {"/v1", "/v1/models", "a=1", Params{{"k y", "a&b=c/\xC3\xA9~._-"}},
             "/v1/models?a=1&k%20y=a%26b%3Dc%2F%C3%A9~._-"},
            {"/v1", "/v1/x", "", Params{{"a", "1"}, {"b", "2"}}, "/v1/x?a=1&b=2"},
            {"/v1", "/v1/x", "q=", Params{}, "/v1/x?q="},
            {"/v1", "/v1/x", "api-version=1", Params{{"api-version", "2"}}, "/v1/x?api-version=1&api-version=2"},
            {"/base", "/v1//x", "", Params{}, "/base//x"},
        }));
    config::Route route;
    route.upstream.base_path = base;
    route.query = params;
    CAPTURE(base, path, query);
    CHECK(upstream_target(route, path, query) == expected);
    // Written into the plan's reused string: nothing of its last target stays.
    std::string reused = "/left/over/from/an/earlier/request?with=a&long=query" + std::string(100, 'x');
    upstream_target(reused, route, path, query);
    CHECK(reused == expected);
}
