// The top-level `models:` block of docs/behaviour.md section 13: per client
// model name, how its candidates are tried, and the rules that tie it to the
// routes (a name some route lists by name, once; fallbacks likewise, never
// the model itself, each once).
#include "config/loader.hpp"

#include <algorithm>
#include <array>

namespace modelproxy::config::detail {
namespace {

// The classes `fallback_on` may name (section 13): the five of its default
// and the three a config may add. The others (authentication, client,
// identity, credential, cancelled) are never a reason to try elsewhere.
constexpr std::array fallback_classes{
    policy::ErrorClass::network,         policy::ErrorClass::timeout,         policy::ErrorClass::server,
    policy::ErrorClass::rate_limit,      policy::ErrorClass::stream_incomplete,
    policy::ErrorClass::content_filter,  policy::ErrorClass::invalid_request, policy::ErrorClass::not_found,
};

constexpr std::string_view code_prefix = "code:";

struct NameSite {
    std::string name;
    std::string path;
};

class ModelsReader {
public:
    ModelsReader(const std::vector<std::string>* listed, Problems& problems) : listed_(listed), problems_(problems) {}

    ModelPolicy read(const YAML::Node& node, const std::string& path);

private:
    // Why `name` cannot be a models entry or a fallback: empty, or no route
    // lists it by name. "" when it can, or when the routes could not be read.
    std::string unserved_why(const std::string& name) const;
    void read_name(MapReader& reader, ModelPolicy& entry);
    void read_balance(MapReader& reader, ModelPolicy& entry);
    void read_fallbacks(MapReader& reader, ModelPolicy& entry, bool name_ok);
    void read_fallback_on(MapReader& reader, ModelPolicy& entry);

    const std::vector<std::string>* listed_;
    Problems& problems_;
    std::vector<NameSite> names_;
};

std::string ModelsReader::unserved_why(const std::string& name) const {
    if (name.empty()) {
        return "must not be empty";
    }
    if (listed_ == nullptr || std::find(listed_->begin(), listed_->end(), name) != listed_->end()) {
        return "";
    }
    return "no route lists model " + name + " by name (\"*\" does not count)";
}

void ModelsReader::read_name(MapReader& reader, ModelPolicy& entry) {
    if (!reader.has("name")) {
        reader.problem("name", "is required");
        return;
    }
    if (!reader.string("name", entry.name)) {
        return;
    }
    if (const std::string why = unserved_why(entry.name); !why.empty()) {
        reader.problem("name", why);
        return;
    }
    for (const NameSite& site : names_) {
        if (site.name == entry.name) {
            reader.problem("name", "model " + entry.name + " is listed twice in models (first at " + site.path + ")");
            return;
        }
    }
    names_.push_back(NameSite{entry.name, reader.path_of("name")});
}

void ModelsReader::read_balance(MapReader& reader, ModelPolicy& entry) {
    std::string balance;
    if (!reader.string("balance", balance)) {
        return;
    }
    if (balance == "ordered") {
        entry.balance = policy::Balance::ordered;
    } else if (balance == "weighted") {
        entry.balance = policy::Balance::weighted;
    } else {
        reader.problem("balance", "must be ordered or weighted, got \"" + balance + "\"");
    }
}

// Fallbacks of a fallback are not followed (section 13), so A -> B and
// B -> A together are fine: neither list grows past its own entries.
void ModelsReader::read_fallbacks(MapReader& reader, ModelPolicy& entry, bool name_ok) {
    if (!reader.string_list("fallbacks", entry.fallbacks)) {
        return;
    }
    const YAML::Node& list = *reader.find("fallbacks");
    const std::string path = reader.path_of("fallbacks");
    for (std::size_t i = 0; i < entry.fallbacks.size(); ++i) {
        const std::string& name = entry.fallbacks[i];
        const std::string item_path = join_index(path, i);
        const auto first = std::find(entry.fallbacks.begin(), entry.fallbacks.end(), name);
        std::string why = unserved_why(name);
        if (why.empty() && name_ok && name == entry.name) {
            why = "model " + name + " cannot be its own fallback (its deployments come first anyway)";
        } else if (why.empty() && first != entry.fallbacks.begin() + static_cast<std::ptrdiff_t>(i)) {
            why = "model " + name + " is listed twice in fallbacks (first at " +
                  join_index(path, static_cast<std::size_t>(first - entry.fallbacks.begin())) + ")";
        }
        if (!why.empty()) {
            problems_.add(list[i], item_path, why);
        }
    }
}

void ModelsReader::read_fallback_on(MapReader& reader, ModelPolicy& entry) {
    std::vector<std::string> items;
    if (!reader.string_list("fallback_on", items)) {
        return;
    }
    const YAML::Node& list = *reader.find("fallback_on");
    const std::string path = reader.path_of("fallback_on");
    // A list replaces the default whole; [] never falls over.
    policy::FallbackOn on;
    on.classes.clear();
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string& item = items[i];
        if (item.rfind(code_prefix, 0) == 0) {
            if (item.size() == code_prefix.size()) {
                problems_.add(list[i], join_index(path, i),
                              "code: needs the error code after it, as code:context_length_exceeded");
            } else {
                on.codes.push_back(item.substr(code_prefix.size()));
            }
            continue;
        }
        const auto cls = std::find_if(fallback_classes.begin(), fallback_classes.end(),
                                      [&](policy::ErrorClass c) { return policy::to_string(c) == item; });
        if (cls == fallback_classes.end()) {
            problems_.add(list[i], join_index(path, i),
                          "must be network, timeout, server, rate-limit, stream-incomplete, content-filter, "
                          "invalid-request, not-found or code:<error code>, got \"" + item + "\"");
        } else if (std::find(on.classes.begin(), on.classes.end(), *cls) == on.classes.end()) {
            on.classes.push_back(*cls);
        }
    }
    entry.fallback_on = std::move(on);
}

ModelPolicy ModelsReader::read(const YAML::Node& node, const std::string& path) {
    ModelPolicy entry;
    if (!node.IsMap()) {
        problems_.add(node, path, "must be a map with name and any of balance, attempts_per_candidate, "
                                  "fallbacks and fallback_on");
        return entry;
    }
    MapReader reader(node, path, "models[]", problems_);
    read_name(reader, entry);
    const bool name_ok = !entry.name.empty() && !problems_.has(reader.path_of("name"));
    read_balance(reader, entry);
    reader.integer("attempts_per_candidate", entry.attempts_per_candidate);
    read_fallbacks(reader, entry, name_ok);
    read_fallback_on(reader, entry);
    return entry;
}

}  // namespace

std::vector<std::string> listed_model_names(const YAML::Node& routes) {
    std::vector<std::string> names;
    if (!routes.IsSequence()) {
        return names;
    }
    for (const auto& route : routes) {
        if (!route.IsMap() || !route["models"] || !route["models"].IsSequence()) {
            continue;
        }
        for (const auto& model : route["models"]) {
            const YAML::Node name = model.IsMap() ? model["name"] : model;
            if (name && name.IsScalar() && name.Scalar() != "*") {
                names.push_back(name.Scalar());
            }
        }
    }
    return names;
}

std::vector<ModelPolicy> read_models_block(const YAML::Node& list, const std::vector<std::string>* listed,
                                           Problems& problems) {
    std::vector<ModelPolicy> models;
    if (!expect_list(list, "models", problems)) {
        return models;
    }
    ModelsReader reader(listed, problems);
    for (std::size_t i = 0; i < list.size(); ++i) {
        models.push_back(reader.read(list[i], join_index("models", i)));
    }
    return models;
}

}  // namespace modelproxy::config::detail
