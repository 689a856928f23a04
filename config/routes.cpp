// The `routes:` list: each route's keys, its models, its retry override (its
// admission override is in admission.cpp, its quota in fleet.cpp, its resume
// in route_resume.cpp), and the rules across routes (unique names, one "*").
// A model name may appear in several routes: those are its deployments
// (docs/behaviour.md section 13).
#include "config/loader.hpp"
#include "config/syntax.hpp"

#include <algorithm>

namespace modelproxy::config::detail {
namespace {

// Where a client model name (or "*") was listed, for the rules across routes.
struct ModelSite {
    std::string name;
    std::size_t route;
    std::string route_name;
    std::string path;
};

struct RouteNameSite {
    std::string name;
    std::string path;
};

class RoutesReader {
public:
    RoutesReader(const Catalogs& catalogs, Problems& problems) : catalogs_(catalogs), problems_(problems) {}

    std::optional<Route> read(const YAML::Node& node, std::size_t index);

private:
    void read_name(MapReader& reader, Route& route);
    void read_upstream(MapReader& reader, Route& route, bool& upstream_ok);
    void read_key(MapReader& reader, Route& route);
    void read_headers(MapReader& reader, Route& route);
    void read_query(MapReader& reader, Route& route);
    void read_tls(MapReader& reader, Route& route, bool upstream_ok);
    void read_dialect(MapReader& reader, Route& route);
    void read_models(MapReader& reader, Route& route, std::size_t index);
    std::optional<Model> read_model(const YAML::Node& node, const std::string& path, bool& wildcard);
    void add_model_site(const YAML::Node& at, const std::string& name, const std::string& path, std::size_t index,
                        const Route& route);
    void read_retry_override(MapReader& reader, Route& route);

    const Catalogs& catalogs_;
    Problems& problems_;
    std::vector<ModelSite> models_;
    std::vector<RouteNameSite> names_;
};

bool is_route_name(std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-';
    });
}

// Why a client or upstream model name is refused; "" when it is fine.
std::string model_name_why(std::string_view name) {
    if (name.empty()) {
        return "must not be empty";
    }
    if (name.find('*') != std::string_view::npos) {
        return "model names match exactly; only \"*\" alone, as a plain list entry, serves every model";
    }
    if (has_control_character(name)) {
        return "must not contain control characters";
    }
    return "";
}

void RoutesReader::read_name(MapReader& reader, Route& route) {
    if (!reader.has("name")) {
        reader.problem("name", "is required");
        return;
    }
    std::string name;
    if (!reader.string("name", name)) {
        return;
    }
    if (!is_route_name(name)) {
        reader.problem("name", name.empty() ? "must not be empty"
                                            : "must be letters, digits, '.', '_' or '-' (it names metrics labels)");
        return;
    }
    for (const RouteNameSite& site : names_) {
        if (site.name == name) {
            reader.problem("name", "route name " + name + " is already used by " + site.path);
            break;
        }
    }
    names_.push_back(RouteNameSite{name, reader.path()});
    route.name = name;
}

void RoutesReader::read_upstream(MapReader& reader, Route& route, bool& upstream_ok) {
    upstream_ok = false;
    if (!reader.has("upstream")) {
        reader.problem("upstream", "is required");
        return;
    }
    if (!reader.string("upstream", route.upstream_url)) {
        return;
    }
    auto parsed = parse_upstream(route.upstream_url);
    if (auto* why = std::get_if<std::string>(&parsed)) {
        reader.problem("upstream", *why);
        return;
    }
    route.upstream = std::get<Upstream>(std::move(parsed));
    upstream_ok = true;
}

void RoutesReader::read_key(MapReader& reader, Route& route) {
    std::string env;
    if (reader.string("api_key_env", env)) {
        if (!env.empty() && !is_env_name(env)) {
            // Never echo the value: a key pasted here by mistake must not reach a log.
            reader.problem("api_key_env", "must be the name of an environment variable, not its value");
        } else {
            route.api_key_env = env;
        }
    }
    std::string header;
    if (reader.string("api_key_header", header)) {
        const std::string lower = to_lower(header);
        if (!is_header_token(header)) {
            reader.problem("api_key_header", "must be a header name (an HTTP token)");
        } else if (const auto why = refused_header(lower)) {
            reader.problem("api_key_header", *why);
        } else {
            route.api_key_header = lower;
        }
    }
    route.api_key_prefix = route.api_key_header == "authorization" ? "Bearer " : "";
    std::string prefix;
    if (reader.string("api_key_prefix", prefix)) {
        if (!is_header_value(prefix)) {
            reader.problem("api_key_prefix", "must not contain control characters");
        } else {
            route.api_key_prefix = prefix;
        }
    }
    if (reader.boolean("api_key_required", route.api_key_required) && route.api_key_required &&
        route.api_key_env.empty() && !problems_.has(reader.path_of("api_key_env"))) {
        reader.problem("api_key_required", "is true but the route has no api_key_env");
    }
}

void RoutesReader::read_headers(MapReader& reader, Route& route) {
    const YAML::Node* node = reader.find("headers");
    const std::string path = reader.path_of("headers");
    if (node == nullptr || !expect_map(*node, path, problems_)) {
        return;
    }
    std::vector<std::string> seen;
    for (const auto& [key, value] : map_entries(*node, path, problems_)) {
        const std::string& name = key.Scalar();
        const std::string lower = to_lower(name);
        const std::string entry_path = join_key(path, name);
        std::string text;
        if (!is_header_token(name)) {
            problems_.add(key, entry_path, "is not a valid header name (an HTTP token)");
        } else if (const auto why = refused_header(lower)) {
            problems_.add(key, entry_path, *why);
        } else if (std::find(seen.begin(), seen.end(), lower) != seen.end()) {
            problems_.add(key, entry_path, "duplicate header (names are case-insensitive)");
        } else if (!route.api_key_env.empty() && lower == route.api_key_header) {
            problems_.add(key, entry_path, "is the route's api_key_header, which carries the key from api_key_env");
        } else if (read_string(value, entry_path, problems_, text)) {
            if (!is_header_value(text)) {
                problems_.add(value, entry_path, "must not contain control characters");
            } else {
                route.headers.emplace_back(name, text);
            }
        }
        seen.push_back(lower);
    }
}

void RoutesReader::read_query(MapReader& reader, Route& route) {
    const YAML::Node* node = reader.find("query");
    const std::string path = reader.path_of("query");
    if (node == nullptr || !expect_map(*node, path, problems_)) {
        return;
    }
    for (const auto& [key, value] : map_entries(*node, path, problems_)) {
        const std::string entry_path = join_key(path, key.Scalar());
        std::string text;
        if (key.Scalar().empty()) {
            problems_.add(key, entry_path, "a query parameter name must not be empty");
        } else if (read_string(value, entry_path, problems_, text)) {
            route.query.emplace_back(key.Scalar(), text);
        }
    }
}

void RoutesReader::read_tls(MapReader& route_reader, Route& route, bool upstream_ok) {
    const YAML::Node* node = route_reader.find("tls");
    const std::string path = route_reader.path_of("tls");
    if (node == nullptr || !expect_map(*node, path, problems_)) {
        return;
    }
    // File paths only: the files are read when the TLS context is built.
    MapReader reader(*node, path, "routes[].tls", problems_);
    reader.string("ca_file", route.tls.ca_file);
    reader.string("cert_file", route.tls.cert_file);
    reader.string("key_file", route.tls.key_file);
    if (!route.tls.cert_file.empty() && route.tls.key_file.empty()) {
        reader.problem("key_file", "is required when cert_file is set");
    }
    if (route.tls.cert_file.empty() && !route.tls.key_file.empty()) {
        reader.problem("cert_file", "is required when key_file is set");
    }
    if (upstream_ok && !route.upstream.https) {
        for (const char* key : {"ca_file", "cert_file", "key_file"}) {
            if (const YAML::Node* file = reader.find(key); file != nullptr && file->IsScalar() && !file->Scalar().empty()) {
                reader.problem(key, "applies only to https:// upstreams; " + route.upstream_url + " is plain http");
            }
        }
    }
}

void RoutesReader::read_dialect(MapReader& reader, Route& route) {
    std::string dialect;
    if (!reader.string("dialect", dialect)) {
        return;
    }
    if (dialect == "openai") {
        route.dialect = Dialect::openai;
    } else if (dialect == "anthropic") {
        route.dialect = Dialect::anthropic;
    } else if (dialect == "generic") {
        route.dialect = Dialect::generic;
    } else {
        reader.problem("dialect", "must be openai, anthropic or generic, got \"" + dialect + "\"");
    }
}

std::optional<Model> RoutesReader::read_model(const YAML::Node& node, const std::string& path, bool& wildcard) {
    wildcard = false;
    if (node.IsScalar()) {
        const std::string& name = node.Scalar();
        if (name == "*") {
            wildcard = true;
            return std::nullopt;
        }
        if (const std::string why = model_name_why(name); !why.empty()) {
            problems_.add(node, path, why);
            return std::nullopt;
        }
        return Model{name, name, {}};
    }
    if (!node.IsMap()) {
        problems_.add(node, path, "must be a model name or a map with name, upstream_model and accept");
        return std::nullopt;
    }
    MapReader reader(node, path, "routes[].models[]", problems_);
    Model model;
    bool ok = true;
    if (!reader.has("name")) {
        reader.problem("name", "is required");
        ok = false;
    } else if (reader.string("name", model.name)) {
        const std::string why = model.name == "*" ? "\"*\" is allowed only as a plain list entry: - \"*\""
                                                  : model_name_why(model.name);
        if (!why.empty()) {
            reader.problem("name", why);
            ok = false;
        }
    } else {
        ok = false;
    }
    model.upstream_model = model.name;
    if (reader.string("upstream_model", model.upstream_model)) {
        if (const std::string why = model_name_why(model.upstream_model); !why.empty()) {
            reader.problem("upstream_model", why);
            ok = false;
        }
    } else if (reader.has("upstream_model")) {
        ok = false;
    }
    // Without `accept` the list stays empty: the default rule (config.hpp).
    if (reader.string_list("accept", model.accept)) {
        if (model.accept.empty()) {
            reader.problem("accept", "must list at least one identity; without it every answer is refused");
            ok = false;
        }
        for (std::size_t i = 0; i < model.accept.size(); ++i) {
            const std::string& glob = model.accept[i];
            if (glob.empty() || has_control_character(glob)) {
                problems_.add((*reader.find("accept"))[i], join_index(reader.path_of("accept"), i),
                              glob.empty() ? "must not be empty" : "must not contain control characters");
                ok = false;
            }
        }
    } else if (reader.has("accept")) {
        ok = false;
    }
    if (!ok) {
        return std::nullopt;
    }
    return model;
}

void RoutesReader::add_model_site(const YAML::Node& at, const std::string& name, const std::string& path,
                                  std::size_t index, const Route& route) {
    for (const ModelSite& site : models_) {
        if (site.name != name) {
            continue;
        }
        if (site.route == index) {
            problems_.add(at, path, "model " + name + " is listed twice in this route (first at " + site.path + ")");
            return;
        }
        if (name == "*") {
            problems_.add(at, path, "only one route may list \"*\"; route " + site.route_name + " already does (" +
                                        site.path + ")");
            return;
        }
    }
    models_.push_back(ModelSite{name, index, route.name.empty() ? join_index("routes", index) : route.name, path});
}

void RoutesReader::read_models(MapReader& reader, Route& route, std::size_t index) {
    const YAML::Node* node = reader.find("models");
    const std::string path = reader.path_of("models");
    if (node == nullptr) {
        reader.problem("models", "is required (list the model names this route serves, or \"*\")");
        return;
    }
    if (!expect_list(*node, path, problems_)) {
        return;
    }
    if (node->size() == 0) {
        reader.problem("models", "must list at least one model, or \"*\"");
        return;
    }
    for (std::size_t i = 0; i < node->size(); ++i) {
        const YAML::Node entry = (*node)[i];
        const std::string entry_path = join_index(path, i);
        bool wildcard = false;
        std::optional<Model> model = read_model(entry, entry_path, wildcard);
        if (wildcard) {
            route.wildcard = true;
            add_model_site(entry, "*", entry_path, index, route);
        } else if (model) {
            const std::string name_path = entry.IsMap() ? join_key(entry_path, "name") : entry_path;
            add_model_site(entry.IsMap() ? entry["name"] : entry, model->name, name_path, index, route);
            route.models.push_back(std::move(*model));
        }
    }
}

void RoutesReader::read_retry_override(MapReader& route_reader, Route& route) {
    route.retry = catalogs_.retry;
    const YAML::Node* node = route_reader.find("retry");
    const std::string path = route_reader.path_of("retry");
    if (node != nullptr && expect_map(*node, path, problems_)) {
        MapReader reader(*node, path, "retry", problems_);
        read_retry(reader, route.retry);
        check_delays(reader, route.retry, problems_);
        check_budget(reader, route.retry, problems_);
    }
    // min_attempt_ms < timeout_ms, with the route's merged retry. The problem
    // goes on the key this route set; a refused value is not judged again.
    const std::string min_path = join_key(path, "min_attempt_ms");
    const bool own_min = node != nullptr && node->IsMap() && (*node)["min_attempt_ms"];
    const std::string timeout_path = route_reader.path_of("timeout_ms");
    if (problems_.has(min_path) || problems_.has(timeout_path) || (!own_min && problems_.has("retry.min_attempt_ms"))) {
        return;
    }
    if (route.retry.min_attempt_ms < route.timeout_ms) {
        return;
    }
    const std::string numbers = "min_attempt_ms (" + std::to_string(route.retry.min_attempt_ms) +
                                ") must be less than timeout_ms (" + std::to_string(route.timeout_ms) + ")";
    if (own_min) {
        problems_.add((*node)["min_attempt_ms"], min_path, numbers);
    } else {
        route_reader.problem("timeout_ms", numbers);
    }
}

std::optional<Route> RoutesReader::read(const YAML::Node& node, std::size_t index) {
    const std::string path = join_index("routes", index);
    if (!expect_map(node, path, problems_)) {
        return std::nullopt;
    }
    MapReader reader(node, path, "routes[]", problems_);
    Route route;
    bool upstream_ok = false;
    read_name(reader, route);
    read_upstream(reader, route, upstream_ok);
    read_key(reader, route);
    read_headers(reader, route);
    read_query(reader, route);
    read_tls(reader, route, upstream_ok);
    read_dialect(reader, route);
    reader.integer("connect_timeout_ms", route.connect_timeout_ms);
    reader.integer("timeout_ms", route.timeout_ms);
    reader.integer("stream_idle_timeout_ms", route.stream_idle_timeout_ms);
    reader.integer("stream_head_hold_ms", route.stream_head_hold_ms);
    reader.integer("max_stream_ms", route.max_stream_ms);
    read_route_outage(reader, route, problems_);
    read_models(reader, route, index);
    read_retry_override(reader, route);
    read_route_admission(reader, route, catalogs_, problems_);
    read_route_quota(reader, route, problems_);
    read_route_resume(reader, route, problems_);
    return route;
}

}  // namespace

std::vector<Route> read_routes(const YAML::Node& list, const Catalogs& catalogs, Problems& problems) {
    std::vector<Route> routes;
    if (!expect_list(list, "routes", problems)) {
        return routes;
    }
    if (list.size() == 0) {
        problems.add(list, "routes", "must list at least one route");
        return routes;
    }
    RoutesReader reader(catalogs, problems);
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (auto route = reader.read(list[i], i)) {
            routes.push_back(std::move(*route));
        }
    }
    return routes;
}

}  // namespace modelproxy::config::detail
