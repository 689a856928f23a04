// deploy/Dockerfile and deploy/container.yaml (docs/operations.md "Container image"),
// checked without a container builder: the stages and bases, the runtime
// packages against the libraries the built binary really links (ldd, then
// dpkg -S), the build packages against deploy/setup, the non-root user, and
// that ENTRYPOINT, CMD, HEALTHCHECK and EXPOSE agree with the config the
// image ships, which must pass `check` and keep docs/behaviour.md section 12's rule.
// deploy/check-image goes further (a real build and run) where it can.
#include "support/proxy_process.hpp"

#include "config/config.hpp"
#include "support/http_client.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

using namespace modelproxy;
using namespace modelproxy::test;
using Catch::Matchers::Contains;

namespace {

struct Instruction {
    std::string keyword;  // upper case
    std::string args;     // the rest, continuation lines joined
    int stage = -1;       // 0-based; FROM starts a stage
};

std::string trim(std::string s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string::npos) return {};
    return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::vector<Instruction> parse_dockerfile(const std::filesystem::path& path) {
    std::ifstream in(path);
    REQUIRE(in);
    std::vector<Instruction> out;
    std::string pending;
    int stage = -1;
    for (std::string line; std::getline(in, line);) {
        const std::string t = trim(line);
        if (t.empty() || t.front() == '#') continue;
        if (t.back() == '\\') {
            pending += t.substr(0, t.size() - 1) + " ";
            continue;
        }
        const std::string whole = pending + t;
        pending.clear();
        Instruction ins;
        const auto space = whole.find(' ');
        ins.keyword = whole.substr(0, space);
        std::transform(ins.keyword.begin(), ins.keyword.end(), ins.keyword.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        ins.args = space == std::string::npos ? "" : trim(whole.substr(space + 1));
        if (ins.keyword == "FROM") ++stage;
        ins.stage = stage;
        out.push_back(ins);
    }
    return out;
}

std::vector<Instruction> instructions(const std::vector<Instruction>& all, std::string_view keyword, int stage) {
    std::vector<Instruction> out;
    for (const auto& i : all)
        if (i.keyword == keyword && (stage < 0 || i.stage == stage)) out.push_back(i);
    return out;
}

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// The packages an `apt-get install` in this stage's RUNs names.
std::set<std::string> apt_installs(const std::vector<Instruction>& all, int stage) {
    std::set<std::string> packages;
    for (const auto& run : instructions(all, "RUN", stage)) {
        const auto w = words(run.args);
        for (std::size_t i = 0; i + 1 < w.size(); ++i) {
            if (w[i] != "apt-get" || w[i + 1] != "install") continue;
            for (std::size_t j = i + 2; j < w.size() && w[j] != "&&"; ++j)
                if (w[j].front() != '-') packages.insert(w[j]);
        }
    }
    return packages;
}

// An exec-form argument list: ["a", "b"].
std::vector<std::string> json_args(const std::string& text) {
    boost::json::error_code ec;
    const auto value = boost::json::parse(text, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(value.is_array());
    std::vector<std::string> out;
    for (const auto& item : value.as_array()) out.emplace_back(item.as_string());
    return out;
}

std::filesystem::path dockerfile() { return source_dir() / "deploy" / "Dockerfile"; }
std::filesystem::path container_config() { return source_dir() / "deploy" / "container.yaml"; }

config::Config load_container_config() {
    auto loaded = config::load_config(read_file(container_config()));
    for (const auto& p : loaded.problems) UNSCOPED_INFO(p.line());
    REQUIRE(loaded.config);
    return std::move(*loaded.config);
}

// The Debian package that ships `path` (usr-merged or not), or "".
std::string package_of(const std::string& path) {
    std::vector<std::string> candidates{path};
    if (path.rfind("/usr/", 0) == 0) candidates.push_back(path.substr(4));
    else candidates.push_back("/usr" + path);
    for (const auto& p : candidates) {
        const CommandResult r = run_command({"dpkg", "-S", p}, {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}});
        if (r.exit_code != 0) continue;
        const auto colon = r.out.find(':');
        if (colon != std::string::npos) return r.out.substr(0, colon);
    }
    return {};
}

const std::string runtime_binary = "/usr/local/bin/modelproxy";

}  // namespace

TEST_CASE("image: two stages, built on debian:bookworm and run on debian:bookworm-slim", "[deploy]") {
    const auto all = parse_dockerfile(dockerfile());
    const auto froms = instructions(all, "FROM", -1);
    REQUIRE(froms.size() == 2);
    CHECK(froms[0].args == "debian:bookworm AS build");
    CHECK(froms[1].args == "debian:bookworm-slim");
    // Only the binary and the config come from the build context or stage.
    const auto copies = instructions(all, "COPY", 1);
    REQUIRE(copies.size() == 2);
    CHECK(copies[0].args == "--from=build /build/modelproxy " + runtime_binary);
    CHECK(copies[1].args == "deploy/container.yaml /etc/modelproxy/modelproxy.yaml");
}

TEST_CASE("image: the runtime stage installs the package of every shared library the binary links", "[deploy]") {
    const auto all = parse_dockerfile(dockerfile());
    const auto runtime = apt_installs(all, 1);
    CAPTURE(runtime);
    CHECK(runtime.count("ca-certificates") == 1);  // verified HTTPS upstreams (docs/behaviour.md section 4)

    const CommandResult ldd = run_command({"ldd", modelproxy_binary().string()},
                                          {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}});
    REQUIRE(ldd.exit_code == 0);
    if (ldd.out.find("libasan") != std::string::npos) {
        WARN("a sanitizer build links libasan, which the image does not ship; skipped");
        return;
    }
    std::set<std::string> needed;
    std::istringstream lines(ldd.out);
    for (std::string line; std::getline(lines, line);) {
        const auto w = words(line);
        std::string path;
        for (std::size_t i = 0; i + 1 < w.size(); ++i)
            if (w[i] == "=>") path = w[i + 1];
        if (path.empty() && !w.empty() && w[0].front() == '/') path = w[0];  // the loader
        if (path.empty()) continue;                                          // linux-vdso
        const std::string canonical = std::filesystem::canonical(path).string();
        const std::string package = package_of(canonical);
        CAPTURE(line, canonical);
        REQUIRE_FALSE(package.empty());
        needed.insert(package);
    }
    CAPTURE(needed);
    CHECK(needed.size() >= 6);  // libc, libstdc++, OpenSSL, yaml-cpp, simdjson, Vectorscan at least
    for (const auto& package : needed) {
        CAPTURE(package);
        CHECK(runtime.count(package) == 1);
    }
    // And nothing the binary does not need, apart from the trust store.
    for (const auto& package : runtime) {
        CAPTURE(package);
        CHECK((needed.count(package) == 1 || package == "ca-certificates"));
    }
}

TEST_CASE("image: the build stage installs deploy/setup's toolchain and libraries, nothing else", "[deploy]") {
    const auto all = parse_dockerfile(dockerfile());
    const auto build = apt_installs(all, 0);
    const std::string setup = read_file(source_dir() / "deploy" / "setup");
    // setup's lists: the build's packages (`packages=(`) and the tests'
    // (`packages+=(`), which a binary-only setup leaves out.
    std::set<std::string> listed;
    for (const std::string_view list : {std::string_view("packages=("), std::string_view("packages+=(")}) {
        const auto open = setup.find(list);
        REQUIRE(open != std::string::npos);
        const auto close = setup.find(')', open);
        REQUIRE(close != std::string::npos);
        for (const auto& word : words(setup.substr(open + list.size(), close - open - list.size()))) listed.insert(word);
    }
    // Every library the build links (setup's -dev packages; clang's runtime
    // is for the fuzz build only) and the toolchain. setup's other packages
    // are test tools the image does not build with, but for catch2, which
    // the soak that trains the profile-guided build needs (deploy/build).
    std::set<std::string> needed{"build-essential", "cmake", "ninja-build", "pkg-config"};
    for (const auto& package : listed)
        if (package.size() > 4 && package.ends_with("-dev") && !package.starts_with("libclang")) needed.insert(package);
    CHECK(needed.size() > 6);
    for (const auto& package : needed) {
        CAPTURE(package);
        CHECK(build.count(package) == 1);
    }
    // The same versions as the tested build: nothing setup does not install.
    for (const auto& package : build) {
        CAPTURE(package);
        CHECK(listed.count(package) == 1);
    }
}

TEST_CASE("image: runs as a fixed non-root UID that the image creates", "[deploy]") {
    const auto all = parse_dockerfile(dockerfile());
    const auto users = instructions(all, "USER", 1);
    REQUIRE(users.size() == 1);
    const std::string user = users[0].args;
    const auto colon = user.find(':');
    const std::string uid = user.substr(0, colon);
    REQUIRE_FALSE(uid.empty());
    CHECK(uid.find_first_not_of("0123456789") == std::string::npos);  // numeric: runAsNonRoot can verify it
    CHECK(std::stol(uid) >= 1000);
    bool created = false;
    for (const auto& run : instructions(all, "RUN", 1))
        if (run.args.find("useradd") != std::string::npos && run.args.find("--uid " + uid) != std::string::npos)
            created = true;
    CHECK(created);
    // USER comes after everything that needs root.
    const auto last_run = std::find_if(all.rbegin(), all.rend(), [](const Instruction& i) { return i.keyword == "RUN"; });
    const auto user_at = std::find_if(all.rbegin(), all.rend(), [](const Instruction& i) { return i.keyword == "USER"; });
    CHECK(user_at < last_run);  // reverse iterators: USER is later in the file
}

TEST_CASE("image: ENTRYPOINT, CMD, HEALTHCHECK and EXPOSE agree with the config it ships", "[deploy]") {
    const auto all = parse_dockerfile(dockerfile());
    const config::Config cfg = load_container_config();

    const auto entry = instructions(all, "ENTRYPOINT", 1);
    REQUIRE(entry.size() == 1);
    CHECK(json_args(entry[0].args) == std::vector<std::string>{runtime_binary});

    const auto cmd = instructions(all, "CMD", 1);
    REQUIRE(cmd.size() == 1);
    CHECK(json_args(cmd[0].args) == std::vector<std::string>{"--config", "/etc/modelproxy/modelproxy.yaml"});

    const auto expose = instructions(all, "EXPOSE", 1);
    REQUIRE(expose.size() == 1);
    CHECK(expose[0].args == std::to_string(cfg.listen_port));

    const auto health = instructions(all, "HEALTHCHECK", 1);
    REQUIRE(health.size() == 1);
    const auto cmd_at = health[0].args.find("CMD ");
    REQUIRE(cmd_at != std::string::npos);
    CHECK(json_args(health[0].args.substr(cmd_at + 4)) ==
          std::vector<std::string>{runtime_binary, "probe",
                                   "http://127.0.0.1:" + std::to_string(cfg.listen_port) + "/healthz"});
    // Docker's own timeout must outlast the probe's default 2 s.
    CHECK_THAT(health[0].args, Contains("--timeout=3s"));

    const auto stop = instructions(all, "STOPSIGNAL", 1);
    REQUIRE(stop.size() == 1);
    CHECK(stop[0].args == "SIGTERM");
}

TEST_CASE("image: the container config passes check and listens on every interface", "[deploy]") {
    const CommandResult r = run_modelproxy({"check", "--config", container_config().string()});
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    const config::Config cfg = load_container_config();
    CHECK(cfg.listen_host == "0.0.0.0");
    CHECK(cfg.clients.tokens_env == "MODELPROXY_CLIENT_TOKENS");
}

TEST_CASE("image: the container config injects a key only behind client tokens (docs/behaviour.md section 12)", "[deploy]") {
    // The shipped file with its port set to 0, so the test binds a free one.
    std::string yaml = read_file(container_config());
    const auto at = yaml.find("listen: 0.0.0.0:8080\n");
    REQUIRE(at != std::string::npos);
    yaml.replace(at, 21, "listen: 0.0.0.0:0\n");

    SECTION("a key without client tokens: refuses to start, exit 2") {
        TempDir dir("image");
        const auto path = dir.write("modelproxy.yaml", yaml);
        const CommandResult r = run_modelproxy({"--config", path.string()}, {{"OPENAI_API_KEY", "sk-placeholder"}});
        CAPTURE(r.err);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.err, Contains("clients.tokens_env: listen address 0.0.0.0 is not loopback"));
    }
    SECTION("a key and client tokens: serves, and /v1/ needs a token") {
        ProxyProcess proxy({.config_yaml = yaml,
                            .listen = "",
                            .env = {{"OPENAI_API_KEY", "sk-placeholder"}, {"MODELPROXY_CLIENT_TOKENS", "tok-1"}}});
        proxy.start();
        HttpClient client = proxy.client();  // 127.0.0.1 reaches the wildcard listener
        CHECK(client.get("/healthz").status == 200);
        CHECK(client.get("/v1/models").status == 401);
        CHECK(client.get("/v1/models", {{"Authorization", "Bearer tok-1"}}).status == 200);
    }
    SECTION("no key: clients' own keys pass through; serves without tokens") {
        ProxyProcess proxy({.config_yaml = yaml, .listen = ""});
        proxy.start();
        CHECK_THAT(proxy.stderr_text(), Contains("OPENAI_API_KEY is not set; client credentials are passed through"));
        HttpClient client = proxy.client();
        CHECK(client.get("/v1/models").status == 200);
    }
}
