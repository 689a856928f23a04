#include "request/routing.hpp"

#include "request/target.hpp"

namespace modelproxy::request {

RouteDecision decide_route(std::string_view method, std::string_view path, const BodyFacts& facts,
                           const config::Config& config) {
    if (facts.kind == BodyKind::json && facts.json.shape == JsonShape::invalid) {
        return Refusal{ClientError::invalid_json, std::string(default_message(ClientError::invalid_json))};
    }
    const ModelField model = facts.model();
    if (model == ModelField::duplicate) {
        return Refusal{ClientError::duplicate_model,
                       std::string(default_message(ClientError::duplicate_model))};
    }
    const std::string& name = facts.model_name();
    if (method == "POST" && model == ModelField::string) {
        const config::ModelMatch match = config::find_model(config, name);
        if (!match.route) return Refusal{ClientError::model_not_found, model_not_found_message(name)};
        Forward forward{match.route, match.model, name, std::nullopt};
        if (match.model && !match.model->upstream_model.empty() && match.model->upstream_model != name) {
            forward.upstream_model = match.model->upstream_model;
        }
        return forward;
    }
    if (const config::Route* wildcard = config::wildcard_route(config)) {
        return Forward{wildcard, nullptr, model == ModelField::string ? name : std::string(), std::nullopt};
    }
    // Section 4: "405 for a known path with a wrong method".
    if (is_models_path(path)) {
        return Refusal{ClientError::method_not_allowed,
                       std::string(default_message(ClientError::method_not_allowed))};
    }
    if (facts.kind == BodyKind::json && model != ModelField::string) {
        if (model == ModelField::not_string) {
            return Refusal{ClientError::missing_model,
                           "The top-level `model` of the request body must be a string."};
        }
        return Refusal{ClientError::missing_model, std::string(default_message(ClientError::missing_model))};
    }
    return Refusal{ClientError::no_route, std::string(default_message(ClientError::no_route))};
}

}  // namespace modelproxy::request
