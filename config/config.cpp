// Problem lines and the lookups the proxy makes on a loaded Config. Loading
// is in load.cpp and routes.cpp, the schema in schema.cpp, address parsing in
// syntax.cpp, environment variables in environment.cpp.
#include "config/config.hpp"

namespace modelproxy::config {

std::string Problem::line() const {
    if (path.empty()) {
        return why;
    }
    return path + ": " + why;
}

ModelMatch find_model(const Config& config, std::string_view client_model) {
    // A model name is in one route only (load_config refuses duplicates), so
    // the first exact match is the only one.
    for (const Route& route : config.routes) {
        for (const Model& model : route.models) {
            if (model.name == client_model) {
                return ModelMatch{&route, &model};
            }
        }
    }
    return ModelMatch{wildcard_route(config), nullptr};
}

const Route* wildcard_route(const Config& config) {
    for (const Route& route : config.routes) {
        if (route.wildcard) {
            return &route;
        }
    }
    return nullptr;
}

}  // namespace modelproxy::config
