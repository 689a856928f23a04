#include "request/local_answers.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <tuple>

using namespace modelproxy;
using namespace modelproxy::request;

namespace {

config::Model model(std::string name, std::string upstream) {
    config::Model m;
    m.name = std::move(name);
    m.upstream_model = std::move(upstream);
    return m;
}

config::Config two_routes_and_wildcard() {
    config::Config c;
    config::Route openai;
    openai.name = "openai";
    openai.models = {model("gpt-4o", "gpt-4o"), model("fast", "gpt-4o-mini")};
    config::Route rest;
    rest.name = "rest";
    rest.wildcard = true;
    config::Route anthropic;
    anthropic.name = "anthropic";
    anthropic.models = {model("claude", "claude-3-5-sonnet")};
    c.routes = {openai, rest, anthropic};
    return c;
}

}  // namespace

TEST_CASE("error_envelope writes section 9's members in order, optional ones only when given",
          "[local_answers]") {
    CHECK(error_envelope("upstream unreachable", modelproxy_error_type, "network_error",
                         {"network", 3, "exhausted", "max_attempts"}) ==
          R"({"error":{"message":"upstream unreachable","type":"modelproxy_error","code":"network_error",)"
          R"("class":"network","attempts":3,"decision":"exhausted","bound":"max_attempts"}})");
    CHECK(error_envelope("m", "t", "c") == R"({"error":{"message":"m","type":"t","code":"c"}})");
    EnvelopeDetails some;
    some.error_class = "timeout";
    some.decision = "deadline";
    CHECK(error_envelope("m", "t", "c", some) ==
          R"({"error":{"message":"m","type":"t","code":"c","class":"timeout","decision":"deadline"}})");
    EnvelopeDetails attempts_only;
    attempts_only.attempts = 0;
    CHECK(error_envelope("m", "t", "c", attempts_only) ==
          R"({"error":{"message":"m","type":"t","code":"c","attempts":0}})");
}

TEST_CASE("error_envelope escapes every string", "[local_answers]") {
    CHECK(error_envelope("a \"quoted\" \\ path\n\x01", "t", "c") ==
          R"({"error":{"message":"a \"quoted\" \\ path\n\u0001","type":"t","code":"c"}})");
    CHECK(error_envelope("caf\xC3\xA9 </x>", "t", "c") ==
          "{\"error\":{\"message\":\"caf\xC3\xA9 </x>\",\"type\":\"t\",\"code\":\"c\"}}");
}

TEST_CASE("an envelope is valid JSON whatever bytes its message holds", "[local_answers]") {
    // A model_not_found message names what the client sent: a path's
    // percent-decoded id, a multipart part's raw bytes.
    const std::string message = model_not_found_message("m\xff\xc3(\x7f\xed\xa0\x80\x01");
    const std::string body = error_envelope(message, "t", "c");
    boost::json::error_code ec;
    const boost::json::value doc = boost::json::parse(body, ec);  // refuses invalid UTF-8
    REQUIRE_FALSE(ec);
    CHECK(doc.at("error").at("message").as_string() ==
          "No route serves the model `m\xef\xbf\xbd\xef\xbf\xbd(\x7f\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\x01`.");
    const LocalAnswer answer = client_error(ClientError::model_not_found, message);
    CHECK_FALSE(boost::json::parse(answer.body, ec).is_null());
    CHECK_FALSE(ec);
}

TEST_CASE("every ClientError has its status, code and type", "[local_answers]") {
    auto [error, status, code, type] = GENERATE(table<ClientError, unsigned, std::string, std::string>({
        {ClientError::bad_request, 400, "bad_request", "invalid_request_error"},
        {ClientError::invalid_json, 400, "invalid_json", "invalid_request_error"},
        {ClientError::missing_model, 400, "missing_model", "invalid_request_error"},
        {ClientError::duplicate_model, 400, "duplicate_model", "invalid_request_error"},
        {ClientError::invalid_path, 400, "invalid_path", "invalid_request_error"},
        {ClientError::unauthorized, 401, "unauthorized", "invalid_request_error"},
        {ClientError::not_found, 404, "not_found", "invalid_request_error"},
        {ClientError::model_not_found, 404, "model_not_found", "invalid_request_error"},
        {ClientError::no_route, 404, "no_route", "invalid_request_error"},
        {ClientError::method_not_allowed, 405, "method_not_allowed", "invalid_request_error"},
        {ClientError::request_timeout, 408, "request_timeout", "invalid_request_error"},
        {ClientError::payload_too_large, 413, "payload_too_large", "invalid_request_error"},
        {ClientError::unsupported_content_encoding, 415, "unsupported_content_encoding", "invalid_request_error"},
        {ClientError::header_too_large, 431, "header_too_large", "invalid_request_error"},
        {ClientError::too_many_connections, 503, "too_many_connections", "modelproxy_error"},
    }));
    CAPTURE(code);
    CHECK(status_of(error) == status);
    CHECK(code_of(error) == code);
    CHECK(type_of(error) == type);
    CHECK_FALSE(default_message(error).empty());
    const LocalAnswer answer = client_error(error);
    CHECK(answer.status == status);
    const std::string prefix = "{\"error\":{\"message\":\"";
    const std::string suffix = "\",\"type\":\"" + type + "\",\"code\":\"" + code + "\"}}";
    CHECK(answer.body.starts_with(prefix));
    CHECK(answer.body.ends_with(suffix));
}

TEST_CASE("client_error bodies are exact", "[local_answers]") {
    CHECK(client_error(ClientError::invalid_json).body ==
          R"({"error":{"message":"The request body is not valid JSON.","type":"invalid_request_error",)"
          R"("code":"invalid_json"}})");
    CHECK(client_error(ClientError::duplicate_model).body ==
          R"({"error":{"message":"The request body has more than one top-level `model`; send it once.",)"
          R"("type":"invalid_request_error","code":"duplicate_model"}})");
    const LocalAnswer not_found = client_error(ClientError::model_not_found, model_not_found_message("x\"y"));
    CHECK(not_found.status == 404);
    CHECK(not_found.body ==
          R"({"error":{"message":"No route serves the model `x\"y`.","type":"invalid_request_error",)"
          R"("code":"model_not_found"}})");
    const LocalAnswer explicit_status = client_error(413, "payload_too_large", "Body over 1 KiB.");
    CHECK(explicit_status.status == 413);
    CHECK(explicit_status.body ==
          R"({"error":{"message":"Body over 1 KiB.","type":"invalid_request_error","code":"payload_too_large"}})");
}

TEST_CASE("models_list lists every client model name in file order", "[local_answers]") {
    const LocalAnswer list = models_list(two_routes_and_wildcard());
    CHECK(list.status == 200);
    CHECK(list.body ==
          R"({"object":"list","data":[)"
          R"({"id":"gpt-4o","object":"model","created":0,"owned_by":"openai"},)"
          R"({"id":"fast","object":"model","created":0,"owned_by":"openai"},)"
          R"({"id":"claude","object":"model","created":0,"owned_by":"anthropic"}]})");
}

TEST_CASE("models_list lists a model served by several routes once, at its first route", "[local_answers]") {
    // gpt-4o has three deployments (docs/behaviour.md section 13): openai, then
    // azure-east, then azure-west; claude one.
    config::Config c = two_routes_and_wildcard();
    config::Route east;
    east.name = "azure-east";
    east.models = {model("gpt-4o", "gpt-4o-deployment"), model("o3", "o3")};
    config::Route west;
    west.name = "azure-west";
    west.models = {model("o3", "o3"), model("gpt-4o", "gpt-4o"), model("claude", "claude-sonnet-4-5")};
    c.routes.push_back(east);
    c.routes.push_back(west);
    const LocalAnswer list = models_list(c);
    CHECK(list.status == 200);
    CHECK(list.body ==
          R"({"object":"list","data":[)"
          R"({"id":"gpt-4o","object":"model","created":0,"owned_by":"openai"},)"
          R"({"id":"fast","object":"model","created":0,"owned_by":"openai"},)"
          R"({"id":"claude","object":"model","created":0,"owned_by":"anthropic"},)"
          R"({"id":"o3","object":"model","created":0,"owned_by":"azure-east"}]})");
    // The model object agrees with the list: the first route listing it.
    CHECK(model_object(c, "gpt-4o").body == R"({"id":"gpt-4o","object":"model","created":0,"owned_by":"openai"})");
    CHECK(model_object(c, "o3").body == R"({"id":"o3","object":"model","created":0,"owned_by":"azure-east"})");
}

TEST_CASE("models_list of a wildcard-only config is empty", "[local_answers]") {
    config::Config c;
    config::Route rest;
    rest.name = "openai";
    rest.wildcard = true;
    c.routes = {rest};
    CHECK(models_list(c).body == R"({"object":"list","data":[]})");
}

TEST_CASE("model_object answers a configured name, else 404 even with a wildcard route",
          "[local_answers]") {
    const config::Config c = two_routes_and_wildcard();
    const LocalAnswer fast = model_object(c, "fast");
    CHECK(fast.status == 200);
    CHECK(fast.body == R"({"id":"fast","object":"model","created":0,"owned_by":"openai"})");
    const LocalAnswer upstream_name = model_object(c, "gpt-4o-mini");
    CHECK(upstream_name.status == 404);
    const LocalAnswer unknown = model_object(c, "nope");
    CHECK(unknown.status == 404);
    CHECK(unknown.body ==
          R"({"error":{"message":"No route serves the model `nope`.","type":"invalid_request_error",)"
          R"("code":"model_not_found"}})");
}

TEST_CASE("healthz and readyz", "[local_answers]") {
    CHECK(healthz().status == 200);
    CHECK(healthz().body == R"({"status":"ok"})");
    CHECK(readyz(Readiness::ready).status == 200);
    CHECK(readyz(Readiness::ready).body == R"({"status":"ready"})");
    CHECK(readyz(Readiness::draining).status == 503);
    CHECK(readyz(Readiness::draining).body == R"({"status":"draining"})");
}
