// `check` and serving judge a config by the same rules (docs/behaviour.md
// section 2): for every refusal serving makes before it binds its port,
// `check` run with the same file, flags and environment exits 2 and prints
// the same lines; and what check accepts, serving starts.
#include "support/proxy_process.hpp"

#include "support/test_ca.hpp"
#include "support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Lines = std::vector<std::string>;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds

Lines lines_of(const std::string& text) {
    Lines lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// Every "@X@" in `text` replaced by `value`.
std::string fill(std::string text, std::string_view name, const std::string& value) {
    const std::string mark = "@" + std::string(name) + "@";
    for (auto at = text.find(mark); at != std::string::npos; at = text.find(mark, at + value.size()))
        text.replace(at, mark.size(), value);
    return text;
}

constexpr std::string_view route_key = "sk-test-route-key-0123456789";

// One bad config or environment. In `yaml`, `args` and `lines`, @DIR@ is a
// temporary directory (holding ca.pem, a CA certificate) and @FILE@ the
// config's path.
struct Refusal {
    std::string name;
    std::string yaml;               // "": no file is written at @FILE@
    Environment env;
    std::vector<std::string> args;  // after --config FILE, for both commands
    // The lines both commands print, each as the start of one whole line
    // (a library's own message may follow, e.g. Vectorscan's or OpenSSL's).
    Lines lines;
};

std::string route(std::string_view upstream, std::string_view extra = {}) {
    return "routes:\n  - name: fake\n    upstream: " + std::string(upstream) + "\n    models: [gpt-test]\n" +
           std::string(extra);
}

const std::vector<Refusal>& refusals() {
    static const std::vector<Refusal> table{
        {"a key out of range",
         route("http://127.0.0.1:9/v1", "    retry: {max_attempts: 99}\n"),
         {},
         {},
         {"modelproxy: @FILE@: routes[0].retry.max_attempts: must be 1..16, got 99"}},
        {"a config file that cannot be read", "", {}, {}, {"modelproxy: cannot read @FILE@"}},
        {"an invalid boundary.secret_patterns regular expression",
         "boundary:\n  secret_patterns: [\"(unclosed[a-z\"]\n" + route("http://127.0.0.1:9/v1"),
         {},
         {},
         {"modelproxy: @FILE@: boundary.secret_patterns[0]: invalid regular expression: "}},
        {"two bad secret patterns, one line each",
         "boundary:\n  secret_patterns: [\"ok-[0-9]{8}\", \"a*\", \"[z\"]\n" + route("http://127.0.0.1:9/v1"),
         {},
         {},
         {"modelproxy: @FILE@: boundary.secret_patterns[1]: matches the empty string, so it would refuse every body",
          "modelproxy: @FILE@: boundary.secret_patterns[2]: invalid regular expression: "}},
        {"an unreadable tls.ca_file",
         route("https://127.0.0.1:9/v1", "    tls: {ca_file: @DIR@/no-ca.pem}\n"),
         {},
         {},
         {"modelproxy: @FILE@: routes[0].tls: cannot load tls.ca_file @DIR@/no-ca.pem: "}},
        {"an unreadable tls.cert_file",
         route("https://127.0.0.1:9/v1", "    tls: {cert_file: @DIR@/no-cert.pem, key_file: @DIR@/no-key.pem}\n"),
         {},
         {},
         {"modelproxy: @FILE@: routes[0].tls: cannot load tls.cert_file @DIR@/no-cert.pem: "}},
        {"an unreadable tls.key_file",
         route("https://127.0.0.1:9/v1", "    tls: {cert_file: @DIR@/ca.pem, key_file: @DIR@/no-key.pem}\n"),
         {},
         {},
         {"modelproxy: @FILE@: routes[0].tls: cannot load tls.key_file @DIR@/no-key.pem: "}},
        {"api_key_required with its variable unset",
         route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n    api_key_required: true\n"),
         {{"MP_TEST_UNRELATED", "x"}},
         {},
         {"modelproxy: @FILE@: routes[0].api_key_env: MP_TEST_KEY is not set and api_key_required is true"}},
        {"api_key_required with its variable empty",
         route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n    api_key_required: true\n"),
         {{"MP_TEST_KEY", ""}},
         {},
         {"modelproxy: @FILE@: routes[0].api_key_env: MP_TEST_KEY is empty and api_key_required is true"}},
        {"a key holding a control character",
         route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n"),
         {{"MP_TEST_KEY", std::string(route_key) + "\n"}},
         {},
         {"modelproxy: @FILE@: routes[0].api_key_env: MP_TEST_KEY holds a control character (a trailing "
          "newline?) and cannot be sent in a header"}},
        {"a client token holding a control character",
         "clients: {tokens_env: MP_TEST_TOKENS}\n" + route("http://127.0.0.1:9/v1"),
         {{"MP_TEST_TOKENS", "tok-a,tok\x01" "b"}},
         {},
         {"modelproxy: @FILE@: clients.tokens_env: MP_TEST_TOKENS holds a control character inside a token"}},
        {"a key injected on a non-loopback listen address from the file, no client tokens",
         "listen: 0.0.0.0:0\n" + route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n"),
         {{"MP_TEST_KEY", std::string(route_key)}},
         {},
         {"modelproxy: @FILE@: clients.tokens_env: listen address 0.0.0.0 is not loopback and route fake injects "
          "its key from MP_TEST_KEY, but no client tokens are configured; "}},
        {"a key injected on a non-loopback --listen, tokens_env unset",
         "clients: {tokens_env: MP_TEST_TOKENS}\n" + route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n"),
         {{"MP_TEST_KEY", std::string(route_key)}},
         {"--listen", "0.0.0.0:0"},
         {"modelproxy: @FILE@: clients.tokens_env: listen address 0.0.0.0 is not loopback and route fake injects "
          "its key from MP_TEST_KEY, but no client tokens are set in MP_TEST_TOKENS; "}},
        // RES_OPTIONS bounds the resolver's wait where no name server answers.
        {"a listen host name that does not resolve",
         "listen: no-such-host.invalid:0\n" + route("http://127.0.0.1:9/v1"),
         {{"RES_OPTIONS", "timeout:1 attempts:1"}},
         {},
         {"modelproxy: @FILE@: listen: cannot resolve host no-such-host.invalid"}},
        {"a bad models block (docs/behaviour.md section 13)",
         route("http://127.0.0.1:9/v1") + "models:\n  - {name: gpt-test, fallbacks: [gpt-test]}\n"
                                           "  - {name: gpt-other, attempts_per_candidate: 0}\n",
         {},
         {},
         {"modelproxy: @FILE@: models[0].fallbacks[0]: model gpt-test cannot be its own fallback (its deployments "
          "come first anyway)",
          "modelproxy: @FILE@: models[1].name: no route lists model gpt-other by name (\"*\" does not count)",
          "modelproxy: @FILE@: models[1].attempts_per_candidate: must be 1..16, got 0"}},
        {"a breaker and a timer out of range",
         route("http://127.0.0.1:9/v1",
               "    timeout_ms: 5000\n    first_token_timeout_ms: 6000\n    breaker: {failure_ratio: 2}\n"),
         {},
         {},
         {"modelproxy: @FILE@: routes[0].first_token_timeout_ms: must be <= timeout_ms (5000), got 6000",
          "modelproxy: @FILE@: routes[0].breaker.failure_ratio: must be 0.01..1, got 2"}},
        {"a retry budget with budget_min_concurrency 0 and a ratio above 0 (docs/behaviour.md section 14)",
         route("http://127.0.0.1:9/v1", "    retry: {budget_ratio: 0.5, budget_min_concurrency: 0}\n"),
         {},
         {},
         {"modelproxy: @FILE@: routes[0].retry.budget_min_concurrency: must be at least 1 while budget_ratio is "
          "above 0 (a lone client would get no replays); set both to 0 to turn replays off"}},
        {"an admission min_limit above its max_limit (docs/behaviour.md section 14)",
         "admission: {min_limit: 10, max_limit: 5}\n" + route("http://127.0.0.1:9/v1"),
         {},
         {},
         {"modelproxy: @FILE@: admission.min_limit: must be <= max_limit (5), got 10 "
          "(min_limit <= initial_limit <= max_limit)"}},
        // docs/behaviour.md section 15: the password never sits in the file, nor in a line.
        {"a fleet.redis URL holding a password",
         "fleet: {redis: \"redis://:hunter2-pw@127.0.0.1:6379/0\"}\n" + route("http://127.0.0.1:9/v1"),
         {},
         {},
         {"modelproxy: @FILE@: fleet.redis: must not carry a user or password; put the password in an environment "
          "variable and name it in fleet.password_env"}},
        {"fleet.password_env naming an unset variable",
         "fleet: {redis: \"redis://127.0.0.1:6379/0\", password_env: MP_TEST_REDIS_PASSWORD}\n" +
             route("http://127.0.0.1:9/v1"),
         {{"MP_TEST_UNRELATED", "x"}},
         {},
         {"modelproxy: @FILE@: fleet.password_env: MP_TEST_REDIS_PASSWORD is not set; it must hold the Redis "
          "password"}},
        {"an unreadable fleet.tls.ca_file",
         "fleet: {redis: \"rediss://127.0.0.1:6379/0\", tls: {ca_file: @DIR@/no-ca.pem}}\n" +
             route("http://127.0.0.1:9/v1"),
         {},
         {},
         {"modelproxy: @FILE@: fleet.tls: cannot load tls.ca_file @DIR@/no-ca.pem: "}},
        {"every problem of a valid file's environment, files and patterns, not only the first",
         "boundary:\n  secret_patterns: [\"(\"]\n" +
             route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n    api_key_required: true\n") +
             "  - name: other\n    upstream: https://127.0.0.1:9/v1\n    models: [gpt-other]\n"
             "    tls: {ca_file: @DIR@/no-ca.pem}\n",
         {},
         {},
         {"modelproxy: @FILE@: routes[0].api_key_env: MP_TEST_KEY is not set and api_key_required is true",
          "modelproxy: @FILE@: routes[1].tls: cannot load tls.ca_file @DIR@/no-ca.pem: ",
          "modelproxy: @FILE@: boundary.secret_patterns[0]: invalid regular expression: "}},
    };
    return table;
}

// The one line of `lines` that starts with `start`; "" when none or several.
std::string line_starting(const Lines& lines, const std::string& start) {
    std::string found;
    for (const std::string& line : lines) {
        if (line.rfind(start, 0) != 0) continue;
        if (!found.empty()) return {};
        found = line;
    }
    return found;
}

}  // namespace

TEST_CASE("check refuses every config serving refuses, with the same exit code and lines", "[cli][check]") {
    const Refusal& r = GENERATE(from_range(refusals()));
    CAPTURE(r.name);
    TestCa ca;  // its certificate stands in for a client certificate with no key
    TempDir dir("check-serve");
    std::filesystem::copy_file(ca.cert_file(), dir.path() / "ca.pem");
    const std::string dir_text = dir.path().string();
    const auto file = r.yaml.empty() ? (dir.path() / "missing.yaml").string()
                                     : dir.write("modelproxy.yaml", fill(r.yaml, "DIR", dir_text)).string();
    auto expand = [&](std::string text) { return fill(fill(std::move(text), "DIR", dir_text), "FILE", file); };

    std::vector<std::string> flags{"--config", file};
    for (const std::string& a : r.args) flags.push_back(expand(a));
    std::vector<std::string> check_args{"check"};
    check_args.insert(check_args.end(), flags.begin(), flags.end());
    // Serving binds where the case says; else any free loopback port (which
    // judges the config as the file's loopback default does).
    std::vector<std::string> serve_args = flags;
    if (r.yaml.find("listen:") == std::string::npos &&
        std::find(r.args.begin(), r.args.end(), "--listen") == r.args.end()) {
        serve_args.insert(serve_args.end(), {"--listen", "127.0.0.1:0"});
    }

    const CommandResult serve = run_modelproxy(serve_args, r.env, bound);
    const CommandResult check = run_modelproxy(check_args, r.env, bound);
    CAPTURE(serve.err, check.err);
    REQUIRE_FALSE(serve.timed_out);  // it must not start serving
    CHECK(serve.exit_code == 2);
    CHECK(check.exit_code == 2);
    CHECK(serve.out.empty());
    CHECK(check.out.empty());
    const Lines serve_lines = lines_of(serve.err);
    const Lines check_lines = lines_of(check.err);
    for (const std::string& start : r.lines) {
        const std::string expected = expand(start);
        CAPTURE(expected);
        const std::string line = line_starting(serve_lines, expected);
        CHECK_FALSE(line.empty());
        CHECK(line_starting(check_lines, expected) == line);
    }
    // Nothing else differs either: one report, from the same code.
    CHECK(check_lines == serve_lines);
    CHECK(serve.err.find(route_key) == std::string::npos);  // names variables, never their values
    CHECK(serve.err.find("hunter2") == std::string::npos);
}

TEST_CASE("check accepts what serving starts with, reading the same environment and flags", "[cli][check]") {
    struct Case {
        std::string name;
        std::string yaml;
        Environment env;
        std::vector<std::string> args;
    };
    const std::string keyed = route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n");
    const Case c = GENERATE_COPY(values<Case>({
        {"a required key that is set",
         route("http://127.0.0.1:9/v1", "    api_key_env: MP_TEST_KEY\n    api_key_required: true\n"),
         {{"MP_TEST_KEY", std::string(route_key)}},
         {}},
        {"a non-loopback listen with client tokens",
         "clients: {tokens_env: MP_TEST_TOKENS}\n" + keyed,
         {{"MP_TEST_KEY", std::string(route_key)}, {"MP_TEST_TOKENS", "tok-a"}},
         {"--listen", "0.0.0.0:0"}},
        {"a non-loopback listen with allow_unauthenticated",
         "clients: {allow_unauthenticated: true}\n" + keyed,
         {{"MP_TEST_KEY", std::string(route_key)}},
         {"--listen", "0.0.0.0:0"}},
        {"a valid secret pattern", "boundary:\n  secret_patterns: [\"corp-[0-9]{12}\"]\n" + keyed, {}, {}},
        {"a model with two deployments, a fallback and section 13's keys",
         route("http://127.0.0.1:9/v1",
               "    first_byte_timeout_ms: 2000\n    first_token_timeout_ms: 5000\n    breaker: {failure_ratio: 0.25}\n") +
             "  - name: second\n    upstream: http://127.0.0.1:9/v1\n    weight: 3\n"
             "    models: [gpt-test, gpt-other]\n"
             "models:\n  - {name: gpt-test, balance: weighted, fallbacks: [gpt-other], fallback_on: [timeout, "
             "\"code:context_length_exceeded\"]}\n",
         {},
         {}},
        // Section 15: nothing listens on port 9; Redis being down never stops serving.
        {"a fleet whose password variable is set, and a route quota",
         "fleet: {redis: \"redis://127.0.0.1:9/1\", password_env: MP_TEST_REDIS_PASSWORD, timeout_ms: 20}\n" +
             route("http://127.0.0.1:9/v1", "    quota: {requests_per_minute: 60, tokens_per_minute: 100000}\n"),
         {{"MP_TEST_REDIS_PASSWORD", "pw"}},
         {}},
    }));
    CAPTURE(c.name);
    TempDir dir("check-serve");
    const auto file = dir.write("modelproxy.yaml", c.yaml).string();
    std::vector<std::string> args{"check", "--config", file};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CommandResult check = run_modelproxy(args, c.env, bound);
    CAPTURE(check.err);
    CHECK(check.exit_code == 0);
    CHECK(check.out.empty());

    ProxyProcess proxy({.config_yaml = c.yaml, .listen = c.args.empty() ? "127.0.0.1:0" : "", .args = c.args,
                        .env = c.env});
    CHECK_NOTHROW(proxy.start());
}
