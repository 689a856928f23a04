// request/json_body.hpp: reading a JSON body; and rewrite_model (body.hpp) over it.
#include "request/body.hpp"
#include "request/json_body.hpp"
#include "bodies.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>

using namespace modelproxy;
using namespace modelproxy::request;
using namespace modelproxy::test;

TEST_CASE("inspect_json_body reads the top-level model and its exact span", "[json_body]") {
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

TEST_CASE("inspect_json_body: only a top-level literal true asks for a stream", "[json_body]") {
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

TEST_CASE("inspect_json_body tells valid non-objects from invalid JSON", "[json_body]") {
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

TEST_CASE("inspect_json_body bounds nesting depth", "[json_body]") {
    const std::string shallow = std::string(500, '[') + std::string(500, ']');
    const std::string deep = std::string(2000, '[') + std::string(2000, ']');
    const std::string deep_in_object = "{\"model\":\"m\",\"x\":" + deep + "}";
    CHECK(inspect_json_body(shallow).shape == JsonShape::other);
    CHECK(inspect_json_body(deep).shape == JsonShape::invalid);
    CHECK(inspect_json_body(deep_in_object).shape == JsonShape::invalid);
}

TEST_CASE("inspect_json_body finds the model after a large body", "[json_body]") {
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

TEST_CASE("rewrite_model replaces only the model's bytes", "[json_body]") {
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

TEST_CASE("rewrite_model keeps every other byte of a large body", "[json_body]") {
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

TEST_CASE("inspect_json_body: what a resume needs of the request, choices, temperature and seed", "[json_body]") {
    auto [body, several, zero, seed] = GENERATE(table<std::string, bool, bool, bool>({
        {R"({"model":"m"})", false, false, false},
        {R"({"n":1})", false, false, false},
        {R"({"n":1.0})", false, false, false},
        {R"({"n":2})", true, false, false},
        {R"({"n":"2"})", false, false, false},
        {R"({"n":null})", false, false, false},
        {R"({"n":2,"n":1})", false, false, false},
        {R"({"temperature":0})", false, true, false},
        {R"({"temperature":0.0})", false, true, false},
        {R"({"temperature":-0e3})", false, true, false},
        {R"({"temperature":0.2})", false, false, false},
        {R"({"temperature":"0"})", false, false, false},
        {R"({"temperature":null})", false, false, false},
        {R"({"seed":42})", false, false, true},
        {R"({"seed":0})", false, false, true},
        {R"({"seed":null})", false, false, false},
        {R"({"options":{"seed":1,"temperature":0,"n":3}})", false, false, false},
        {R"({"n":3,"temperature":0,"seed":7})", true, true, true},
    }));
    CAPTURE(body);
    const JsonBody json = inspect_json_body(body);
    REQUIRE(json.shape == JsonShape::object);
    CHECK(json.several_choices == several);
    CHECK(json.temperature_zero == zero);
    CHECK(json.seed == seed);
}
