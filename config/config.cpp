// Problem lines and the lookups the proxy makes on a loaded Config. Loading
// is in load.cpp and routes.cpp, the schema in schema.cpp, address parsing in
// syntax.cpp, environment variables in environment.cpp.
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
