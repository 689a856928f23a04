// The proxy's own error answers in the shapes the SDKs read (docs/behaviour.md sections 7
// and 9): the Anthropic envelope, and the closing error event per endpoint.
#include "request/local_answers.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy;
using namespace modelproxy::request;
using policy::Endpoint;
using policy::ErrorShape;

namespace {

// The JSON of an event's one data line; the event's lines before it in `head`.
boost::json::object event_data(const std::string& event, std::string& head) {
    REQUIRE(event.size() > 2);
    CHECK(event.substr(event.size() - 2) == "\n\n");
    const std::size_t data = event.find("data: ");
    REQUIRE(data != std::string::npos);
    head = event.substr(0, data);
    return boost::json::parse(event.substr(data + 6, event.size() - data - 8)).as_object();
}

const ClosingError incomplete{"the upstream stream broke before its end", "stream_incomplete", 502, "network",
                              "terminal", "", 2, 7};

}  // namespace

TEST_CASE("the Anthropic envelope: Anthropic's type for the status, the section 9 members beside it",
          "[error_shapes]") {
    EnvelopeDetails details{"timeout", 3, "deadline", "deadline"};
    CHECK(error_envelope(ErrorShape::anthropic, 504, "no answer in time", modelproxy_error_type, "deadline", details) ==
          R"({"type":"error","error":{"type":"timeout_error","message":"no answer in time","code":"deadline",)"
          R"("class":"timeout","attempts":3,"decision":"deadline","bound":"deadline"}})");
    CHECK(error_envelope(ErrorShape::anthropic, 502, "m \"q\"", modelproxy_error_type, "connection_dropped") ==
          R"({"type":"error","error":{"type":"api_error","message":"m \"q\"","code":"connection_dropped"}})");
    // The OpenAI shape is the section 9 envelope unchanged.
    CHECK(error_envelope(ErrorShape::openai, 502, "m", modelproxy_error_type, "c") ==
          error_envelope("m", modelproxy_error_type, "c"));
}

TEST_CASE("bad client input on /v1/messages gets the Anthropic shape", "[error_shapes]") {
    auto [error, type] = GENERATE(table<ClientError, std::string>({
        {ClientError::invalid_json, "invalid_request_error"},
        {ClientError::unauthorized, "authentication_error"},
        {ClientError::model_not_found, "not_found_error"},
        {ClientError::payload_too_large, "request_too_large"},
        {ClientError::header_too_large, "invalid_request_error"},
        {ClientError::too_many_connections, "overloaded_error"},
    }));
    const LocalAnswer a = client_error(error, ErrorShape::anthropic);
    CHECK(a.status == status_of(error));
    const auto o = boost::json::parse(a.body).as_object();
    CHECK(o.at("type") == "error");
    const auto& e = o.at("error").as_object();
    CHECK(e.at("type").as_string() == type);
    CHECK(e.at("message").as_string() == default_message(error));
    CHECK(e.at("code").as_string() == code_of(error));
    // A message of its own replaces the default one; the OpenAI shape is the old answer.
    CHECK(boost::json::parse(client_error(error, ErrorShape::anthropic, "mine").body).at("error").at("message") ==
          "mine");
    CHECK(client_error(error, ErrorShape::openai).body == client_error(error).body);
}

TEST_CASE("the closing error event on /responses is the Responses API's error event", "[error_shapes]") {
    std::string head;
    const auto o = event_data(closing_error_event(Endpoint::responses, ErrorShape::openai, incomplete), head);
    CHECK(head == "event: error\n");
    CHECK(o.at("type") == "error");
    CHECK(o.at("code") == "stream_incomplete");
    CHECK(o.at("message") == "the upstream stream broke before its end");
    CHECK(o.at("param").is_null());
    CHECK(o.at("sequence_number") == 7);
    CHECK(o.at("class") == "network");
    CHECK(o.at("decision") == "terminal");
    CHECK(o.at("bound").is_null());
    CHECK(o.at("attempts") == 2);
    CHECK_FALSE(o.contains("error"));
}

TEST_CASE("the closing error event on /messages is Anthropic's error event", "[error_shapes]") {
    std::string head;
    const auto o = event_data(closing_error_event(Endpoint::messages, ErrorShape::anthropic, incomplete), head);
    CHECK(head == "event: error\n");
    CHECK(o.at("type") == "error");
    const auto& e = o.at("error").as_object();
    CHECK(e.at("type") == "api_error");
    CHECK(e.at("message") == "the upstream stream broke before its end");
    CHECK(e.at("code") == "stream_incomplete");
    CHECK(e.at("class") == "network");
    CHECK(e.at("attempts") == 2);
}

TEST_CASE("the closing error event elsewhere keeps the chat shape", "[error_shapes]") {
    std::string head;
    ClosingError refused = incomplete;
    refused.type = "model_identity_mismatch";
    refused.bound = "max_attempts";
    const auto o = event_data(closing_error_event(Endpoint::chat_completions, ErrorShape::openai, refused), head);
    CHECK(head.empty());
    const auto& e = o.at("error").as_object();
    CHECK(e.at("type") == "model_identity_mismatch");
    CHECK(e.at("code") == 502);
    CHECK(e.at("bound") == "max_attempts");
    CHECK_FALSE(o.contains("type"));
}
