// `modelproxy probe URL` (docs/operations.md "Command line", an addition to docs/behaviour.md section
// 2): the container image's HEALTHCHECK and the Kubernetes exec probes. Exit
// 0 on a 2xx answer, 1 on anything else with one stderr line saying why, 2 on
// a usage problem; the whole request is bounded by --timeout-ms.
#include "support/proxy_process.hpp"

#include "support/fake_provider.hpp"
#include "support/http_client.hpp"
#include "support/ports.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <sstream>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string local_url(std::uint16_t port, std::string_view path) {
    return "http://127.0.0.1:" + std::to_string(port) + std::string(path);
}

CommandResult probe(const std::string& url, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"probe", url};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_modelproxy(args);
}

std::string config_for(const FakeProvider& fake) {
    return "routes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") + "\n    models: [gpt-test]\n";
}

}  // namespace

TEST_CASE("probe: a running proxy's /healthz and /readyz exit 0 and print nothing", "[probe]") {
    FakeProvider fake;
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    const std::string path = GENERATE("/healthz", "/readyz");
    CAPTURE(path);
    const CommandResult r = probe(local_url(proxy.port(), path));
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
    CHECK(fake.request_count() == 0);  // answered by the proxy itself
}

TEST_CASE("probe: a path the proxy answers 404 exits 1 and names the status", "[probe]") {
    FakeProvider fake;
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    const std::string url = local_url(proxy.port(), "/nowhere");
    const CommandResult r = probe(url);
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    const auto lines = lines_of(r.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "modelproxy probe: " + url + ": answered 404");
}

TEST_CASE("probe: /readyz of a draining proxy exits 1", "[probe]") {
    FakeProvider fake;
    fake.push(Script{}.sleep(1500ms).then(Script::json(200, R"({"id":"c","object":"chat.completion","model":"gpt-test","choices":[]})")));
    ProxyProcess proxy({.config_yaml = config_for(fake)});
    proxy.start();
    const std::string url = local_url(proxy.port(), "/readyz");
    REQUIRE(probe(url).exit_code == 0);
    HttpClient slow = proxy.client();  // a turn in flight holds the drain open
    REQUIRE_FALSE(slow.send_request("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}},
                                    R"({"model":"gpt-test","messages":[]})"));
    REQUIRE(fake.wait_for_requests(1, bound));
    REQUIRE(proxy.signal(SIGTERM));
    // The listener closes at once: a probe's new connection is refused.
    const auto until = Clock::now() + bound;
    CommandResult r;
    do r = probe(url);
    while (r.exit_code == 0 && Clock::now() < until);
    CHECK(r.exit_code == 1);
    CHECK(lines_of(r.err).size() == 1);
    CHECK(proxy.running());  // still draining
    CHECK(proxy.wait_exit(bound).value_or(-1) == 0);
}

TEST_CASE("probe: /readyz answering 503 (a draining proxy on an open connection) exits 1", "[probe]") {
    // A draining proxy closes its listener, so a fresh probe connection is
    // refused before it could read the 503; the fake provider answers the
    // way a draining proxy does on an open connection (docs/behaviour.md section 4).
    FakeProvider fake;
    fake.push(Script::json(503, R"({"status":"draining"})"));
    const std::string url = fake.base_url("/readyz");
    const CommandResult r = probe(url);
    CHECK(r.exit_code == 1);
    const auto lines = lines_of(r.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "modelproxy probe: " + url + ": answered 503");
}

TEST_CASE("probe: every 2xx exits 0, every other status exits 1", "[probe]") {
    const auto [status, expected] = GENERATE(table<unsigned, int>(
        {{200, 0}, {204, 0}, {299, 0}, {301, 1}, {304, 1}, {400, 1}, {429, 1}, {500, 1}, {599, 1}}));
    CAPTURE(status);
    FakeProvider fake;
    fake.push(Script::response(status, {}, ""));
    const CommandResult r = probe(fake.base_url("/healthz"));
    CAPTURE(r.err);
    CHECK(r.exit_code == expected);
    CHECK(lines_of(r.err).size() == (expected == 0 ? 0u : 1u));
    CHECK(fake.request_count() == 1);  // a redirect is not followed
}

TEST_CASE("probe: sends one GET with the URL's path, query and Host, and Connection: close", "[probe]") {
    FakeProvider fake;
    fake.push(Script::json(200, R"({"status":"ok"})"));
    const CommandResult r = probe(fake.base_url("/readyz?verbose=1"));
    CHECK(r.exit_code == 0);
    REQUIRE(fake.request_count() == 1);
    const RequestRecord req = fake.requests()[0];
    CHECK(req.method == "GET");
    CHECK(req.target == "/readyz?verbose=1");
    CHECK(req.header("host") == "127.0.0.1:" + std::to_string(fake.port()));
    CHECK(req.header("connection") == "close");
    CHECK(req.body.empty());
}

TEST_CASE("probe: a URL without a path asks for /", "[probe]") {
    FakeProvider fake;
    fake.push(Script::json(200, "{}"));
    CHECK(probe("http://127.0.0.1:" + std::to_string(fake.port())).exit_code == 0);
    REQUIRE(fake.request_count() == 1);
    CHECK(fake.requests()[0].target == "/");
}

TEST_CASE("probe: an unused port exits 1 and says the connection was refused", "[probe]") {
    const std::string url = local_url(unused_port(), "/healthz");
    const CommandResult r = probe(url);
    CHECK(r.exit_code == 1);
    const auto lines = lines_of(r.err);
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Contains("modelproxy probe: " + url + ": ") && Contains("refused"));
}

TEST_CASE("probe: a server that never answers is given up after --timeout-ms", "[probe]") {
    SilentListener silent;  // accepts TCP handshakes, never says anything
    const std::string url = local_url(silent.port(), "/healthz");
    const auto started = Clock::now();
    const CommandResult r = probe(url, {"--timeout-ms", "300"});
    const auto took = Clock::now() - started;
    CHECK(r.exit_code == 1);
    const auto lines = lines_of(r.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "modelproxy probe: " + url + ": timed out after 300 ms");
    CHECK(took >= 300ms);
    CHECK(took < 3s);  // not the 2 s default plus process start-up slack
}

TEST_CASE("probe: a head that never ends is bounded by the default 2 s timeout", "[probe]") {
    FakeProvider fake;
    fake.push(Script{}.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n").hang());
    const auto started = Clock::now();
    const CommandResult r = probe(fake.base_url("/healthz"));
    const auto took = Clock::now() - started;
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("timed out after 2000 ms"));
    CHECK(took >= 2s);
    CHECK(took < 5s);
}

TEST_CASE("probe: usage problems exit 2 without connecting", "[probe]") {
    FakeProvider fake;  // what a mistaken probe would reach, were the URL used
    const std::string port = std::to_string(fake.port());
    const auto [args, why] = GENERATE_COPY(table<std::vector<std::string>, std::string>({
        {{"probe"}, "probe needs a URL"},
        {{"probe", "not a url"}, "expected an absolute http:// URL"},
        {{"probe", "localhost:" + port + "/healthz"}, "only http:// is supported (the probe checks a proxy on this host), got localhost:"},
        {{"probe", "https://127.0.0.1:" + port + "/healthz"}, "only http:// is supported"},
        {{"probe", "ftp://127.0.0.1:" + port + "/"}, "only http:// is supported"},
        {{"probe", "http:///healthz"}, "must name a host"},
        {{"probe", "http:}"}, "must name a host"},
        {{"probe", "https:}"}, "only http:// is supported"},
        {{"probe", "http://user:pw@127.0.0.1:" + port + "/"}, "must not carry user info"},
        {{"probe", "http://127.0.0.1:99999/"}, "port must be 1..65535"},
        {{"probe", "http://127.0.0.1:0/"}, "port must be 1..65535"},
        {{"probe", "http://127.0.0.1:" + port + "/", "--timeout-ms", "0"}, "--timeout-ms: expected 1..600000"},
        {{"probe", "http://127.0.0.1:" + port + "/", "--timeout-ms", "2s"}, "--timeout-ms: expected 1..600000"},
        {{"probe", "http://127.0.0.1:" + port + "/", "--timeout-ms"}, "--timeout-ms needs N"},
        {{"probe", "http://127.0.0.1:" + port + "/", "http://127.0.0.1:" + port + "/"}, "unknown argument"},
        {{"probe", "http://127.0.0.1:" + port + "/", "--json"}, "unknown argument --json"},
    }));
    CAPTURE(args);
    const CommandResult r = run_modelproxy(args);
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains(why));
    CHECK(fake.request_count() == 0);
}

TEST_CASE("probe: --help lists it", "[probe]") {
    const CommandResult r = run_modelproxy({"--help"});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("modelproxy probe URL [--timeout-ms N]"));
}
