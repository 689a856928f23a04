#include "proxy/request_rules.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace modelproxy;
using namespace modelproxy::proxy;

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

std::string_view span_text(std::string_view body, Span span) { return body.substr(span.offset, span.size); }

std::string part(std::string_view boundary, std::string_view headers, std::string_view content) {
    std::string out = "--";
    out += boundary;
    out += "\r\n";
    out += headers;
    out += "\r\n\r\n";
    out += content;
    out += "\r\n";
    return out;
}

std::string close(std::string_view boundary) { return "--" + std::string(boundary) + "--\r\n"; }

const std::string model_part_headers = "Content-Disposition: form-data; name=\"model\"";
const std::string file_part_headers =
    "Content-Disposition: form-data; name=\"file\"; filename=\"model\"\r\nContent-Type: audio/wav";

}  // namespace

// ------------------------------------------------------------------ target

TEST_CASE("check_path refuses dot-dot segments and encoded dots and slashes", "[request_rules]") {
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

TEST_CASE("dispatch follows section 4's table", "[request_rules]") {
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

TEST_CASE("only requests under /v1/ need a client token", "[request_rules]") {
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

TEST_CASE("model_id_from_path decodes the id", "[request_rules]") {
    CHECK(model_id_from_path("/v1/models/gpt-4o") == std::optional<std::string>("gpt-4o"));
    CHECK(model_id_from_path("/v1/models/ft%3Agpt-4o%3Aorg") == std::optional<std::string>("ft:gpt-4o:org"));
    CHECK(model_id_from_path("/v1/models/meta/llama") == std::optional<std::string>("meta/llama"));
    CHECK(model_id_from_path("/v1/models/bad%4") == std::nullopt);
    CHECK(model_id_from_path("/v1/models/bad%zz") == std::nullopt);
    CHECK(model_id_from_path("/v1/models/") == std::nullopt);
    CHECK(model_id_from_path("/v1/models") == std::nullopt);
}

TEST_CASE("upstream_target composes base path, client path and both queries", "[request_rules]") {
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

// ------------------------------------------------------------------- JSON

TEST_CASE("inspect_json_body reads the top-level model and its exact span", "[request_rules]") {
    auto [body, field, name, span] = GENERATE(table<std::string, ModelField, std::string, std::string>({
        {R"({"model":"gpt-4o"})", ModelField::string, "gpt-4o", R"("gpt-4o")"},
        {R"({"model":"gpt\u002d4o"})", ModelField::string, "gpt-4o", R"("gpt\u002d4o")"},
        {R"({"model":"gpt\u002D4o"})", ModelField::string, "gpt-4o", R"("gpt\u002D4o")"},
        {"{ \"model\" :  \"gpt-4o\"  , \"stream\" : true }", ModelField::string, "gpt-4o", R"("gpt-4o")"},
        {"{\n\t\"model\":\r\n\"a\\\"b\\\\c\\/\"\n}", ModelField::string, "a\"b\\c/", R"("a\"b\\c\/")"},
        {R"({"messages":[{"model":"x"}],"model":"y"})", ModelField::string, "y", R"("y")"},
        {R"({"model":"y","messages":[{"model":"x","model":"z"}]})", ModelField::string, "y", R"("y")"},
        {R"({"mod\u0065l":"y"})", ModelField::string, "y", R"("y")"},
        {R"({"model":""})", ModelField::string, "", R"("")"},
        // Escapes first, last and side by side, around plain runs.
        {R"({"model":"\"x\""})", ModelField::string, "\"x\"", R"("\"x\"")"},
        {R"({"model":"x\\"})", ModelField::string, "x\\", R"("x\\")"},
        {R"({"model":"\n\t\u0041bc\/"})", ModelField::string, "\n\tAbc/", R"("\n\t\u0041bc\/")"},
        {R"({"model":"\ud83d\ude00"})", ModelField::string, "\xF0\x9F\x98\x80", R"("\ud83d\ude00")"},
        {R"({"model":"\ud800x"})", ModelField::string, "\xEF\xBF\xBDx", R"("\ud800x")"},
        {R"({"model":"caf\u00e9 \u4e2d"})", ModelField::string, "caf\xC3\xA9 \xE4\xB8\xAD",
         R"("caf\u00e9 \u4e2d")"},
        {"{\"model\":\"caf\xC3\xA9\"}", ModelField::string, "caf\xC3\xA9", "\"caf\xC3\xA9\""},
        {R"({"messages":[{"model":"x"}]})", ModelField::absent, "", ""},
        {R"({})", ModelField::absent, "", ""},
        {R"({"Model":"x"})", ModelField::absent, "", ""},
        {R"({"model":"a","model":"b"})", ModelField::duplicate, "", ""},
        {R"({"model":"a","mod\u0065l":"b"})", ModelField::duplicate, "", ""},
        {R"({"model":"a","x":1,"model":5})", ModelField::duplicate, "", ""},
        {R"({"model":5})", ModelField::not_string, "", ""},
        {R"({"model":null})", ModelField::not_string, "", ""},
        {R"({"model":["gpt-4o"]})", ModelField::not_string, "", ""},
        {R"({"model":{"name":"gpt-4o"}})", ModelField::not_string, "", ""},
        {R"({"model":true})", ModelField::not_string, "", ""},
    }));
    CAPTURE(body);
    const JsonBody json = inspect_json_body(body);
    CHECK(json.shape == JsonShape::object);
    CHECK(json.model == field);
    CHECK(json.model_name == name);
    CHECK(span_text(body, json.model_span) == span);
}

TEST_CASE("inspect_json_body: only a top-level literal true asks for a stream", "[request_rules]") {
    auto [body, stream, background] = GENERATE(table<std::string, bool, bool>({
        {R"({"model":"m","stream":true})", true, false},
        {R"({"stream" :	true ,"model":"m"})", true, false},
        {R"({"stream":false})", false, false},
        {R"({"stream":"true"})", false, false},
        {R"({"stream":1})", false, false},
        {R"({"stream":null})", false, false},
        {R"({"stream":true,"stream":false})", false, false},
        {R"({"stream":false,"stream":true})", true, false},
        {R"({"options":{"stream":true}})", false, false},
        {R"({"background":true})", false, true},
        {R"({"background":"true"})", false, false},
        {R"({"stream":true,"background":true})", true, true},
        {R"({})", false, false},
    }));
    CAPTURE(body);
    const JsonBody json = inspect_json_body(body);
    REQUIRE(json.shape == JsonShape::object);
    CHECK(json.stream == stream);
    CHECK(json.background == background);
}

TEST_CASE("inspect_json_body tells valid non-objects from invalid JSON", "[request_rules]") {
    auto [body, shape] = GENERATE(table<std::string, JsonShape>({
        {R"([1,2])", JsonShape::other},
        {R"([{"model":"x"}])", JsonShape::other},
        {R"("model")", JsonShape::other},
        {" 5 ", JsonShape::other},
        {R"(null)", JsonShape::other},
        {R"(true)", JsonShape::other},
        {"{}\n", JsonShape::object},
        {R"({"a":1e400,"b":123456789012345678901234567890,"c":-0.5E-3,"d":0})", JsonShape::object},
        {R"({"a":{"b":{"c":[[[]],{}]}}})", JsonShape::object},
        {R"({"a":"\ud800"})", JsonShape::object},
        {R"({"a":"\b\f\n\r\t\"\\\/"})", JsonShape::object},
        {"", JsonShape::invalid},
        {"  ", JsonShape::invalid},
        {"{", JsonShape::invalid},
        {R"({"model":"a",})", JsonShape::invalid},
        {R"({"model":"a"} x)", JsonShape::invalid},
        {R"({"model":"a"}})", JsonShape::invalid},
        {R"({"a":1}{"b":2})", JsonShape::invalid},
        {R"({"a":"\x"})", JsonShape::invalid},
        {R"({"a\x":1})", JsonShape::invalid},
        {R"({"a":"\u12"})", JsonShape::invalid},
        {R"({"a":[1,"\q"]})", JsonShape::invalid},
        {R"({"a":{"b\q":1}})", JsonShape::invalid},
        {R"({"model":"\x"})", JsonShape::invalid},
        {R"({"a":tru})", JsonShape::invalid},
        {R"({"a":truex})", JsonShape::invalid},
        {R"({"a":nul})", JsonShape::invalid},
        {R"({"a":01})", JsonShape::invalid},
        {R"({"a":1.})", JsonShape::invalid},
        {R"({"a":.5})", JsonShape::invalid},
        {R"({"a":-})", JsonShape::invalid},
        {R"({"a":1e})", JsonShape::invalid},
        {R"({"a":+1})", JsonShape::invalid},
        {R"({"a":NaN})", JsonShape::invalid},
        {R"({"a" 1})", JsonShape::invalid},
        {R"({'a':1})", JsonShape::invalid},
        {R"({a:1})", JsonShape::invalid},
        {R"({"a":[1,2})", JsonShape::invalid},
        {R"({"a":[1,]})", JsonShape::invalid},
        {R"({"model":"a" "b"})", JsonShape::invalid},
        // A colon after a string value (found by tests/fuzz/request_fuzz).
        {R"({"a":"b":"c"},"d":1})", JsonShape::invalid},
        {R"({"metadata":"{model":"claude"},"model":"x"})", JsonShape::invalid},
        {R"({"a":["b":"c"],"d":1})", JsonShape::invalid},
        {R"(["a":"b"],1])", JsonShape::invalid},
        {"{\"a\":\"x\ty\"}", JsonShape::invalid},
        {"{\"a\":\"x\ny\"}", JsonShape::invalid},
        {"{\"a\":\"\xFF\"}", JsonShape::invalid},
        {"\xEF\xBB\xBF{}", JsonShape::invalid},
        {R"("abc" x)", JsonShape::invalid},
        {R"(5 6)", JsonShape::invalid},
        {R"([1,]])", JsonShape::invalid},
        {R"([1] 2)", JsonShape::invalid},
        {R"(nul)", JsonShape::invalid},
    }));
    CAPTURE(body);
    const JsonBody json = inspect_json_body(body);
    CHECK(json.shape == shape);
    if (shape != JsonShape::object) CHECK(json.model == ModelField::absent);
}

TEST_CASE("inspect_json_body bounds nesting depth", "[request_rules]") {
    const std::string shallow = std::string(500, '[') + std::string(500, ']');
    const std::string deep = std::string(2000, '[') + std::string(2000, ']');
    const std::string deep_in_object = "{\"model\":\"m\",\"x\":" + deep + "}";
    CHECK(inspect_json_body(shallow).shape == JsonShape::other);
    CHECK(inspect_json_body(deep).shape == JsonShape::invalid);
    CHECK(inspect_json_body(deep_in_object).shape == JsonShape::invalid);
}

TEST_CASE("inspect_json_body finds the model after a large body", "[request_rules]") {
    std::string body = R"({"messages":[{"role":"user","content":")";
    body += std::string(8 * 1024 * 1024, 'x');
    body += R"("}],"stream":true,"model":"gpt\u002d4o"})";
    const JsonBody json = inspect_json_body(body);
    REQUIRE(json.shape == JsonShape::object);
    CHECK(json.model == ModelField::string);
    CHECK(json.model_name == "gpt-4o");
    CHECK(json.stream);
    CHECK(span_text(body, json.model_span) == R"("gpt\u002d4o")");
    CHECK(json.model_span.offset + json.model_span.size == body.size() - 1);
}

TEST_CASE("rewrite_model replaces only the model's bytes", "[request_rules]") {
    auto [body, new_model, expected] = GENERATE(table<std::string, std::string, std::string>({
        {R"({"model":"fast"})", "gpt-4o-mini", R"({"model":"gpt-4o-mini"})"},
        {"{ \"a\" : 1,\n \"model\" :\t\"gpt\\u002d4o\" , \"stream\":true}", "x",
         "{ \"a\" : 1,\n \"model\" :\t\"x\" , \"stream\":true}"},
        {R"({"m":[{"model":"keep"}],"model":"fast","n":"fast"})", "slow",
         R"({"m":[{"model":"keep"}],"model":"slow","n":"fast"})"},
        {R"({"model":"a"})", "q\"b\\s\x01\n", R"({"model":"q\"b\\s\u0001\n"})"},
        {R"({"model":"a"})", "caf\xC3\xA9", "{\"model\":\"caf\xC3\xA9\"}"},
    }));
    CAPTURE(body);
    const JsonBody json = inspect_json_body(body);
    REQUIRE(json.model == ModelField::string);
    CHECK(rewrite_model(body, json.model_span, new_model) == expected);
}

TEST_CASE("rewrite_model keeps every other byte of a large body", "[request_rules]") {
    std::string prefix = "{\"input\":[";
    for (int i = 0; i < 20000; ++i) prefix += "{\"model\":\"nested\",\"n\":" + std::to_string(i) + "},";
    prefix += "1],\r\n  \"model\"  :  ";
    const std::string suffix = "  ,\"temperature\":0.25e0 }\n";
    const std::string body = prefix + R"("f\u0061st")" + suffix;
    const JsonBody json = inspect_json_body(body);
    REQUIRE(json.model == ModelField::string);
    CHECK(json.model_name == "fast");
    CHECK(rewrite_model(body, json.model_span, "gpt-4o-mini") == prefix + "\"gpt-4o-mini\"" + suffix);
}

// -------------------------------------------------------------- multipart

TEST_CASE("multipart_model finds the model part", "[request_rules]") {
    const std::string b = "----abc123";
    auto [content_type, body, field, name] = GENERATE_REF(table<std::string, std::string, ModelField, std::string>({
        {"multipart/form-data; boundary=----abc123",
         part(b, model_part_headers, "whisper-1") + part(b, file_part_headers, "RIFF....") + close(b),
         ModelField::string, "whisper-1"},
        {"multipart/form-data; boundary=\"----abc123\"",
         part(b, file_part_headers, "RIFF\r\n--x\r\n") + part(b, model_part_headers, "whisper-1") + close(b),
         ModelField::string, "whisper-1"},
        {"Multipart/Form-Data;Boundary=----abc123",
         part(b, "content-disposition: FORM-DATA; NAME=\"model\"", "m") + close(b), ModelField::string, "m"},
        {"multipart/form-data; charset=utf-8; boundary=----abc123",
         part(b, "Content-Disposition: form-data; name=model", "gpt-4o") + close(b), ModelField::string,
         "gpt-4o"},
        {"multipart/form-data; boundary=----abc123",
         "preamble\r\n" + part(b, model_part_headers, "m") + close(b), ModelField::string, "m"},
        {"multipart/form-data; boundary=----abc123",
         part(b, "Content-Type: text/plain\r\n" + model_part_headers, "a b\r\nc") + close(b),
         ModelField::string, "a b\r\nc"},
        {"multipart/form-data; boundary=----abc123",
         part(b, "Content-Disposition: form-data; flag; name=\"model\"", "m") + close(b), ModelField::string, "m"},
        {"multipart/form-data; boundary=\"a b:c\"",
         part("a b:c", model_part_headers, "m") + close("a b:c"), ModelField::string, "m"},
        {"multipart/form-data; boundary=----abc123",
         part(b, model_part_headers, "") + close(b), ModelField::string, ""},
        {"multipart/form-data; boundary=----abc123",
         "--" + b + "\r\n\r\nheaderless\r\n" + part(b, model_part_headers, "m") + close(b),
         ModelField::string, "m"},
        {"multipart/form-data; boundary=----abc123",
         part(b, file_part_headers, "data") + close(b), ModelField::absent, ""},
        {"multipart/form-data; boundary=----abc123",
         part(b, "Content-Disposition: form-data; name=\"models\"", "m") + close(b), ModelField::absent, ""},
        {"multipart/form-data; boundary=----abc123",
         part(b, "Content-Disposition: attachment; name=\"model\"", "m") + close(b), ModelField::absent, ""},
        {"multipart/form-data; boundary=----abc123",
         part(b, model_part_headers, "a") + part(b, model_part_headers, "b") + close(b),
         ModelField::duplicate, ""},
        {"multipart/form-data; boundary=----abc123", part(b, model_part_headers, "m"), ModelField::absent, ""},
        {"multipart/form-data", part(b, model_part_headers, "m") + close(b), ModelField::absent, ""},
        {"multipart/form-data; boundary=other", part(b, model_part_headers, "m") + close(b),
         ModelField::absent, ""},
        {"multipart/form-data; boundary=----abc123",
         "--" + b + "\nContent-Disposition: form-data; name=\"model\"\n\nm\n--" + b + "--\n",
         ModelField::absent, ""},
    }));
    CAPTURE(content_type, body);
    const MultipartModel m = multipart_model(content_type, body);
    CHECK(m.model == field);
    CHECK(m.model_name == name);
    if (field == ModelField::string) CHECK(span_text(body, m.model_span) == name);
}

TEST_CASE("upstream_body rewrites a multipart model part in place", "[request_rules]") {
    const std::string b = "xyz";
    const std::string body = part(b, file_part_headers, "RIFF") + part(b, model_part_headers, "fast") + close(b);
    const BodyFacts facts = inspect_body("multipart/form-data; boundary=xyz", body);
    REQUIRE(facts.model() == ModelField::string);
    CHECK(upstream_body(body, facts, "gpt-4o-mini") ==
          part(b, file_part_headers, "RIFF") + part(b, model_part_headers, "gpt-4o-mini") + close(b));
}

TEST_CASE("upstream_body rewrites a JSON model and leaves other bodies alone", "[request_rules]") {
    const std::string json = R"({"model" : "fast","x":1})";
    CHECK(upstream_body(json, inspect_body("application/json", json), "gpt-4o-mini") ==
          R"({"model" : "gpt-4o-mini","x":1})");
    const std::string no_model = R"({"x":1})";
    CHECK(upstream_body(no_model, inspect_body("application/json", no_model), "m") == no_model);
    CHECK(upstream_body("plain", inspect_body("text/plain", "plain"), "m") == "plain");
}

TEST_CASE("body_kind reads the media type", "[request_rules]") {
    auto [content_type, size, kind] = GENERATE(table<std::string, std::size_t, BodyKind>({
        {"application/json", 2, BodyKind::json},
        {"Application/JSON; charset=utf-8", 2, BodyKind::json},
        {" application/json ;charset=UTF-8", 2, BodyKind::json},
        {"application/merge-patch+json", 2, BodyKind::json},
        {"application/vnd.api+JSON", 2, BodyKind::json},
        {"Application/Problem+Json", 2, BodyKind::json},
        {"application/+json", 2, BodyKind::json},
        {"application+json", 2, BodyKind::other},
        {"Application/JSON5", 2, BodyKind::other},
        {"\tapplication/json\t", 2, BodyKind::json},
        {"application/json", 0, BodyKind::none},
        {"multipart/form-data; boundary=x", 0, BodyKind::none},
        {"text/json", 2, BodyKind::other},
        {"application/jsonl", 2, BodyKind::other},
        {"multipart/form-data; boundary=x", 2, BodyKind::multipart},
        {"MULTIPART/FORM-DATA;boundary=x", 2, BodyKind::multipart},
        {"multipart/mixed; boundary=x", 2, BodyKind::other},
        {"text/plain", 2, BodyKind::other},
        {"application/x-www-form-urlencoded", 2, BodyKind::other},
        {"", 2, BodyKind::other},
    }));
    CAPTURE(content_type, size);
    CHECK(body_kind(content_type, size) == kind);
}

TEST_CASE("acceptable_request_encoding accepts only identity", "[request_rules]") {
    CHECK(acceptable_request_encoding(""));
    CHECK(acceptable_request_encoding("identity"));
    CHECK(acceptable_request_encoding(" Identity "));
    CHECK_FALSE(acceptable_request_encoding("gzip"));
    CHECK_FALSE(acceptable_request_encoding("deflate"));
    CHECK_FALSE(acceptable_request_encoding("identity, gzip"));
}

TEST_CASE("check_request_head: what the head alone refuses, and 100 Continue", "[request_rules]") {
    constexpr std::uint64_t max = 1000;
    const auto head = [](bool te, bool chunked, std::optional<std::uint64_t> length, std::string_view encoding,
                         std::string_view expect) {
        RequestHead h;
        h.method = "POST";
        h.transfer_encoding = te;
        h.chunked = chunked;
        h.content_length = length;
        h.content_encoding = encoding;
        h.expect = expect;
        return h;
    };
    using E = ClientError;
    struct Row {
        RequestHead head;
        std::optional<ClientError> refusal;
        bool send_continue;
    };
    const std::vector<Row> rows{
        {head(false, false, std::nullopt, "", ""), std::nullopt, false},
        {head(false, false, 1000, "identity", ""), std::nullopt, false},  // the limit itself is allowed
        {head(true, true, std::nullopt, "", ""), std::nullopt, false},    // chunked
        {head(true, false, std::nullopt, "", ""), E::bad_request, false},  // gzip alone: length unknown
        {head(false, false, 1001, "", ""), E::payload_too_large, false},
        {head(false, false, 10, "gzip", ""), E::unsupported_content_encoding, false},
        {head(false, false, 10, "", "100-continue"), std::nullopt, true},
        {head(false, false, 10, "", "100-Continue"), std::nullopt, true},
        {head(false, false, 10, "", "200-ok"), std::nullopt, false},
        // Refusals first: a refused head is never told to go on.
        {head(false, false, 1001, "", "100-continue"), E::payload_too_large, false},
        {head(true, false, std::nullopt, "gzip", "100-continue"), E::bad_request, false},
        {head(false, false, 1001, "gzip", ""), E::payload_too_large, false},
    };
    for (const Row& row : rows) {
        CAPTURE(row.head.transfer_encoding, row.head.chunked, row.head.content_length.value_or(0),
                row.head.content_encoding, row.head.expect);
        const HeadCheck check = check_request_head(row.head, max);
        CHECK(check.refusal == row.refusal);
        CHECK(check.send_continue == row.send_continue);
    }
}

TEST_CASE("check_request_head: strict framing of method, Host and HTTP/1.0", "[request_rules]") {
    using E = ClientError;
    auto [method, version, hosts, te, expect, refusal, send_continue] =
        GENERATE(table<std::string, unsigned, unsigned, bool, std::string, std::optional<ClientError>, bool>({
            {"POST", 11, 1, false, "", std::nullopt, false},
            {"M-SEARCH", 11, 1, false, "", std::nullopt, false},
            {"BREW_X", 11, 1, false, "", std::nullopt, false},
            {"post", 11, 1, false, "", E::bad_request, false},  // methods are case-sensitive
            {"Post", 11, 1, false, "", E::bad_request, false},
            {"GEt", 11, 1, false, "", E::bad_request, false},
            {"P0ST", 11, 1, false, "", E::bad_request, false},
            {"", 11, 1, false, "", E::bad_request, false},
            {"POST", 11, 0, false, "", E::bad_request, false},  // HTTP/1.1 needs one Host
            {"POST", 11, 2, false, "", E::bad_request, false},
            {"POST", 10, 0, false, "", std::nullopt, false},  // HTTP/1.0 may go without
            {"POST", 10, 2, false, "", E::bad_request, false},
            {"POST", 10, 1, true, "", E::bad_request, false},  // no Transfer-Encoding in HTTP/1.0
            {"POST", 10, 1, false, "100-continue", std::nullopt, false},  // nor 100 Continue
            {"POST", 11, 1, false, "100-continue", std::nullopt, true},
            {"post", 11, 1, false, "100-continue", E::bad_request, false},
        }));
    RequestHead head;
    head.method = method;
    head.version = version;
    head.host_fields = hosts;
    head.transfer_encoding = te;
    head.chunked = te;
    head.content_length = te ? std::nullopt : std::optional<std::uint64_t>(10);
    head.expect = expect;
    CAPTURE(method, version, hosts, te, expect);
    const HeadCheck check = check_request_head(head, 1000);
    CHECK(check.refusal == refusal);
    CHECK(check.send_continue == send_continue);
}

// ----------------------------------------------------------------- routing

namespace {

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

TEST_CASE("decide_route follows section 4's routing table", "[request_rules]") {
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

TEST_CASE("decide_route carries the client's model name and the refusal status", "[request_rules]") {
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

TEST_CASE("BodyFacts reports a stream only for JSON bodies", "[request_rules]") {
    CHECK(inspect_body("application/json", R"({"stream":true})").wants_stream());
    CHECK_FALSE(inspect_body("application/json", R"({"stream":false})").wants_stream());
    CHECK_FALSE(inspect_body("text/plain", R"({"stream":true})").wants_stream());
}

// ----------------------------------------------------------------- headers

TEST_CASE("is_hop_by_hop", "[request_rules]") {
    auto [name, hop] = GENERATE(table<std::string, bool>({
        {"Connection", true},
        {"CONNECTION", true},
        {"keep-alive", true},
        {"Keep-Alive", true},
        {"Proxy-Authorization", true},
        {"proxy-connection", true},
        {"Proxy-Authenticate", true},
        {"TE", true},
        {"Trailer", true},
        {"Transfer-Encoding", true},
        {"upgrade", true},
        // proxy-* names of each length the rule switches on (2, 7, 10, 17)
        {"Proxy-A", true},
        {"proxy-auth", true},
        {"proxy-connection2", true},
        {"Trailers", false},
        {"tE2", false},
        {"upgrad", false},
        {"connectio", false},
        {"keep_alive", false},
        {"transfer-encodin", false},
        {"proxy", false},
        {"x-proxy-id", false},
        {"Content-Type", false},
        {"Authorization", false},
    }));
    CAPTURE(name);
    CHECK(is_hop_by_hop(name) == hop);
}

TEST_CASE("connection_lists finds each token of a value, whatever its case or spacing", "[request_rules]") {
    CHECK(connection_lists("keep-alive, X-Foo", "keep-alive") == ConnectionListed::yes);
    CHECK(connection_lists("keep-alive, X-Foo", "x-foo") == ConnectionListed::yes);
    CHECK(connection_lists("keep-alive, X-Foo", "keep-alive, X-Foo") == ConnectionListed::no);
    CHECK(connection_lists(" close ", "close") == ConnectionListed::yes);
    CHECK(connection_lists(",,a,, B ,", "a") == ConnectionListed::yes);
    CHECK(connection_lists(",,a,, B ,", "b") == ConnectionListed::yes);
    CHECK(connection_lists("", "close") == ConnectionListed::no);
}

TEST_CASE("connection_lists reads the tokens in place, case-insensitively", "[request_rules]") {
    auto [value, name, listed] = GENERATE(table<std::string, std::string, ConnectionListed>({
        {"keep-alive, X-Foo", "x-foo", ConnectionListed::yes},
        {"keep-alive, X-Foo", "X-FOO", ConnectionListed::yes},
        {"keep-alive, X-Foo", "Keep-Alive", ConnectionListed::yes},
        {" close ", "close", ConnectionListed::yes},
        {",,a,, B ,", "b", ConnectionListed::yes},
        {"a\t,\tb", "b", ConnectionListed::yes},
        {"x-foo2", "x-foo", ConnectionListed::no},
        {"x-fo", "x-foo", ConnectionListed::no},
        {"x-foo x-bar", "x-foo", ConnectionListed::no},
        {"", "", ConnectionListed::no},
        {", ,", "", ConnectionListed::no},
        {"", "close", ConnectionListed::no},
    }));
    CAPTURE(value, name);
    CHECK(connection_lists(value, name) == listed);
}

TEST_CASE("ConnectionTokens answers as connection_lists for every value and name", "[request_rules]") {
    // The usual values (keep-alive, close) take the short way; each answer
    // must still be connection_lists' own, for names of every length.
    const std::string values[] = {"",           "keep-alive", "Keep-Alive",        " close ",  "close, keep-alive",
                                  ", ,",        "x-foo",      "keep-alive, X-Foo", "closer",   "keep-alive, close, te",
                                  "keep-alive2"};
    const std::string names[] = {"close",  "Close", "keep-alive", "KEEP-ALIVE", "x-foo", "closer", "te",
                                 "content-type", "", "x-foo-bar", "Keep-Alive2"};
    for (const auto& value : values) {
        const ConnectionTokens tokens(value);
        for (const auto& name : names) {
            CAPTURE(value, name);
            CHECK(tokens.lists(name) == connection_lists(value, name));
        }
    }
    CHECK(ConnectionTokens("keep-alive, close").lists("Close") == ConnectionListed::yes);
    CHECK(ConnectionTokens("keep-alive").lists("x-foo") == ConnectionListed::no);
    CHECK(ConnectionTokens("keep-alive, X-Foo").lists("x-foo") == ConnectionListed::yes);
}

TEST_CASE("is_client_credential and is_modelproxy_header", "[request_rules]") {
    CHECK(is_client_credential("Authorization"));
    CHECK(is_client_credential("X-Api-Key"));
    CHECK(is_client_credential("api-key"));
    CHECK_FALSE(is_client_credential("x-api-key-id"));
    CHECK_FALSE(is_client_credential("anthropic-version"));
    CHECK(is_modelproxy_header("x-modelproxy-timeout-ms"));
    CHECK(is_modelproxy_header("X-ModelProxy-Anything"));
    CHECK_FALSE(is_modelproxy_header("x-modelproxy"));
    CHECK_FALSE(is_modelproxy_header("x-request-id"));
}

TEST_CASE("forward_request_header", "[request_rules]") {
    const CredentialRule pass_through{};
    const CredentialRule injected{"authorization", ""};
    const CredentialRule injected_custom{"x-goog-api-key", ""};
    const CredentialRule client_token{"", "authorization"};
    auto [name, rule, forwarded] = GENERATE_COPY(table<std::string, CredentialRule, bool>({
        {"Content-Type", pass_through, true},
        {"Accept", pass_through, true},
        {"OpenAI-Beta", pass_through, true},
        {"x-request-id", pass_through, true},
        {"x-stainless-timeout", pass_through, true},
        {"Authorization", pass_through, true},
        {"x-api-key", pass_through, true},
        {"api-key", pass_through, true},
        {"Host", pass_through, false},
        {"Content-Length", pass_through, false},
        {"Expect", pass_through, false},
        {"Accept-Encoding", pass_through, false},
        {"Connection", pass_through, false},
        {"Keep-Alive", pass_through, false},
        {"Transfer-Encoding", pass_through, false},
        {"TE", pass_through, false},
        {"Upgrade", pass_through, false},
        {"Proxy-Authorization", pass_through, false},
        {"X-Named", pass_through, false},
        {"x-modelproxy-timeout-ms", pass_through, false},
        // names of the lengths of host, expect, content-length and
        // accept-encoding that are none of them, some still withheld
        {"hOsT", pass_through, false},
        {"hose", pass_through, true},
        {"expecT", pass_through, false},
        {"expert", pass_through, true},
        {"x-modelproxy-a", pass_through, false},
        {"x-modelproxy-ab", pass_through, false},
        {"content-lengths", pass_through, true},
        {"Proxy-Ab", pass_through, false},
        {"Authorization", injected, false},
        {"X-API-Key", injected, false},
        {"api-key", injected, false},
        {"Content-Type", injected, true},
        {"x-goog-api-key", injected_custom, false},
        {"Authorization", injected_custom, false},
        {"x-goog-api-key", pass_through, true},
        {"Authorization", client_token, false},
        {"x-api-key", client_token, true},
    }));
    CAPTURE(name, rule.injected_key_header, rule.client_token_header);
    CHECK(forward_request_header(name, connection_lists("X-Named, keep-alive", name), rule) == forwarded);
}

TEST_CASE("forward_response_header", "[request_rules]") {
    auto [name, forwarded] = GENERATE(table<std::string, bool>({
        {"Content-Type", true},
        {"Retry-After", true},
        {"x-request-id", true},
        {"openai-processing-ms", true},
        {"x-should-retry", true},
        {"Set-Cookie", true},
        {"Content-Length", false},
        {"Content-Encoding", false},
        {"Transfer-Encoding", false},
        {"Connection", false},
        {"Keep-Alive", false},
        {"x-named", false},
        {"X-ModelProxy-Attempts", false},
        {"Proxy-Authenticate", false},
        // names as long as content-length (14) and content-encoding (16)
        {"x-modelproxy-a", false},
        {"x-modelproxy-abc", false},
        {"content-lengtH", false},
        {"content-lengthy", true},
        {"content-encodinG", false},
        {"x-ratelimit-abc", true},
        {"Proxy-A", false},
    }));
    CAPTURE(name);
    CHECK(forward_response_header(name, connection_lists("x-Named", name)) == forwarded);
}

// ------------------------------------------------------------ client tokens

TEST_CASE("authorize_client", "[request_rules]") {
    using Opt = std::optional<std::string>;
    using Tokens = std::vector<std::string>;
    const Tokens two = {"tok-a", "tok-b"};
    auto [authorization, api_key, tokens, expected] = GENERATE_COPY(table<Opt, Opt, Tokens, ClientAuth>({
        {std::nullopt, std::nullopt, Tokens{}, ClientAuth::open},
        {Opt("Bearer anything"), std::nullopt, Tokens{}, ClientAuth::open},
        {Opt("Bearer tok-a"), std::nullopt, two, ClientAuth::bearer},
        {Opt("Bearer tok-b"), std::nullopt, two, ClientAuth::bearer},
        {Opt("bearer tok-b"), std::nullopt, two, ClientAuth::bearer},
        {Opt("BEARER   tok-a  "), std::nullopt, two, ClientAuth::bearer},
        {std::nullopt, Opt("tok-a"), two, ClientAuth::api_key},
        {std::nullopt, Opt(" tok-b "), two, ClientAuth::api_key},
        {Opt("Bearer wrong"), Opt("tok-a"), two, ClientAuth::api_key},
        {Opt("Bearer tok-a"), Opt("wrong"), two, ClientAuth::bearer},
        {Opt("Bearer tok-c"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer tok-"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer tok-aa"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer TOK-A"), std::nullopt, two, ClientAuth::refused},
        {Opt("tok-a"), std::nullopt, two, ClientAuth::refused},
        {Opt("Basic tok-a"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer"), std::nullopt, two, ClientAuth::refused},
        {Opt("Bearer "), std::nullopt, Tokens{""}, ClientAuth::refused},
        {std::nullopt, Opt(""), Tokens{""}, ClientAuth::refused},
        {std::nullopt, std::nullopt, two, ClientAuth::refused},
        {std::nullopt, Opt("Bearer tok-a"), two, ClientAuth::refused},
    }));
    CAPTURE(authorization, api_key);
    const auto auth = authorize_client(authorization ? std::optional<std::string_view>(*authorization) : std::nullopt,
                                       api_key ? std::optional<std::string_view>(*api_key) : std::nullopt, tokens);
    CHECK(auth == expected);
    CHECK(client_authorized(authorization ? std::optional<std::string_view>(*authorization) : std::nullopt,
                            api_key ? std::optional<std::string_view>(*api_key) : std::nullopt,
                            tokens) == (expected != ClientAuth::refused));
}

TEST_CASE("token_header names the header that carried the token", "[request_rules]") {
    CHECK(token_header(ClientAuth::bearer) == "authorization");
    CHECK(token_header(ClientAuth::api_key) == "x-api-key");
    CHECK(token_header(ClientAuth::open).empty());
    CHECK(token_header(ClientAuth::refused).empty());
}

TEST_CASE("carries_client_token finds a token anywhere in a value", "[request_rules]") {
    auto [value, carries] = GENERATE(table<std::string, bool>({
        {"tok-alpha", true},
        {"Bearer tok-beta", true},
        {"  tok-alpha  ", true},
        {"Basic dXNlcjp0b2s=, tok-alpha", true},
        {"tok-alph", false},
        {"TOK-ALPHA", false},  // tokens are compared byte for byte
        {"sk-provider-key", false},
        {"", false},
    }));
    CAPTURE(value);
    CHECK(carries_client_token(value, {"tok-alpha", "tok-beta"}) == carries);
    CHECK_FALSE(carries_client_token(value, {}));
    CHECK_FALSE(carries_client_token(value, {""}));
}
