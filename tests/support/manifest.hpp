// Reading the Kubernetes manifests in deploy/kubernetes/ (docs/operations.md
// "Kubernetes sidecar" and "Running a fleet") for the "[deploy]" tests:
// safe walks through yaml-cpp nodes, the sidecar manifest with its
// ConfigMap's config loaded by the proxy's own loader, and a container's
// environment as the kubelet would build it from the Secret. Header-only: it
// uses Catch2's macros, which belong to the test executable.
#pragma once

#include "config/config.hpp"
#include "support/child_process.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::test::manifest {

inline std::filesystem::path kubernetes_dir() { return source_dir() / "deploy" / "kubernetes"; }

// yaml-cpp throws when a missing key is indexed again, and assigning one
// Node to another overwrites the node in the document (reset() rebinds, as
// used throughout). This walks `path` and returns an undefined node (false
// in a condition) at the first missing key, so a missing key fails a check
// instead of ending the run.
inline YAML::Node get(const YAML::Node& start, std::initializer_list<std::string_view> path) {
    YAML::Node node = start;
    for (auto key : path) {
        if (!node || !node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
        const YAML::Node& map = node;
        YAML::Node next = map[std::string(key)];
        if (!next) return YAML::Node(YAML::NodeType::Undefined);
        node.reset(next);  // rebinds; `=` would overwrite the document node
    }
    return node;
}

inline std::string text(const YAML::Node& start, std::initializer_list<std::string_view> path) {
    const YAML::Node node = get(start, path);
    return node && node.IsScalar() ? node.as<std::string>() : std::string();
}

inline std::vector<std::string> strings(const YAML::Node& seq) {
    std::vector<std::string> out;
    for (const auto& item : seq) out.push_back(item.as<std::string>());
    return out;
}

// The value after `flag` in `args`, or "".
inline std::string flag_value(const std::vector<std::string>& args, std::string_view flag) {
    auto it = std::find(args.begin(), args.end(), flag);
    return it != args.end() && it + 1 != args.end() ? *(it + 1) : std::string();
}

inline YAML::Node container_named(const YAML::Node& pod_spec, std::string_view name) {
    for (const auto& c : get(pod_spec, {"containers"}))
        if (text(c, {"name"}) == name) return c;
    return YAML::Node(YAML::NodeType::Undefined);
}

// Every document of a manifest; each must be a map naming its apiVersion,
// kind and metadata.name.
inline std::vector<YAML::Node> load_documents(const std::filesystem::path& path) {
    REQUIRE(std::filesystem::exists(path));
    std::vector<YAML::Node> documents;
    REQUIRE_NOTHROW(documents = YAML::LoadAllFromFile(path.string()));
    for (const auto& doc : documents) {
        REQUIRE(doc.IsMap());
        REQUIRE_FALSE(text(doc, {"apiVersion"}).empty());
        REQUIRE_FALSE(text(doc, {"kind"}).empty());
        REQUIRE_FALSE(text(doc, {"metadata", "name"}).empty());
    }
    return documents;
}

// The pod spec of a Pod, or of a workload's template.
inline YAML::Node pod_spec_of(const YAML::Node& doc) {
    const std::string kind = text(doc, {"kind"});
    if (kind == "Pod") return get(doc, {"spec"});
    if (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "Job")
        return get(doc, {"spec", "template", "spec"});
    return YAML::Node(YAML::NodeType::Undefined);
}

// deploy/kubernetes/modelproxy-sidecar.yaml.
struct Sidecar {
    std::vector<YAML::Node> documents;
    YAML::Node config_map;
    YAML::Node secret;
    YAML::Node pod_spec;  // a Pod's spec, or a workload's spec.template.spec
    YAML::Node proxy;     // the container running modelproxy
    YAML::Node agent;     // the other container
    std::string config_yaml;
    config::Config config;
};

// Loads the sidecar manifest and the ConfigMap's modelproxy.yaml; REQUIREs
// the shape the checks rely on.
inline Sidecar load_sidecar() {
    Sidecar m;
    m.documents = load_documents(kubernetes_dir() / "modelproxy-sidecar.yaml");
    for (const auto& doc : m.documents) {
        const std::string kind = text(doc, {"kind"});
        if (kind == "ConfigMap") m.config_map.reset(doc);
        if (kind == "Secret") m.secret.reset(doc);
        if (const YAML::Node spec = pod_spec_of(doc)) m.pod_spec.reset(spec);
    }
    REQUIRE(m.config_map);
    REQUIRE(m.secret);
    REQUIRE(m.pod_spec);
    m.proxy.reset(container_named(m.pod_spec, "modelproxy"));
    REQUIRE(m.proxy);
    for (const auto& c : get(m.pod_spec, {"containers"}))
        if (text(c, {"name"}) != "modelproxy") m.agent.reset(c);
    REQUIRE(m.agent);

    m.config_yaml = text(m.config_map, {"data", "modelproxy.yaml"});
    REQUIRE_FALSE(m.config_yaml.empty());
    auto loaded = config::load_config(m.config_yaml);
    for (const auto& p : loaded.problems) UNSCOPED_INFO(p.line());
    REQUIRE(loaded.config);
    m.config = std::move(*loaded.config);
    return m;
}

// The secretKeyRef (name, key) a container's variable `name` comes from;
// empty strings when it has none.
inline std::pair<std::string, std::string> secret_ref(const YAML::Node& container, std::string_view name) {
    for (const auto& e : get(container, {"env"}))
        if (text(e, {"name"}) == name)
            return {text(e, {"valueFrom", "secretKeyRef", "name"}), text(e, {"valueFrom", "secretKeyRef", "key"})};
    return {};
}

// A container's environment as the kubelet builds it: each `value`, and
// each secretKeyRef to `secret` read from its stringData (the manifests
// ship placeholders there). A reference to any other Secret, or to a key
// the Secret lacks, fails the test: the pod would not start.
inline Environment container_env(const YAML::Node& container, const YAML::Node& secret) {
    Environment env;
    for (const auto& e : get(container, {"env"})) {
        const std::string name = text(e, {"name"});
        CAPTURE(name);
        if (get(e, {"value"})) {
            env[name] = text(e, {"value"});
            continue;
        }
        const YAML::Node ref = get(e, {"valueFrom", "secretKeyRef"});
        REQUIRE(ref);
        REQUIRE(text(ref, {"name"}) == text(secret, {"metadata", "name"}));
        const std::string value = text(secret, {"stringData", text(ref, {"key"})});
        REQUIRE_FALSE(value.empty());
        env[name] = value;
    }
    return env;
}

// Kubernetes' $(VAR) expansion of a command or args entry against the
// container's environment (an unknown variable stays as written, as the
// kubelet leaves it).
inline std::string expand(const std::string& arg, const Environment& env) {
    std::string out;
    for (std::size_t i = 0; i < arg.size();) {
        if (arg.compare(i, 2, "$(") == 0) {
            const auto close = arg.find(')', i + 2);
            if (close != std::string::npos) {
                const auto it = env.find(arg.substr(i + 2, close - i - 2));
                if (it != env.end()) {
                    out += it->second;
                    i = close + 1;
                    continue;
                }
            }
        }
        out += arg[i++];
    }
    return out;
}

}  // namespace modelproxy::test::manifest
