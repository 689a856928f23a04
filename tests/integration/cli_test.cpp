// The command line (docs/behaviour.md sections 2, 3, 10 and 12) of the real binary:
// --version, --help, usage errors, `check`, `reference`, startup refusals,
// where records go, and that stdout carries nothing but JSON lines.
#include "support/proxy_process.hpp"

#include "support/fake_provider.hpp"
#include "support/http_client.hpp"
#include "support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <regex>
#include <sstream>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Lines = std::vector<std::string>;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds

Lines lines_of(const std::string& text) {
    Lines lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::size_t lines_containing(const Lines& lines, std::string_view needle) {
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
        return l.find(needle) != std::string::npos;
    }));
}

std::string chat_request(std::string_view model) {
    return R"({"model":")" + std::string(model) + R"(","messages":[{"role":"user","content":"hi"}]})";
}

std::string chat_answer(std::string_view model) {
    return R"({"id":"chatcmpl-1","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

// One route to `upstream` serving gpt-test, with `route_extra` lines (each
// indented four spaces) and top-level `preamble`.
std::string one_route(std::string_view upstream, std::string_view route_extra = {},
                      std::string_view preamble = {}) {
    return std::string(preamble) + "routes:\n  - name: fake\n    upstream: " + std::string(upstream) +
           "\n    models: [gpt-test]\n" + std::string(route_extra);
}

constexpr std::string_view unreachable_upstream = "http://127.0.0.1:9/v1";

}  // namespace

// ---------------------------------------------------------------------------
// --version, --help, usage

TEST_CASE("modelproxy --version prints modelproxy and a semantic version, exit 0", "[cli]") {
    const CommandResult r = run_modelproxy({"--version"});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    static const std::regex semver(
        R"(modelproxy (0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?\n)");
    CHECK(std::regex_match(r.out, semver));
    CHECK(r.err.empty());
}

TEST_CASE("modelproxy --help prints usage naming check and doctor, exit 0", "[cli]") {
    const CommandResult r = run_modelproxy({"--help"});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("check") && Contains("doctor") && Contains("--config"));
}

TEST_CASE("an unknown flag is a usage error: exit 2, stderr names it, stdout empty", "[cli]") {
    const CommandResult r = run_modelproxy({"--frobnicate"}, {}, bound);
    CAPTURE(r.out, r.err);
    REQUIRE_FALSE(r.timed_out);  // it must not start serving
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("--frobnicate"));
}

TEST_CASE("check without --config is a usage error: exit 2", "[cli]") {
    const CommandResult r = run_modelproxy({"check"}, {}, bound);
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_FALSE(r.err.empty());
}

// ---------------------------------------------------------------------------
// check

TEST_CASE("check on a valid file exits 0 and prints nothing on stdout", "[cli]") {
    TempDir dir("cli");
    const auto path = dir.write("ok.yaml", one_route(unreachable_upstream, "    retry:\n      max_attempts: 4\n",
                                                     "limits:\n  max_header_bytes: 2048\n"));
    const CommandResult r = run_modelproxy({"check", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
}

TEST_CASE("check reports every problem, one stderr line each naming its key path, exit 2", "[cli]") {
    TempDir dir("cli");
    // A range error at the top, a typo'd key inside a route, a range error
    // inside a route override.
    const auto path = dir.write("three.yaml", R"(limits:
  max_header_bytes: 10
routes:
  - name: fake
    upstream: http://127.0.0.1:9/v1
    models: [gpt-test]
    dialekt: openai
    retry:
      max_attempts: 99
)");
    const CommandResult r = run_modelproxy({"check", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    const Lines err = lines_of(r.err);
    CHECK(err.size() == 3);
    CHECK(lines_containing(err, "limits.max_header_bytes") == 1);
    CHECK(lines_containing(err, "routes[0].dialekt") == 1);
    CHECK(lines_containing(err, "routes[0].retry.max_attempts") == 1);
}

// ---------------------------------------------------------------------------
// reference

TEST_CASE("modelproxy reference prints docs/configuration.md whole, exit 0", "[cli]") {
    const CommandResult r = run_modelproxy({"reference"});
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    // The file states the command that regenerates it.
    CHECK_THAT(r.out, Contains("build/modelproxy reference > docs/configuration.md"));
    CHECK(r.out == read_file(source_dir() / "docs" / "configuration.md"));
    CHECK_THAT(run_modelproxy({"--help"}).out, Contains("reference"));
}

TEST_CASE("reference takes no arguments: exit 2, stdout empty", "[cli]") {
    const CommandResult r = run_modelproxy({"reference", "--config", "x.yaml"}, {}, bound);
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("--config"));
}

// ---------------------------------------------------------------------------
// Serving: startup refusals (check_serve_test.cpp holds check beside each)

TEST_CASE("serving with an invalid config exits 2 naming the key path", "[cli]") {
    TempDir dir("cli");
    const auto path =
        dir.write("bad.yaml", one_route(unreachable_upstream, "    retry:\n      max_attempts: 99\n"));
    const CommandResult r = run_modelproxy({"--config", path.string(), "--listen", "127.0.0.1:0"}, {}, bound);
    CAPTURE(r.out, r.err);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("routes[0].retry.max_attempts"));
    CHECK_THAT(r.err, !Contains("listening on"));
}

TEST_CASE("api_key_required with its variable unset exits 2 naming the variable", "[cli]") {
    TempDir dir("cli");
    const auto path = dir.write(
        "required.yaml",
        one_route(unreachable_upstream, "    api_key_env: MP_TEST_REQUIRED_KEY\n    api_key_required: true\n"));
    const CommandResult r = run_modelproxy({"--config", path.string(), "--listen", "127.0.0.1:0"},
                                           {{"MP_TEST_UNRELATED", "x"}}, bound);
    CAPTURE(r.out, r.err);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("MP_TEST_REQUIRED_KEY"));
}

TEST_CASE("an unset api_key_env that is not required starts, says so, and passes the client's credentials",
          "[cli]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-test")));
    ProxyProcess proxy({.config_yaml = one_route(fake.base_url("/v1"), "    api_key_env: MP_TEST_OPTIONAL_KEY\n")});
    proxy.start();
    const auto notice = proxy.wait_for_stderr_line(
        [](const std::string& l) {
            return l.find("MP_TEST_OPTIONAL_KEY") != std::string::npos && l.find("passed through") != std::string::npos;
        },
        bound);
    CAPTURE(proxy.stderr_text());
    CHECK(notice);
    CHECK(lines_containing(proxy.stderr_lines(), "MP_TEST_OPTIONAL_KEY") == 1);  // one line

    HttpClient client = proxy.client();
    const Response r = client.post_json("/v1/chat/completions", chat_request("gpt-test"),
                                        {{"Authorization", "Bearer client-own-key"}});
    CAPTURE(r.wire);
    CHECK(r.status == 200);
    REQUIRE(fake.request_count() == 1);
    CHECK(fake.requests()[0].header("authorization") == "Bearer client-own-key");
}

TEST_CASE("listening beyond loopback with an injected key and no client tokens exits 2", "[cli]") {
    TempDir dir("cli");
    const auto path =
        dir.write("open.yaml", one_route(unreachable_upstream, "    api_key_env: MP_TEST_ROUTE_KEY\n"));
    const CommandResult r = run_modelproxy({"--config", path.string(), "--listen", "0.0.0.0:0"},
                                           {{"MP_TEST_ROUTE_KEY", "sk-test-route-key"}}, bound);
    CAPTURE(r.out, r.err);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("clients"));
    CHECK_THAT(r.err, !Contains("sk-test-route-key"));
}

TEST_CASE("listening beyond loopback with an injected key starts with allow_unauthenticated or client tokens",
          "[cli]") {
    std::string preamble;
    Environment env{{"MP_TEST_ROUTE_KEY", "sk-test-route-key"}};
    SECTION("clients.allow_unauthenticated: true") { preamble = "clients:\n  allow_unauthenticated: true\n"; }
    SECTION("client tokens configured") {
        preamble = "clients:\n  tokens_env: MP_TEST_CLIENT_TOKENS\n";
        env["MP_TEST_CLIENT_TOKENS"] = "tok-alpha";
    }
    ProxyProcess proxy({.config_yaml = one_route(unreachable_upstream, "    api_key_env: MP_TEST_ROUTE_KEY\n",
                                                 preamble),
                        .listen = "0.0.0.0:0",
                        .env = env});
    proxy.start();
    CHECK(proxy.host() == "0.0.0.0");
    HttpClient client = proxy.client();  // 127.0.0.1 reaches a 0.0.0.0 listener
    const Response r = client.get("/healthz");
    CHECK(r.status == 200);
    CHECK(r.body == R"({"status":"ok"})");
}

// ---------------------------------------------------------------------------
// Records: where they go

TEST_CASE("modelproxy --log FILE puts the records in FILE and nothing on stdout", "[cli]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-test")));
    TempDir dir("cli");
    const auto log = dir.path() / "records.jsonl";
    ProxyProcess proxy({.config_yaml = one_route(fake.base_url("/v1")), .args = {"--log", log.string()}});
    proxy.start();

    HttpClient client = proxy.client();
    const Response r = client.post_json("/v1/chat/completions", chat_request("gpt-test"), {{"x-request-id", "log-1"}});
    CAPTURE(r.wire);
    REQUIRE(r.status == 200);

    // Records are flushed line by line as they happen: the turn is in the
    // file while the process still runs.
    std::vector<JsonRecord> records;
    for (auto until = std::chrono::steady_clock::now() + bound; std::chrono::steady_clock::now() < until;) {
        records = std::filesystem::exists(log) ? parse_records(lines_of(read_file(log))) : std::vector<JsonRecord>{};
        if (std::any_of(records.begin(), records.end(), [](const JsonRecord& j) { return j.event() == "turn"; }))
            break;
        std::this_thread::sleep_for(20ms);
    }
    REQUIRE(proxy.signal(SIGTERM));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);

    std::vector<std::string> bad;
    records = parse_records(lines_of(read_file(log)), &bad);
    CHECK(bad.empty());
    CHECK(std::count_if(records.begin(), records.end(), [](const JsonRecord& j) {
              return j.event() == "turn" && j.str("request_id") == "log-1";
          }) == 1);
    CHECK(std::count_if(records.begin(), records.end(), [](const JsonRecord& j) {
              return j.event() == "attempt" && j.str("request_id") == "log-1";
          }) == 1);
    CHECK(proxy.stdout_lines().empty());
}

TEST_CASE("the embedded default starts without --config and answers /healthz", "[cli]") {
    ProxyProcess proxy({.config_yaml = "", .listen = "127.0.0.1:0"});
    proxy.start();
    HttpClient client = proxy.client();
    const Response r = client.get("/healthz");
    CAPTURE(r.wire);
    CHECK(r.status == 200);
    CHECK(r.body == R"({"status":"ok"})");
    // Its route is keyed by OPENAI_API_KEY, unset here: passed through, said once.
    CHECK(lines_containing(proxy.stderr_lines(), "OPENAI_API_KEY") == 1);
}

TEST_CASE("stdout carries only JSON lines after a mix of requests", "[cli]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer("gpt-test")));
    fake.push(Script::json(400, R"({"error":{"message":"bad","type":"invalid_request_error","code":"x"}})"));
    ProxyProcess proxy({.config_yaml = one_route(fake.base_url("/v1"))});
    proxy.start();

    HttpClient client = proxy.client();
    CHECK(client.post_json("/v1/chat/completions", chat_request("gpt-test")).status == 200);
    CHECK(client.post_json("/v1/chat/completions", chat_request("gpt-test")).status == 400);
    CHECK(client.post_json("/v1/chat/completions", chat_request("gpt-unknown")).status == 404);
    CHECK(client.post_json("/v1/chat/completions", "{not json").status == 400);
    CHECK(client.get("/v1/models").status == 200);
    CHECK(client.get("/healthz").status == 200);
    CHECK(client.get("/nowhere").status == 404);
    CHECK(proxy.wait_for_records("turn", 2, bound));

    REQUIRE(proxy.signal(SIGTERM));
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
    const Lines out = proxy.stdout_lines();
    CAPTURE(out, proxy.stderr_text());
    std::vector<std::string> bad;
    const auto records = parse_records(out, &bad);
    CHECK(bad.empty());
    CHECK(records.size() == out.size());
    CHECK(records.size() >= 4);  // two forwarded turns, each with an attempt
}
