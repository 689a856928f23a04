// SIGHUP (docs/behaviour.md section 11): the config file is read again; new turns use it,
// in-flight turns keep the generation they started with, a broken file is
// refused with a stderr line naming the problem while the old config keeps
// serving, and the --log file is reopened (log rotation). The sockets and
// workers made at startup stay: a reload never changes `listen`.
#include "support/proxy_process.hpp"

#include "support/fake_provider.hpp"
#include "support/expect.hpp"
#include "support/http_client.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <thread>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto bound = 5s;  // generous bound for things that take milliseconds
constexpr std::string_view reloaded = "modelproxy: config reloaded";
constexpr std::string_view refused = "modelproxy: reload refused; the previous config stays in force";

std::string chat_request(std::string_view model) {
    return R"({"model":")" + std::string(model) + R"(","messages":[{"role":"user","content":"hi"}]})";
}

std::string chat_answer(std::string_view model, std::string_view text = "hello") {
    return R"({"id":"chatcmpl-1","object":"chat.completion","model":")" + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":")" + std::string(text) +
           R"("},"finish_reason":"stop"}]})";
}

// One route entry, to be listed under `routes:`; tiny retry waits.
std::string route(std::string_view name, const FakeProvider& fake, std::string_view models) {
    return "  - name: " + std::string(name) + "\n    upstream: " + fake.base_url("/v1") + "\n    models: [" +
           std::string(models) + "]\n    retry: {base_delay_ms: 10, max_delay_ms: 20, min_attempt_ms: 10}\n";
}

std::string config(std::initializer_list<std::string> routes, std::string_view preamble = {}) {
    std::string yaml = std::string(preamble) + "routes:\n";
    for (const auto& r : routes) yaml += r;
    return yaml;
}

// Sends SIGHUP and waits for the n-th reload verdict line (reloaded or
// refused, counted from the start of stderr); returns it.
//
// Under ThreadSanitizer (deploy/test's third pass) a signal that lands as an
// idle worker enters epoll_wait waits there for the worker's next event
// (docs/reliability.md), and an idle proxy has none: after half a second
// without a verdict a request to /healthz is that event. A build without
// TSan has written its verdict long before; the verdict itself is awaited
// for the same bound either way.
std::string reload(ProxyProcess& proxy, int n) {
    REQUIRE(proxy.signal(SIGHUP));
    const auto give_up = std::chrono::steady_clock::now() + bound;
    for (;;) {
        int seen = 0;  // each wait scans stderr from its start
        auto line = proxy.wait_for_stderr_line(
            [&](const std::string& l) { return (l == reloaded || l == refused) && ++seen == n; }, 500ms);
        if (line) return *line;
        REQUIRE(std::chrono::steady_clock::now() < give_up);
        proxy.client().get("/healthz");
    }
}

// The stderr lines after the first `skip`.
std::vector<std::string> stderr_after(const ProxyProcess& proxy, std::size_t skip) {
    auto lines = proxy.stderr_lines();
    lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(std::min(skip, lines.size())));
    return lines;
}

std::string turn_route(const ProxyProcess& proxy, const std::string& request_id) {
    auto turn = proxy.wait_for_record(
        [&](const JsonRecord& r) { return r.event() == "turn" && r.str("request_id") == request_id; }, bound);
    REQUIRE(turn);
    return turn->str("route").value_or("");
}

bool has_turn_record(const ProxyProcess& proxy, const std::string& request_id) {
    for (const auto& r : proxy.records())
        if (r.event() == "turn" && r.str("request_id") == request_id) return true;
    return false;
}

std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// Polls (bounded) until the file holds `needle`; records are written as they
// happen, so this waits for a write, not for time.
bool wait_for_file_text(const std::filesystem::path& path, std::string_view needle) {
    for (auto until = Clock::now() + bound; Clock::now() < until; std::this_thread::sleep_for(5ms))
        if (file_text(path).find(needle) != std::string::npos) return true;
    return false;
}

Response post(HttpClient& client, std::string_view model, const std::string& request_id, Headers extra = {}) {
    extra.emplace_back("x-request-id", request_id);
    return client.post_json("/v1/chat/completions", chat_request(model), extra);
}

}  // namespace

TEST_CASE("reload: a new route in the file serves new turns after SIGHUP, on connections opened before it",
          "[reload]") {
    FakeProvider one;
    FakeProvider two;
    one.set_default(Script::json(200, chat_answer("gpt-a", "from one")));
    two.set_default(Script::json(200, chat_answer("gpt-b", "from two")));
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")})});
    proxy.start();
    HttpClient client = proxy.client();  // keep-alive across the reload

    const Response before = post(client, "gpt-b", "before");
    CAPTURE(before.wire);
    CHECK(before.status == 404);  // model_not_found: not configured yet
    CHECK(two.request_count() == 0);

    proxy.write_config(config({route("one", one, "gpt-a"), route("two", two, "gpt-b")}));
    CHECK(reload(proxy, 1) == reloaded);

    const Response after = post(client, "gpt-b", "after");
    CAPTURE(after.wire);
    CHECK(after.status == 200);
    CHECK(after.body == chat_answer("gpt-b", "from two"));
    CHECK(two.request_count() == 1);
    CHECK(turn_route(proxy, "after") == "two");

    HttpClient fresh = proxy.client();
    const Response models = fresh.get("/v1/models");
    CHECK_THAT(models.body, Contains(R"("id":"gpt-a")") && Contains(R"("id":"gpt-b")"));
    CHECK(post(fresh, "gpt-a", "still-one").body == chat_answer("gpt-a", "from one"));
    CHECK(one.request_count() == 1);
    CHECK(proxy.running());
}

TEST_CASE("reload: a stream in flight at SIGHUP finishes on its old route and upstream", "[reload]") {
    FakeProvider one;
    FakeProvider two;
    auto event = [](std::string_view delta) {
        return "data: {\"id\":\"s1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-a\",\"choices\":[{\"index\":0,"
               "\"delta\":" +
               std::string(delta) + ",\"finish_reason\":null}]}\n\n";
    };
    const std::string finish =
        "data: {\"id\":\"s1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-a\",\"choices\":[{\"index\":0,"
        "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    // Answer text first (so it is published), then a pause the reload
    // happens in, then the rest of the stream. The pause is wide: a reload
    // under a sanitizer on a loaded 2-core machine took over a second.
    one.push(Script{}
                 .write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                 .chunk(event(R"({"role":"assistant","content":""})"))
                 .chunk(event(R"({"content":"old "})"))
                 .sleep(3000ms)
                 .chunk(event(R"({"content":"route"})"))
                 .chunk(finish)
                 .last_chunk());
    two.set_default(Script::json(200, chat_answer("gpt-a", "from two")));
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")})});
    proxy.start();

    HttpClient streaming = proxy.client();
    REQUIRE_FALSE(streaming.send_request(
        "POST", "/v1/chat/completions", {{"Content-Type", "application/json"}, {"x-request-id", "in-flight"}},
        R"({"model":"gpt-a","stream":true,"messages":[{"role":"user","content":"hi"}]})"));
    const Response head = streaming.read_head(bound);
    CAPTURE(head.wire);
    REQUIRE(head.status == 200);
    read_body_until(streaming, head.body, "old ", bound);

    // gpt-a now belongs to route "two" on another upstream.
    proxy.write_config(config({route("two", two, "gpt-a")}));
    CHECK(reload(proxy, 1) == reloaded);
    // The stream was really still in flight when the new config took over.
    CHECK_FALSE(has_turn_record(proxy, "in-flight"));

    const Response rest = streaming.read_rest(bound);
    CAPTURE(rest.wire);
    REQUIRE(rest.ok());
    CHECK_THAT(rest.body, Contains(R"({"content":"route"})") && Contains("data: [DONE]"));
    CHECK(one.request_count() == 1);
    CHECK(two.request_count() == 0);
    CHECK(turn_route(proxy, "in-flight") == "one");

    HttpClient next = proxy.client();
    CHECK(post(next, "gpt-a", "new-turn").body == chat_answer("gpt-a", "from two"));
    CHECK(turn_route(proxy, "new-turn") == "two");
    CHECK(one.request_count() == 1);
}

TEST_CASE("reload: a turn replaying across a SIGHUP keeps its old upstream for every attempt", "[reload]") {
    FakeProvider one;
    FakeProvider two;
    // Attempt 1 fails (503) after a pause the reload happens in; attempt 2
    // must go where attempt 1 went, not where the new config points. The
    // pause is wide for the same reason as above.
    one.push(Script{}.sleep(3000ms).then(Script::json(503, R"({"error":{"message":"busy","type":"server_error"}})")));
    one.push(Script::json(200, chat_answer("gpt-a", "from one")));
    two.set_default(Script::json(200, chat_answer("gpt-a", "from two")));
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")})});
    proxy.start();

    HttpClient client = proxy.client();
    REQUIRE_FALSE(client.send_request("POST", "/v1/chat/completions",
                                      {{"Content-Type", "application/json"}, {"x-request-id", "replayed"}},
                                      chat_request("gpt-a")));
    REQUIRE(one.wait_for_requests(1, bound));
    proxy.write_config(config({route("two", two, "gpt-a")}));
    CHECK(reload(proxy, 1) == reloaded);
    CHECK(one.request_count() == 1);  // attempt 2 had not started when the reload was done

    const Response r = client.read_response(bound);
    CAPTURE(r.wire);
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer("gpt-a", "from one"));
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(one.request_count() == 2);
    CHECK(two.request_count() == 0);
    CHECK(turn_route(proxy, "replayed") == "one");
}

TEST_CASE("reload: a broken file is refused with a line naming the problem, and the old config keeps serving",
          "[reload]") {
    FakeProvider one;
    FakeProvider two;
    one.set_default(Script::json(200, chat_answer("gpt-a", "from one")));
    two.set_default(Script::json(200, chat_answer("gpt-a", "from two")));
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")})});
    proxy.start();
    const std::string path = proxy.config_path().string();

    struct Case {
        std::string name;
        std::string yaml;
        std::string problem;  // the one line expected before the verdict
    };
    const std::vector<Case> cases = {
        {"YAML syntax error", "routes: [ {\n", "modelproxy: " + path + ": YAML syntax error at line 2, column 1: "},
        {"out-of-range value", config({route("two", two, "gpt-a")}) + "    timeout_ms: 5\n",
         "modelproxy: " + path + ": routes[0].timeout_ms: "},
        {"unknown key", config({route("two", two, "gpt-a")}) + "    retyr: {}\n",
         "modelproxy: " + path + ": routes[0].retyr: "},
        {"model twice in one route", config({route("two", two, "gpt-a, gpt-a")}),
         "modelproxy: " + path + ": routes[0].models[1]: "},
        {"a models entry no route lists", config({route("two", two, "gpt-a")}) + "models: [{name: gpt-b}]\n",
         "modelproxy: " + path + ": models[0].name: "},
    };
    int verdicts = 0;
    for (const auto& c : cases) {
        SECTION(c.name) {
            proxy.write_config(c.yaml);
            const std::size_t before = proxy.stderr_lines().size();
            CHECK(reload(proxy, ++verdicts) == refused);
            const auto lines = stderr_after(proxy, before);
            CAPTURE(lines);
            REQUIRE(lines.size() == 2);
            CHECK_THAT(lines[0], Catch::Matchers::StartsWith(c.problem));
            CHECK(lines[1] == refused);

            HttpClient client = proxy.client();
            const Response r = post(client, "gpt-a", "after-refusal");
            CAPTURE(r.wire);
            CHECK(r.status == 200);
            CHECK(r.body == chat_answer("gpt-a", "from one"));
            CHECK(two.request_count() == 0);
            CHECK(turn_route(proxy, "after-refusal") == "one");

            // A good file afterwards is taken: a refusal does not stop reloads.
            proxy.write_config(config({route("two", two, "gpt-a")}));
            CHECK(reload(proxy, ++verdicts) == reloaded);
            CHECK(post(client, "gpt-a", "after-fix").body == chat_answer("gpt-a", "from two"));
        }
    }
    CHECK(proxy.running());
}

TEST_CASE("reload: a file that cannot be read is refused and the old config keeps serving", "[reload]") {
    FakeProvider one;
    one.set_default(Script::json(200, chat_answer("gpt-a")));
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")})});
    proxy.start();
    std::filesystem::remove(proxy.config_path());
    const std::size_t before = proxy.stderr_lines().size();
    CHECK(reload(proxy, 1) == refused);
    const auto lines = stderr_after(proxy, before);
    CAPTURE(lines);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "modelproxy: cannot read " + proxy.config_path().string());
    HttpClient client = proxy.client();
    CHECK(post(client, "gpt-a", "x").status == 200);
}

// Regression: a reload judged docs/behaviour.md section 12's open-listener rule against
// the file's `listen`, not the address really served, so a proxy listening
// on 0.0.0.0 with client tokens took a file that said 127.0.0.1 and dropped
// the tokens, and then spent its key for anyone who could reach the port.
TEST_CASE("reload: listen stays as started, and the open-listener rule is judged against it", "[reload]") {
    FakeProvider one;
    one.set_default(Script::json(200, chat_answer("gpt-a")));
    const std::string keyed = route("one", one, "gpt-a") + "    api_key_env: MP_TEST_ROUTE_KEY\n";
    const Environment env{{"MP_TEST_ROUTE_KEY", "sk-route-key"}, {"MP_TEST_CLIENT_TOKENS", "tok-1"}};
    // No --listen: the file's listen is in force. The test only connects
    // to 127.0.0.1.
    ProxyProcess proxy({.config_yaml = config({keyed}, "listen: 0.0.0.0:0\nclients:\n  tokens_env: MP_TEST_CLIENT_TOKENS\n"),
                        .listen = "",
                        .env = env});
    proxy.start();
    // A refused request with a body ends its connection (section 12): each
    // post after a 401 goes on a new one.
    HttpClient stranger = proxy.client();
    CHECK(post(stranger, "gpt-a", "no-token").status == 401);
    HttpClient client = proxy.client();
    CHECK(post(client, "gpt-a", "token", {{"Authorization", "Bearer tok-1"}}).status == 200);

    proxy.write_config(config({keyed}, "listen: 127.0.0.1:0\n"));
    const std::size_t before = proxy.stderr_lines().size();
    CHECK(reload(proxy, 1) == refused);
    const auto lines = stderr_after(proxy, before);
    CAPTURE(lines);
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "modelproxy: " + proxy.config_path().string() +
                          ": listen and workers changes need a restart; still serving 0.0.0.0:0 with workers 0");
    CHECK_THAT(lines[1], Contains("clients.tokens_env: listen address 0.0.0.0 is not loopback"));
    CHECK(lines[2] == refused);
    // Client tokens are still required.
    CHECK(post(client, "gpt-a", "still-no-token").status == 401);
    CHECK(one.request_count() == 1);
}

TEST_CASE("reload: a listen change in the file is reported and not applied, the rest of the file is", "[reload]") {
    FakeProvider one;
    FakeProvider two;
    one.set_default(Script::json(200, chat_answer("gpt-a", "from one")));
    two.set_default(Script::json(200, chat_answer("gpt-a", "from two")));
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")}, "listen: 127.0.0.1:0\nworkers: 1\n"),
                        .listen = ""});
    proxy.start();
    proxy.write_config(config({route("two", two, "gpt-a")}, "listen: 127.0.0.2:8080\nworkers: 2\n"));
    const std::size_t before = proxy.stderr_lines().size();
    CHECK(reload(proxy, 1) == reloaded);
    const auto lines = stderr_after(proxy, before);
    CAPTURE(lines);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "modelproxy: " + proxy.config_path().string() +
                          ": listen and workers changes need a restart; still serving 127.0.0.1:0 with workers 1");
    HttpClient client = proxy.client();  // the port from the startup line still answers
    CHECK(post(client, "gpt-a", "moved").body == chat_answer("gpt-a", "from two"));
}

TEST_CASE("reload: SIGHUP reopens the --log file, so a renamed log is followed by a new one", "[reload]") {
    FakeProvider one;
    one.set_default(Script::json(200, chat_answer("gpt-a")));
    TempDir logs("logs");
    const auto log = logs.path() / "records.log";
    const auto rotated = logs.path() / "records.log.1";
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")}), .args = {"--log", log.string()}});
    proxy.start();
    HttpClient client = proxy.client();

    REQUIRE(post(client, "gpt-a", "before-rotation").status == 200);
    REQUIRE(wait_for_file_text(log, R"("event":"turn","request_id":"before-rotation")"));
    std::filesystem::rename(log, rotated);
    // Written after the rename but before SIGHUP: still the old (renamed) file.
    REQUIRE(post(client, "gpt-a", "renamed").status == 200);
    REQUIRE(wait_for_file_text(rotated, R"("event":"turn","request_id":"renamed")"));
    CHECK_FALSE(std::filesystem::exists(log));

    CHECK(reload(proxy, 1) == reloaded);
    REQUIRE(std::filesystem::exists(log));  // reopened (created) by the time the line is out
    REQUIRE(post(client, "gpt-a", "after-rotation").status == 200);
    REQUIRE(wait_for_file_text(log, R"("event":"turn","request_id":"after-rotation")"));

    const std::string fresh = file_text(log);
    const std::string old = file_text(rotated);
    CHECK_THAT(fresh, Contains(R"("event":"attempt","request_id":"after-rotation")"));
    CHECK_THAT(fresh, !Contains("before-rotation") && !Contains(R"("request_id":"renamed")"));
    CHECK_THAT(old, !Contains("after-rotation"));
    // Every line in both files is one whole record.
    for (const std::string& text : {fresh, old}) {
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);) {
            CAPTURE(line);
            CHECK(JsonRecord::parse(line).has_value());
        }
    }
    CHECK(proxy.stdout_lines().empty());  // records go to the file only
}

TEST_CASE("reload: the old generation's pooled upstream connection is closed, the new one opens its own",
          "[reload]") {
    FakeProvider one;
    one.set_default(Script::json(200, chat_answer("gpt-a")));
    ProxyProcess proxy({.config_yaml = config({route("one", one, "gpt-a")}) + "workers: 1\n"});
    proxy.start();
    HttpClient client = proxy.client();

    REQUIRE(post(client, "gpt-a", "first").status == 200);
    REQUIRE(post(client, "gpt-a", "second").status == 200);
    CHECK(one.connections_accepted() == 1);  // pooled: the second turn reused it
    REQUIRE(one.wait_for_connections(1, bound));
    CHECK(one.connections_open() == 1);

    proxy.write_config(config({route("one", one, "gpt-a")}) + "workers: 1\n");
    CHECK(reload(proxy, 1) == reloaded);

    // The old generation's idle connection is closed by the reload...
    const auto until = Clock::now() + bound;
    while (one.connections_open() != 0 && Clock::now() < until) std::this_thread::sleep_for(10ms);
    CHECK(one.connections_open() == 0);
    // ...and the new generation connects afresh and pools its own.
    REQUIRE(post(client, "gpt-a", "third").status == 200);
    REQUIRE(post(client, "gpt-a", "fourth").status == 200);
    CHECK(one.connections_accepted() == 2);
}

TEST_CASE("reload: an open breaker stays open for an unchanged candidate, and starts afresh for a changed one",
          "[reload][breaker]") {
    FakeProvider east, west;
    east.set_default(Script::json(503, R"({"error":{"message":"down","type":"server_error","code":null}})"));
    west.set_default(Script::json(200, R"({"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[]})"));
    const auto yaml = [&](std::string_view east_model, std::string_view west_timeout) {
        return "routes:\n  - name: east\n    upstream: " + east.base_url("/v1") + "\n    models: [{name: gpt-4o, upstream_model: " +
               std::string(east_model) + "}]\n    retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\n"
               "    breaker: {consecutive_failures: 1, open_ms: 60000, max_open_ms: 60000}\n"
               "  - name: west\n    upstream: " + west.base_url("/v1") + "\n    models: [gpt-4o-mini]\n    timeout_ms: " +
               std::string(west_timeout) + "\nmodels:\n  - name: gpt-4o\n    attempts_per_candidate: 1\n"
               "    fallbacks: [gpt-4o-mini]\n";
    };
    const std::string body = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";
    auto proxy = start_proxy(yaml("gpt-4o", "60000"));
    const Response first = proxy->client().post_json("/v1/chat/completions", body);
    REQUIRE(first.ok());
    CHECK(first.header("x-modelproxy-route") == "west");
    REQUIRE(east.request_count() == 1);

    // Another route's setting changes: east's breaker is still open.
    proxy->write_config(yaml("gpt-4o", "50000"));
    CHECK(reload(*proxy, 1) == reloaded);
    const Response second = proxy->client().post_json("/v1/chat/completions", body);
    REQUIRE(second.ok());
    CHECK(second.header("x-modelproxy-route") == "west");
    CHECK(second.header("x-modelproxy-attempts") == "1");
    CHECK(east.request_count() == 1);

    // East's upstream model changes: a new candidate, its breaker closed.
    proxy->write_config(yaml("gpt-4o-2024-08-06", "50000"));
    CHECK(reload(*proxy, 2) == reloaded);
    const Response third = proxy->client().post_json("/v1/chat/completions", body);
    REQUIRE(third.ok());
    CHECK(east.request_count() == 2);
}
