// deploy/kubernetes/redis.yaml and the sidecar's fleet block (docs/operations.md
// "Running a fleet", docs/behaviour.md section 15): the facts that make the
// sidecars share a Redis: fleet.redis names the Service, the Service reaches
// the Redis container, Redis and every proxy read one password from the
// Secret; Redis keeps nothing, its image is pinned, it is locked down; and
// Redis started as written (with the real redis-server) takes the Secret's
// password, passes its readiness probe, fails it with a wrong password, and
// leaves nothing on disk when stopped. `modelproxy check` of the ConfigMap's
// config, fleet included, is in manifest_test.cpp; no test here needs the
// proxy to reach Redis.
#include "support/manifest.hpp"

#include "support/child_process.hpp"
#include "support/ports.hpp"
#include "support/proxy_process.hpp"
#include "support/temp_dir.hpp"

#include <catch2/catch.hpp>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

using namespace modelproxy;
using namespace modelproxy::test;
using namespace modelproxy::test::manifest;
using namespace std::chrono_literals;

namespace {

struct RedisManifest {
    std::vector<YAML::Node> documents;
    YAML::Node deployment;
    YAML::Node service;
    YAML::Node pod_spec;
    YAML::Node redis;  // the container running redis-server
};

RedisManifest load_redis() {
    RedisManifest r;
    r.documents = load_documents(kubernetes_dir() / "redis.yaml");
    for (const auto& doc : r.documents) {
        const std::string kind = text(doc, {"kind"});
        if (kind == "Deployment") r.deployment.reset(doc);
        if (kind == "Service") r.service.reset(doc);
    }
    REQUIRE(r.deployment);
    REQUIRE(r.service);
    r.pod_spec.reset(pod_spec_of(r.deployment));
    REQUIRE(r.pod_spec);
    REQUIRE(get(r.pod_spec, {"containers"}).size() == 1);
    r.redis.reset(get(r.pod_spec, {"containers"})[0]);
    return r;
}

// command + args, each $(VAR) expanded against `env`.
std::vector<std::string> argv_of(const YAML::Node& container, const Environment& env) {
    std::vector<std::string> argv;
    for (const char* part : {"command", "args"})
        for (const auto& arg : strings(get(container, {part}))) argv.push_back(expand(arg, env));
    return argv;
}

// The port redis-server listens on: --port, else Redis's default.
long redis_port(const std::vector<std::string>& argv) {
    const std::string port = flag_value(argv, "--port");
    return port.empty() ? 6379 : std::stol(port);
}

// Every label `selector` asks for is on `labels`.
bool selects(const YAML::Node& selector, const YAML::Node& labels) {
    if (!selector || !selector.IsMap() || selector.size() == 0) return false;
    for (const auto& kv : selector)
        if (text(labels, {kv.first.as<std::string>()}) != kv.second.as<std::string>()) return false;
    return true;
}

// Bytes in a Kubernetes quantity ("128Mi", "1Gi") or a Redis memory size
// ("96mb", "1gb": binary units in Redis); -1 for anything else.
long long bytes(std::string value) {
    for (auto& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [suffix, scale] : {std::pair{"mi", 1LL << 20}, std::pair{"gi", 1LL << 30},
                                        std::pair{"mb", 1LL << 20}, std::pair{"gb", 1LL << 30}})
        if (value.ends_with(suffix)) return std::stoll(value.substr(0, value.size() - 2)) * scale;
    return -1;
}

}  // namespace

TEST_CASE("manifest: redis.yaml holds one Redis replica and a ClusterIP Service", "[deploy]") {
    const RedisManifest r = load_redis();
    CHECK(r.documents.size() == 2);
    CHECK(get(r.deployment, {"spec", "replicas"}).as<int>(1) == 1);  // Kubernetes' default: 1
    // A rolling update would run two servers at once, each with part of the fleet.
    CHECK(text(r.deployment, {"spec", "strategy", "type"}) == "Recreate");
    const std::string type = text(r.service, {"spec", "type"});
    CHECK((type.empty() || type == "ClusterIP"));
}

TEST_CASE("manifest: the sidecars' fleet.redis reaches the Service, and the Service the Redis container", "[deploy]") {
    const Sidecar m = load_sidecar();
    const RedisManifest r = load_redis();
    REQUIRE(m.config.fleet);
    const config::Fleet& fleet = *m.config.fleet;
    CHECK_FALSE(fleet.tls);  // inside the cluster; a managed Redis would be rediss://
    CHECK(fleet.host == text(r.service, {"metadata", "name"}));
    REQUIRE(get(r.service, {"spec", "ports"}).size() == 1);
    const YAML::Node port = get(r.service, {"spec", "ports"})[0];
    CHECK(get(port, {"port"}).as<long>(0) == fleet.port);

    const YAML::Node labels = get(r.deployment, {"spec", "template", "metadata", "labels"});
    CHECK(selects(get(r.service, {"spec", "selector"}), labels));
    CHECK(selects(get(r.deployment, {"spec", "selector", "matchLabels"}), labels));

    // targetPort by name or number (absent: the Service's port) is the port
    // redis-server listens on.
    const std::string target = get(port, {"targetPort"}) ? text(port, {"targetPort"}) : text(port, {"port"});
    long container_port = 0;
    for (const auto& p : get(r.redis, {"ports"}))
        if (text(p, {"name"}) == target || text(p, {"containerPort"}) == target)
            container_port = get(p, {"containerPort"}).as<long>(0);
    CHECK(container_port == redis_port(strings(get(r.redis, {"args"}))));
}

TEST_CASE("manifest: Redis and every proxy read one password from the Secret", "[deploy]") {
    const Sidecar m = load_sidecar();
    const RedisManifest r = load_redis();
    REQUIRE(m.config.fleet);
    const std::string password_env = m.config.fleet->password_env;
    REQUIRE_FALSE(password_env.empty());
    const auto proxy_ref = secret_ref(m.proxy, password_env);
    CHECK(proxy_ref.first == text(m.secret, {"metadata", "name"}));
    CHECK_FALSE(text(m.secret, {"stringData", proxy_ref.second}).empty());
    // --requirepass $(VAR), VAR from the same Secret key.
    const std::string requirepass = flag_value(strings(get(r.redis, {"args"})), "--requirepass");
    REQUIRE((requirepass.starts_with("$(") && requirepass.ends_with(")")));
    CHECK(secret_ref(r.redis, requirepass.substr(2, requirepass.size() - 3)) == proxy_ref);
    // The agent never holds it.
    CHECK(secret_ref(m.agent, password_env).first.empty());
    // The quota the fleet shares is set on the route.
    std::size_t with_quota = 0;
    for (const auto& route : m.config.routes) with_quota += route.quota ? 1 : 0;
    CHECK(with_quota > 0);
}

TEST_CASE("manifest: Redis keeps nothing, runs a pinned image, is locked down and has resources", "[deploy]") {
    const RedisManifest r = load_redis();
    const auto args = strings(get(r.redis, {"args"}));
    const auto save = std::find(args.begin(), args.end(), "--save");
    CHECK((save != args.end() && save + 1 != args.end() && (save + 1)->empty()));
    CHECK(flag_value(args, "--appendonly") == "no");
    for (const auto& v : get(r.pod_spec, {"volumes"})) {
        CAPTURE(text(v, {"name"}));
        CHECK_FALSE(get(v, {"persistentVolumeClaim"}));
        CHECK_FALSE(get(v, {"hostPath"}));
    }

    const std::string image = text(r.redis, {"image"});
    CAPTURE(image);
    const auto colon = image.rfind(':');
    const auto slash = image.rfind('/');
    REQUIRE(colon != std::string::npos);
    REQUIRE((slash == std::string::npos || colon > slash));  // a tag, not a registry's port
    const std::string name = image.substr(0, colon);
    const std::string tag = image.substr(colon + 1);
    CHECK((name == "redis" || name.ends_with("/redis")));
    CHECK(tag.starts_with("7."));  // a version, not "latest" or a bare major

    const YAML::Node sc = get(r.redis, {"securityContext"});
    CHECK((get(sc, {"runAsNonRoot"}).as<bool>(false) ||
           get(r.pod_spec, {"securityContext", "runAsNonRoot"}).as<bool>(false)));
    CHECK(get(sc, {"runAsUser"}).as<long>(0) > 0);
    CHECK(get(sc, {"readOnlyRootFilesystem"}).as<bool>(false));
    CHECK_FALSE(get(sc, {"allowPrivilegeEscalation"}).as<bool>(true));
    CHECK(strings(get(sc, {"capabilities", "drop"})) == std::vector<std::string>{"ALL"});
    for (const char* kind : {"requests", "limits"})
        for (const char* what : {"cpu", "memory"}) {
            CAPTURE(kind, what);
            CHECK_FALSE(text(r.redis, {"resources", kind, what}).empty());
        }
    // Redis evicts before the kubelet kills it.
    const long long maxmemory = bytes(flag_value(args, "--maxmemory"));
    const long long limit = bytes(text(r.redis, {"resources", "limits", "memory"}));
    CAPTURE(maxmemory, limit);
    CHECK(maxmemory > 0);
    CHECK(maxmemory < limit);

    const auto probe = strings(get(r.redis, {"readinessProbe", "exec", "command"}));
    REQUIRE_FALSE(probe.empty());
    CHECK(probe.front() == "redis-cli");
    CHECK(probe.back() == "ping");
}

TEST_CASE("manifest: Redis run as written takes the Secret's password, is ready, and persists nothing", "[deploy]") {
    const Sidecar m = load_sidecar();
    const RedisManifest r = load_redis();
    const Environment env = container_env(r.redis, m.secret);
    // As written, on a free loopback port in a temporary working directory
    // (the pod's /data); later options override earlier ones in Redis.
    TempDir data("redis-data");
    TempDir logs("redis-log");
    const std::uint16_t port = unused_port();
    auto argv = argv_of(r.redis, env);
    REQUIRE_FALSE(argv.empty());
    argv.insert(argv.end(), {"--port", std::to_string(port), "--bind", "127.0.0.1", "--dir", data.path().string(),
                             "--logfile", (logs.path() / "redis.log").string()});
    CAPTURE(argv);
    ChildProcess redis({.argv = argv, .env = env});

    // The readiness probe as written, told the test's port.
    auto probe = strings(get(r.redis, {"readinessProbe", "exec", "command"}));
    REQUIRE_FALSE(probe.empty());
    probe.insert(probe.begin() + 1, {"-p", std::to_string(port)});
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    CommandResult ready;
    for (;;) {
        ready = run_command(probe, env);
        if (ready.exit_code == 0 || redis.try_reap() || std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(20ms);  // polling for the server to listen
    }
    CAPTURE(ready.out, ready.err);
    REQUIRE(ready.exit_code == 0);
    CHECK(ready.out.find("PONG") != std::string::npos);

    // The probe tells a server that refuses its password from a ready one.
    Environment wrong = env;
    for (auto& [name, value] : wrong) value += "-wrong";
    CHECK(run_command(probe, wrong).exit_code != 0);
    CHECK(run_command(probe, {}).exit_code != 0);

    // Stopped as the kubelet stops it; with persistence on, Redis would
    // write a snapshot here on SIGTERM.
    REQUIRE(redis.signal(SIGTERM));
    CHECK(redis.wait(10s) == 0);
    CHECK(std::filesystem::is_empty(data.path()));
}
