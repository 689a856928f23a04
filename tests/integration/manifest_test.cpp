// deploy/kubernetes/modelproxy-sidecar.yaml (docs/operations.md "Kubernetes sidecar"):
// the facts that make the sidecar work, checked against the config it ships
// and the image it names: every document parses; the probes reach /healthz
// and /readyz where the ConfigMap's config listens (and run, as written,
// against the real binary); the grace period outlasts preStop plus the
// drain; the key comes from the Secret under the route's api_key_env; the
// config passes `modelproxy check` with the environment the pod gives it;
// the container is locked down. The fleet's Redis (redis.yaml) is checked by
// manifest_redis_test.cpp.
#include "support/manifest.hpp"

#include "support/proxy_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/url/parse.hpp>
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <fstream>

using namespace modelproxy;
using namespace modelproxy::test;
using namespace modelproxy::test::manifest;

namespace {

struct ProbeCall {
    std::string host;
    std::uint16_t port = 0;
    std::string path;
    std::vector<std::string> command;
};

// A probe as the kubelet would run it: exec `modelproxy probe URL`, or httpGet.
ProbeCall probe_of(const Sidecar& m, const YAML::Node& probe) {
    ProbeCall call;
    if (get(probe, {"exec"})) {
        call.command = strings(get(probe, {"exec", "command"}));
        REQUIRE(call.command.size() >= 3);
        CHECK(call.command[1] == "probe");
        const auto url = boost::urls::parse_absolute_uri(call.command[2]);
        REQUIRE(url);
        CHECK(url->scheme() == "http");
        call.host = url->host();
        call.port = static_cast<std::uint16_t>(url->port_number());
        call.path = url->path();
        // The probe runs in the pod's network namespace: loopback reaches a
        // loopback or wildcard listener.
        CHECK((call.host == m.config.listen_host || call.host == "127.0.0.1"));
    } else {
        REQUIRE(get(probe, {"httpGet"}));
        call.path = text(probe, {"httpGet", "path"});
        call.port = get(probe, {"httpGet", "port"}).as<std::uint16_t>(0);
        // The kubelet connects to the pod IP: a loopback listener never
        // answers an httpGet probe.
        CHECK_FALSE(config::is_loopback_host(m.config.listen_host));
    }
    // Whatever the probe's own timeout, the kubelet's must be longer.
    const std::string timeout_ms = flag_value(call.command, "--timeout-ms");
    const long own = timeout_ms.empty() ? 2000 : std::stol(timeout_ms);
    CHECK(get(probe, {"timeoutSeconds"}).as<long>(1) * 1000 > own);  // Kubernetes' default: 1 s
    return call;
}

// The seconds a preStop hook waits: `sleep N` or the sleep action.
long pre_stop_seconds(const YAML::Node& container) {
    const YAML::Node pre_stop = get(container, {"lifecycle", "preStop"});
    if (!pre_stop) return 0;
    if (get(pre_stop, {"sleep"})) return get(pre_stop, {"sleep", "seconds"}).as<long>(0);
    const auto command = strings(get(pre_stop, {"exec", "command"}));
    REQUIRE(command.size() == 2);
    CHECK((command[0] == "/bin/sleep" || command[0] == "sleep"));
    return std::stol(command[1]);
}

// The image's ENTRYPOINT binary, from deploy/Dockerfile.
std::string image_entrypoint() {
    std::ifstream in(source_dir() / "deploy" / "Dockerfile");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("ENTRYPOINT", 0) != 0) continue;
        const auto open = line.find('"');
        const auto close = line.find('"', open + 1);
        if (open != std::string::npos && close != std::string::npos) return line.substr(open + 1, close - open - 1);
    }
    return {};
}

std::string image_user() {
    std::ifstream in(source_dir() / "deploy" / "Dockerfile");
    std::string user;
    for (std::string line; std::getline(in, line);)
        if (line.rfind("USER ", 0) == 0) user = line.substr(5);
    return user;
}

}  // namespace

TEST_CASE("manifest: every document parses and names its kind", "[deploy]") {
    const Sidecar m = load_sidecar();
    CHECK(m.documents.size() == 3);
    for (const auto& doc : m.documents) CHECK_FALSE(text(doc, {"kind"}).empty());
}

TEST_CASE("manifest: the ConfigMap's modelproxy.yaml passes modelproxy check", "[deploy]") {
    const Sidecar m = load_sidecar();
    TempDir dir("manifest");
    const auto path = dir.write("modelproxy.yaml", m.config_yaml);
    // check reads the environment as serving does: the container's, built
    // from the Secret (the route requires its key, the fleet its password).
    const CommandResult r = run_modelproxy({"check", "--config", path.string()}, container_env(m.proxy, m.secret));
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    // A sidecar reached only through the pod's loopback; so it needs no
    // client tokens to inject a key (docs/behaviour.md section 12).
    CHECK(config::is_loopback_host(m.config.listen_host));
    // 0 would start one event loop per node core, whatever the CPU limit.
    CHECK(m.config.workers > 0);
}

TEST_CASE("manifest: liveness and readiness probes reach /healthz and /readyz on the listen port", "[deploy]") {
    const Sidecar m = load_sidecar();
    REQUIRE(get(m.proxy, {"livenessProbe"}));
    REQUIRE(get(m.proxy, {"readinessProbe"}));
    const ProbeCall live = probe_of(m, get(m.proxy, {"livenessProbe"}));
    const ProbeCall ready = probe_of(m, get(m.proxy, {"readinessProbe"}));
    CHECK(live.path == "/healthz");
    CHECK(ready.path == "/readyz");
    CHECK(live.port == m.config.listen_port);
    CHECK(ready.port == m.config.listen_port);
    if (!live.command.empty()) CHECK(live.command[0] == image_entrypoint());
    if (!ready.command.empty()) CHECK(ready.command[0] == image_entrypoint());
}

TEST_CASE("manifest: the exec probes, run as written, pass against the ConfigMap's config", "[deploy]") {
    const Sidecar m = load_sidecar();
    // The proxy on a port the system picks; the probes' binary and port are
    // swapped for the test's, the rest of each command runs as written.
    ProxyProcess proxy({.config_yaml = m.config_yaml, .env = container_env(m.proxy, m.secret)});
    proxy.start();
    for (const char* which : {"livenessProbe", "readinessProbe"}) {
        CAPTURE(which);
        auto command = strings(get(m.proxy, {which, "exec", "command"}));
        REQUIRE(command.size() >= 3);
        const std::string port = ":" + std::to_string(m.config.listen_port) + "/";
        const auto at = command[2].find(port);
        REQUIRE(at != std::string::npos);
        command[2].replace(at, port.size(), ":" + std::to_string(proxy.port()) + "/");
        command[0] = modelproxy_binary().string();
        const CommandResult r = run_command(command);
        CAPTURE(command, r.err);
        CHECK(r.exit_code == 0);
    }
}

TEST_CASE("manifest: the grace period outlasts preStop plus limits.drain_ms", "[deploy]") {
    const Sidecar m = load_sidecar();
    const long pre_stop = pre_stop_seconds(m.proxy);
    CHECK(pre_stop > 0);
    const long grace = get(m.pod_spec, {"terminationGracePeriodSeconds"}).as<long>(30);  // Kubernetes' default
    CAPTURE(pre_stop, grace, m.config.limits.drain_ms);
    CHECK(grace * 1000 > pre_stop * 1000 + m.config.limits.drain_ms);
}

TEST_CASE("manifest: the route's key comes from the Secret under its api_key_env", "[deploy]") {
    const Sidecar m = load_sidecar();
    const std::string secret_name = text(m.secret, {"metadata", "name"});
    std::size_t keyed = 0;
    for (const auto& route : m.config.routes) {
        if (route.api_key_env.empty()) continue;
        ++keyed;
        CAPTURE(route.api_key_env);
        YAML::Node from;
        for (const auto& e : get(m.proxy, {"env"}))
            if (text(e, {"name"}) == route.api_key_env) from.reset(get(e, {"valueFrom", "secretKeyRef"}));
        REQUIRE(from);
        CHECK(text(from, {"name"}) == secret_name);
        const std::string key = text(from, {"key"});
        CHECK((get(m.secret, {"stringData", key}) || get(m.secret, {"data", key})));
    }
    CHECK(keyed > 0);
    // The agent never holds the real key.
    for (const auto& e : get(m.agent, {"env"})) CHECK_FALSE(get(e, {"valueFrom", "secretKeyRef"}));
}

TEST_CASE("manifest: the config comes from the ConfigMap, mounted and passed with --config", "[deploy]") {
    const Sidecar m = load_sidecar();
    const auto args = strings(get(m.proxy, {"args"}));
    const std::filesystem::path config_path = flag_value(args, "--config");
    REQUIRE_FALSE(config_path.empty());
    std::string volume;
    for (const auto& mount : get(m.proxy, {"volumeMounts"}))
        if (text(mount, {"mountPath"}) == config_path.parent_path().string()) volume = text(mount, {"name"});
    REQUIRE_FALSE(volume.empty());
    YAML::Node source;
    for (const auto& v : get(m.pod_spec, {"volumes"}))
        if (text(v, {"name"}) == volume) source.reset(get(v, {"configMap"}));
    REQUIRE(source);
    CHECK(text(source, {"name"}) == text(m.config_map, {"metadata", "name"}));
    CHECK(get(m.config_map, {"data", config_path.filename().string()}));
}

TEST_CASE("manifest: the agent's base URL is the proxy's loopback listener", "[deploy]") {
    const Sidecar m = load_sidecar();
    std::string base_url;
    for (const auto& e : get(m.agent, {"env"}))
        if (text(e, {"name"}) == "OPENAI_BASE_URL") base_url = text(e, {"value"});
    CHECK(base_url == "http://127.0.0.1:" + std::to_string(m.config.listen_port) + "/v1");
}

TEST_CASE("manifest: the proxy container is locked down and has resources", "[deploy]") {
    const Sidecar m = load_sidecar();
    const YAML::Node sc = get(m.proxy, {"securityContext"});
    CHECK(get(sc, {"runAsNonRoot"}).as<bool>(false));
    CHECK(get(sc, {"readOnlyRootFilesystem"}).as<bool>(false));
    CHECK_FALSE(get(sc, {"allowPrivilegeEscalation"}).as<bool>(true));
    CHECK(strings(get(sc, {"capabilities", "drop"})) == std::vector<std::string>{"ALL"});
    // The image's numeric USER, so runAsNonRoot can verify it.
    CHECK(image_user() == text(sc, {"runAsUser"}) + ":" + text(sc, {"runAsGroup"}));
    for (const char* kind : {"requests", "limits"})
        for (const char* what : {"cpu", "memory"}) {
            CAPTURE(kind, what);
            CHECK_FALSE(text(m.proxy, {"resources", kind, what}).empty());
        }
}
