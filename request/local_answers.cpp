#include "request/local_answers.hpp"

#include "request/json_string.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <string_view>
#include <vector>

namespace modelproxy::request {

namespace json = boost::json;

namespace {

struct ErrorRow {
    unsigned status;
    std::string_view code;
    std::string_view message;
};

ErrorRow row_of(ClientError error) {
    switch (error) {
    case ClientError::bad_request:
        return {400, "bad_request", "The request is not valid HTTP/1.1."};
    case ClientError::invalid_json:
        return {400, "invalid_json", "The request body is not valid JSON."};
    case ClientError::missing_model:
        return {400, "missing_model",
                "The request body has no top-level string `model`, and no route serves "
                "requests without one."};
    case ClientError::duplicate_model:
        return {400, "duplicate_model",
                "The request body has more than one top-level `model`; send it once."};
    case ClientError::invalid_path:
        return {400, "invalid_path",
                "The request path has a `..` segment, an encoded dot or slash, or is not "
                "an origin-form path."};
    case ClientError::unauthorized:
        return {401, "unauthorized",
                "A valid client token is required: send `Authorization: Bearer <token>` "
                "or `x-api-key: <token>`."};
    case ClientError::not_found:
        return {404, "not_found", "Nothing is served at this path."};
    case ClientError::model_not_found:
        return {404, "model_not_found", "No route serves the requested model."};
    case ClientError::no_route:
        return {404, "no_route",
                "No route serves this request: it names no model and no route serves every "
                "model."};
    case ClientError::method_not_allowed:
        return {405, "method_not_allowed", "This path does not accept that method."};
    case ClientError::request_timeout:
        return {408, "request_timeout", "The request head was not received in time."};
    case ClientError::payload_too_large:
        return {413, "payload_too_large", "The request body is larger than this proxy accepts."};
    case ClientError::unsupported_content_encoding:
        return {415, "unsupported_content_encoding",
                "Request bodies must not be encoded: only Content-Encoding identity is "
                "accepted."};
    case ClientError::header_too_large:
        return {431, "header_too_large",
                "The request headers are larger than this proxy accepts."};
    case ClientError::too_many_connections:
        return {503, "too_many_connections",
                "The proxy is at its connection limit; try again later."};
    }
    return {500, "internal_error", "Internal error."};
}

json::object model_entry(std::string_view id, std::string_view owner) {
    json::object entry;
    entry["id"] = id;
    entry["object"] = "model";
    entry["created"] = 0;
    entry["owned_by"] = owner;
    return entry;
}

std::string status_body(std::string_view status) {
    json::object body;
    body["status"] = status;
    return json::serialize(body);
}

}  // namespace

unsigned status_of(ClientError error) { return row_of(error).status; }
std::string_view code_of(ClientError error) { return row_of(error).code; }
std::string_view default_message(ClientError error) { return row_of(error).message; }

std::string_view type_of(ClientError error) {
    return error == ClientError::too_many_connections ? modelproxy_error_type
                                                      : invalid_request_error_type;
}

std::string error_envelope(std::string_view message, std::string_view type, std::string_view code,
                           const EnvelopeDetails& details) {
    // Written member by member, in the order section 9 shows; every string
    // through append_json_string, so that the body is valid JSON whatever
    // bytes a client put into the message (a path, a model name).
    std::string out;
    out.reserve(96 + message.size());
    const auto member = [&](std::string_view key, std::string_view value) {
        out += ",\"";
        out += key;
        out += "\":";
        append_json_string(out, value);
    };
    out += R"({"error":{"message":)";
    append_json_string(out, message);
    member("type", type);
    member("code", code);
    if (details.error_class) member("class", *details.error_class);
    if (details.attempts) {
        out += R"(,"attempts":)";
        out += std::to_string(*details.attempts);
    }
    if (details.decision) member("decision", *details.decision);
    if (details.bound) member("bound", *details.bound);
    out += "}}";
    return out;
}

std::string error_envelope(policy::ErrorShape shape, unsigned status, std::string_view message,
                           std::string_view type, std::string_view code, const EnvelopeDetails& details) {
    if (shape == policy::ErrorShape::openai) return error_envelope(message, type, code, details);
    json::object error;
    error["type"] = policy::anthropic_error_type(status);
    error["message"] = message;
    error["code"] = code;
    if (details.error_class) error["class"] = *details.error_class;
    if (details.attempts) error["attempts"] = *details.attempts;
    if (details.decision) error["decision"] = *details.decision;
    if (details.bound) error["bound"] = *details.bound;
    json::object envelope;
    envelope["type"] = "error";
    envelope["error"] = std::move(error);
    return json::serialize(envelope);
}

std::string closing_error_event(policy::Endpoint endpoint, policy::ErrorShape shape, const ClosingError& e) {
    const auto add_details = [&](json::object& o) {
        o["class"] = e.error_class;
        o["decision"] = e.decision;
        if (e.bound.empty()) {
            o["bound"] = nullptr;
        } else {
            o["bound"] = e.bound;
        }
        o["attempts"] = e.attempts;
    };
    json::object event;
    if (endpoint == policy::Endpoint::responses) {
        event["type"] = "error";
        event["code"] = e.type;
        event["message"] = e.message;
        event["param"] = nullptr;
        event["sequence_number"] = e.sequence_number;
        add_details(event);
        return "event: error\ndata: " + json::serialize(event) + "\n\n";
    }
    json::object error;
    if (shape == policy::ErrorShape::anthropic) {
        error["type"] = "api_error";
        error["message"] = e.message;
        error["code"] = e.type;
        add_details(error);
        event["type"] = "error";
        event["error"] = std::move(error);
        return "event: error\ndata: " + json::serialize(event) + "\n\n";
    }
    error["type"] = e.type;
    error["code"] = e.code;
    error["message"] = e.message;
    add_details(error);
    event["error"] = std::move(error);
    return "data: " + json::serialize(event) + "\n\n";
}

LocalAnswer client_error(unsigned status, std::string_view code, std::string_view message) {
    return {status, error_envelope(message, invalid_request_error_type, code)};
}

LocalAnswer client_error(ClientError error) { return client_error(error, default_message(error)); }

LocalAnswer client_error(ClientError error, std::string_view message) {
    return {status_of(error), error_envelope(message, type_of(error), code_of(error))};
}

LocalAnswer client_error(ClientError error, policy::ErrorShape shape, std::string_view message) {
    if (message.empty()) message = default_message(error);
    return {status_of(error), error_envelope(shape, status_of(error), message, type_of(error), code_of(error))};
}

std::string model_not_found_message(std::string_view model) {
    std::string message = "No route serves the model `";
    message += model;
    message += "`.";
    return message;
}

LocalAnswer models_list(const config::Config& config) {
    json::array data;
    std::vector<std::string_view> listed;
    for (const auto& route : config.routes) {
        for (const auto& model : route.models) {
            // A model with several deployments (section 13) is one model to
            // a client: listed once, at its first route.
            if (std::find(listed.begin(), listed.end(), model.name) != listed.end()) continue;
            listed.push_back(model.name);
            data.push_back(model_entry(model.name, route.name));
        }
    }
    json::object list;
    list["object"] = "list";
    list["data"] = std::move(data);
    return {200, json::serialize(list)};
}

LocalAnswer model_object(const config::Config& config, std::string_view id) {
    for (const auto& route : config.routes) {
        for (const auto& model : route.models) {
            if (model.name == id) return {200, json::serialize(model_entry(model.name, route.name))};
        }
    }
    return client_error(ClientError::model_not_found, model_not_found_message(id));
}

LocalAnswer healthz() { return {200, status_body("ok")}; }

LocalAnswer readyz(Readiness readiness) {
    if (readiness == Readiness::draining) return {503, status_body("draining")};
    return {200, status_body("ready")};
}

}  // namespace modelproxy::request
