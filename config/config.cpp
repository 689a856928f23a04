// Problem lines and the lookups the proxy makes on a loaded Config. Loading
// is in load.cpp, routes.cpp, route_outage.cpp and models_block.cpp, the
// schema in schema.cpp, address parsing in syntax.cpp, environment variables
// in environment.cpp.
#include "config/config.hpp"

namespace modelproxy::config {

namespace {

// A problem is printed as one line (docs/behaviour.md section 2), but its path and reason
// echo keys and values from the file, which may hold line breaks: those and
// other control characters (not tab) are written escaped, so a value cannot
// end its line early or forge the next one.
void append_escaped(std::string& out, std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if ((u < 0x20 && c != '\t') || u == 0x7f) {
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 0xF];
        } else {
            out += c;
        }
    }
}

}  // namespace

std::string Problem::line() const {
    std::string out;
    append_escaped(out, path);
    if (!path.empty()) {
        out += ": ";
    }
    append_escaped(out, why);
    return out;
}

ModelMatch find_model(const Config& config, std::string_view client_model) {
    // A name listed by several routes is found at its first deployment in
    // config order; a route lists a name once (load_config refuses more).
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

std::vector<Deployment> deployments_of(const Config& config, std::string_view name) {
    std::vector<Deployment> deployments;
    for (std::size_t r = 0; r < config.routes.size(); ++r) {
        const std::vector<Model>& models = config.routes[r].models;
        for (std::size_t m = 0; m < models.size(); ++m) {
            if (models[m].name == name) {
                deployments.push_back(Deployment{r, m});
                break;  // once per route
            }
        }
    }
    return deployments;
}

const ModelPolicy& model_policy(const Config& config, std::string_view name) {
    static const ModelPolicy defaults;
    for (const ModelPolicy& entry : config.models) {
        if (entry.name == name) {
            return entry;
        }
    }
    return defaults;
}

}  // namespace modelproxy::config
