// request/body.hpp: multipart bodies, body kinds, the facts routing reads, and the body sent upstream.
#include "request/body.hpp"
#include "bodies.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>

using namespace modelproxy;
using namespace modelproxy::request;
using namespace modelproxy::test;

TEST_CASE("multipart_model finds the model part", "[body]") {
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

TEST_CASE("upstream_body rewrites a multipart model part in place", "[body]") {
    const std::string b = "xyz";
    const std::string body = part(b, file_part_headers, "RIFF") + part(b, model_part_headers, "fast") + close(b);
    const BodyFacts facts = inspect_body("multipart/form-data; boundary=xyz", body);
    REQUIRE(facts.model() == ModelField::string);
    CHECK(upstream_body(body, facts, "gpt-4o-mini") ==
          part(b, file_part_headers, "RIFF") + part(b, model_part_headers, "gpt-4o-mini") + close(b));
}

TEST_CASE("upstream_body rewrites a JSON model and leaves other bodies alone", "[body]") {
    const std::string json = R"({"model" : "fast","x":1})";
    CHECK(upstream_body(json, inspect_body("application/json", json), "gpt-4o-mini") ==
          R"({"model" : "gpt-4o-mini","x":1})");
    const std::string no_model = R"({"x":1})";
    CHECK(upstream_body(no_model, inspect_body("application/json", no_model), "m") == no_model);
    CHECK(upstream_body("plain", inspect_body("text/plain", "plain"), "m") == "plain");
}

TEST_CASE("body_kind reads the media type", "[body]") {
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

TEST_CASE("BodyFacts reports a stream only for JSON bodies", "[body]") {
    CHECK(inspect_body("application/json", R"({"stream":true})").wants_stream());
    CHECK_FALSE(inspect_body("application/json", R"({"stream":false})").wants_stream());
    CHECK_FALSE(inspect_body("text/plain", R"({"stream":true})").wants_stream());
}
