// Header rules through the real binary (docs/behaviour.md sections 3, 4 and 10): which
// request headers reach the upstream, the Host and Accept-Encoding it sees,
// credential injection and pass-through, static route headers, hop-by-hop
// response headers, absolute-form targets, and keys kept out of the logs.
#include "support/fake_provider.hpp"

#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <cctype>
#include <csignal>
#include <memory>

using namespace modelproxy::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

constexpr auto bound = 5s;  // generous bound for things that should take milliseconds

// The route key, shaped so that no default secret pattern matches it: a leak
// is found by its value only.
const std::string route_key = "mpkey-route-6d1f0c9e4b2a7358";
const std::string key_env = "MODELPROXY_HEADERS_TEST_KEY";

// One route to `fake` serving gpt-4o-mini; `extra` holds more route keys,
// each line indented by four spaces.
std::string one_route(const FakeProvider& fake, std::string_view extra = "") {
    std::string yaml = "routes:\n  - name: fake\n    upstream: " + fake.base_url("/v1") +
                       "\n    models: [gpt-4o-mini]\n";
    yaml += extra;
    return yaml;
}

std::string keyed_route(const FakeProvider& fake, std::string_view extra = "") {
    return one_route(fake, "    api_key_env: " + key_env + "\n" + std::string(extra));
}

const std::string chat_request = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]})";
const std::string chat_answer =
    R"({"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";

// Sends one chat request with `headers` through a proxy for `yaml` and
// returns what the upstream received.
RequestRecord forwarded(FakeProvider& fake, const std::string& yaml, const Headers& headers, Environment env = {}) {
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(yaml, std::move(env));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request, headers);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    REQUIRE(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    return fake.requests().at(0);
}

// The header lines, one per line, for failure messages.
std::string dump(const Headers& headers) {
    std::string out;
    for (const auto& h : headers) out += h.name + ": " + h.value + "\n";
    return out;
}

bool any_header_starts_with(const Headers& headers, std::string_view prefix) {
    for (const auto& h : headers) {
        if (h.name.size() >= prefix.size() && header_name_equals(h.name.substr(0, prefix.size()), prefix)) return true;
    }
    return false;
}

// The upstream may write its own Connection header; none may carry a name the client listed.
bool connection_names(const Headers& headers, std::string_view token) {
    for (const auto& h : headers) {
        if (!header_name_equals(h.name, "connection")) continue;
        std::string value = h.value;
        for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (value.find(token) != std::string::npos) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("hop-by-hop request headers and those named by Connection do not reach the upstream", "[headers]") {
    FakeProvider fake;
    const RequestRecord up = forwarded(fake, one_route(fake),
                                       {{"Connection", "x-foo"},
                                        {"Connection", "X-Bar"},
                                        {"Keep-Alive", "timeout=5, max=100"},
                                        {"TE", "trailers"},
                                        {"Trailer", "X-Checksum"},
                                        {"Upgrade", "h2c"},
                                        {"Proxy-Authorization", "Basic cHJveHk6cGFzcw=="},
                                        {"Proxy-Connection", "keep-alive"},
                                        {"X-Foo", "1"},
                                        {"x-bar", "2"},
                                        {"X-End-To-End", "kept"}});
    CAPTURE(dump(up.headers));
    CHECK(up.header("x-end-to-end") == "kept");  // end-to-end headers do pass
    CHECK_FALSE(up.header("keep-alive"));
    CHECK_FALSE(up.header("te"));
    CHECK_FALSE(up.header("trailer"));
    CHECK_FALSE(up.header("upgrade"));
    CHECK_FALSE(up.header("proxy-authorization"));
    CHECK_FALSE(up.header("proxy-connection"));
    CHECK_FALSE(up.header("x-foo"));
    CHECK_FALSE(up.header("x-bar"));
    CHECK_FALSE(connection_names(up.headers, "x-foo"));
    CHECK_FALSE(connection_names(up.headers, "x-bar"));
    CHECK(up.body == chat_request);
}

TEST_CASE("a chunked client body reaches the upstream de-chunked, without Transfer-Encoding", "[headers]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(one_route(fake));
    HttpClient client = proxy->client();
    const std::string raw = "POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n" +
                            format_chunk(chat_request.substr(0, 10)) + format_chunk(chat_request.substr(10)) +
                            format_chunk("");
    REQUIRE_FALSE(client.send_raw(raw));
    const Response r = client.read_response();
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord up = fake.requests()[0];
    CHECK(up.body == chat_request);
    CHECK_FALSE(up.header("transfer-encoding"));
    CHECK(up.header("content-length") == std::to_string(chat_request.size()));
}

TEST_CASE("a chunked request's trailer fields are dropped, and its head's are read as sent", "[headers]") {
    // docs/behaviour.md section 4: trailers are never merged into the head (what they
    // cannot do is in client_hardening_test.cpp); the head's own fields are
    // still read right after a long trailer.
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(one_route(fake));
    HttpClient client = proxy->client();
    const std::string padding(3000, 'p');
    const std::string raw = "POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
                            "X-Request-Id: from-the-head\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            format_chunk(chat_request) + "0\r\nx-padding: " + padding +
                            "\r\nX-Request-Id: from-the-trailer\r\n\r\n";
    REQUIRE_FALSE(client.send_raw(raw));
    const Response r = client.read_response();
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-request-id") == "from-the-head");
    REQUIRE(fake.wait_for_requests(1, bound));
    const RequestRecord up = fake.requests()[0];
    CHECK(up.body == chat_request);
    CHECK(up.header("content-type") == "application/json");
    CHECK(up.header("x-request-id") == "from-the-head");
    CHECK_FALSE(up.header("x-padding"));
}

TEST_CASE("x-modelproxy-* request headers do not reach the upstream", "[headers]") {
    FakeProvider fake;
    const RequestRecord up = forwarded(fake, one_route(fake),
                                       {{"x-modelproxy-debug", "1"},
                                        {"X-ModelProxy-Timeout-Ms", "60000"},
                                        {"X-Modelproxy-Attempts", "3"},
                                        {"x-modelproxyish", "kept"}});
    CAPTURE(dump(up.headers));
    CHECK_FALSE(any_header_starts_with(up.headers, "x-modelproxy-"));
    CHECK(up.header("x-modelproxyish") == "kept");  // only the x-modelproxy- prefix is the proxy's
}

TEST_CASE("the upstream's Host is the route's host and port, whatever the client's Host says", "[headers]") {
    FakeProvider fake;
    FakeProvider decoy;
    const std::string decoy_host = "127.0.0.1:" + std::to_string(decoy.port());
    const RequestRecord up = forwarded(fake, one_route(fake), {{"Host", decoy_host}});
    CHECK(count_header(up.headers, "host") == 1);
    CHECK(up.header("host") == "127.0.0.1:" + std::to_string(fake.port()));
    CHECK(decoy.connections_accepted() == 0);
}

TEST_CASE("the upstream request carries Accept-Encoding: identity", "[headers]") {
    FakeProvider fake;
    const RequestRecord up = forwarded(fake, one_route(fake), {{"Accept-Encoding", "gzip, deflate, br"}});
    CHECK(count_header(up.headers, "accept-encoding") == 1);
    CHECK(up.header("accept-encoding") == "identity");
}

TEST_CASE("with api_key_env set the upstream gets the route's bearer key and no client credential",
          "[headers]") {
    FakeProvider fake;
    const RequestRecord up = forwarded(fake, keyed_route(fake),
                                       {{"Authorization", "Bearer client-token-1"},
                                        {"x-api-key", "client-x-api-key"},
                                        {"api-key", "client-azure-key"}},
                                       {{key_env, route_key}});
    CAPTURE(dump(up.headers));
    CHECK(count_header(up.headers, "authorization") == 1);
    CHECK(up.header("authorization") == "Bearer " + route_key);
    CHECK_FALSE(up.header("x-api-key"));
    CHECK_FALSE(up.header("api-key"));
}

TEST_CASE("api_key_header x-api-key with an empty prefix carries the bare key", "[headers]") {
    FakeProvider fake;
    const RequestRecord up =
        forwarded(fake, keyed_route(fake, "    api_key_header: x-api-key\n    api_key_prefix: \"\"\n"),
                  {{"Authorization", "Bearer client-token-1"}, {"x-api-key", "client-x-api-key"}},
                  {{key_env, route_key}});
    CAPTURE(dump(up.headers));
    CHECK(count_header(up.headers, "x-api-key") == 1);
    CHECK(up.header("x-api-key") == route_key);
    CHECK_FALSE(up.header("authorization"));
    CHECK_FALSE(up.header("api-key"));
}

TEST_CASE("with api_key_env unset the client's own Authorization passes through", "[headers]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(keyed_route(fake));  // the variable is not in the child's environment
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request,
                                                 {{"Authorization", "Bearer client-token-1"}});
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    REQUIRE(fake.wait_for_requests(1, bound));
    CHECK(fake.requests()[0].header("authorization") == "Bearer client-token-1");
    // Section 3: stderr says so in one line.
    CHECK(proxy->wait_for_stderr_line(
        [](const std::string& line) { return line.find(key_env) != std::string::npos; }, bound));
}

TEST_CASE("a route's static headers reach the upstream", "[headers]") {
    FakeProvider fake;
    const RequestRecord up =
        forwarded(fake, one_route(fake, "    headers: {anthropic-version: \"2023-06-01\", X-Team: core}\n"), {});
    CHECK(up.header("anthropic-version") == "2023-06-01");
    CHECK(up.header("x-team") == "core");
}

// docs/behaviour.md section 3 says only that static headers are "added"; a second
// anthropic-version beside the client's is a repeated singleton field
// (RFC 9110 section 5.3) that providers refuse or read either way, so the
// route's value is expected to replace the client's.
// Regression: the upstream received both the client's and the route's value.
TEST_CASE("a route's static header replaces a client header of the same name", "[headers]") {
    FakeProvider fake;
    const RequestRecord up = forwarded(fake, one_route(fake, "    headers: {anthropic-version: \"2023-06-01\"}\n"),
                                       {{"Anthropic-Version", "2020-01-01"}});
    CAPTURE(dump(up.headers));
    CHECK(count_header(up.headers, "anthropic-version") == 1);
    CHECK(up.header("anthropic-version") == "2023-06-01");
}

TEST_CASE("x-modelproxy-* headers from the upstream are replaced by the proxy's own", "[headers]") {
    FakeProvider fake;
    // An upstream that is itself a modelproxy (or pretends to be).
    fake.push(Script::json(200, chat_answer,
                           {{"x-modelproxy-attempts", "7"},
                            {"x-modelproxy-request-id", "upstream-id"},
                            {"x-modelproxy-error-class", "server"}}));
    auto proxy = start_proxy(one_route(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header_count("x-modelproxy-attempts") == 1);
    CHECK(r.header("x-modelproxy-attempts") == "1");
    CHECK(r.header_count("x-modelproxy-request-id") == 1);
    CHECK(r.header("x-modelproxy-request-id") != "upstream-id");
    CHECK(r.header_count("x-modelproxy-error-class") == 0);
}

TEST_CASE("hop-by-hop response headers from the upstream do not reach the client", "[headers]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer,
                           {{"Connection", "keep-alive, X-Hop"},
                            {"Keep-Alive", "timeout=5"},
                            {"X-Hop", "1"},
                            {"Proxy-Authenticate", "Basic realm=\"up\""},
                            {"Trailer", "X-Sum"},
                            {"Upgrade", "h2c"},
                            {"X-End-To-End", "kept"}}));
    auto proxy = start_proxy(one_route(fake));
    const Response r = proxy->client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer);
    CHECK(r.header("x-end-to-end") == "kept");
    CHECK_FALSE(r.header("keep-alive"));
    CHECK_FALSE(r.header("x-hop"));
    CHECK_FALSE(r.header("proxy-authenticate"));
    CHECK_FALSE(r.header("trailer"));
    CHECK_FALSE(r.header("upgrade"));
    CHECK_FALSE(connection_names(r.headers, "x-hop"));
}

// The proxy's observed behaviour: it refuses an absolute-form target with
// 400 invalid_path (the other answer docs/behaviour.md section 4 allows is to route it to
// the configured upstream only; both are accepted here).
TEST_CASE("an absolute-form request target never points the proxy at another host", "[headers]") {
    FakeProvider fake;
    FakeProvider decoy;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(one_route(fake));
    const std::string decoy_url = decoy.base_url("/v1/chat/completions");
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(format_request("POST", decoy_url,
                                                 {{"Host", "127.0.0.1:" + std::to_string(decoy.port())},
                                                  {"Content-Type", "application/json"},
                                                  {"Content-Length", std::to_string(chat_request.size())}},
                                                 chat_request)));
    const Response r = client.read_response();
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(decoy.connections_accepted() == 0);
    if (r.status == 400) {
        const auto doc = boost::json::parse(r.body);
        CHECK(doc.at("error").at("code") == "invalid_path");
        CHECK(fake.request_count() == 0);
    } else {
        CHECK(r.status == 200);
        REQUIRE(fake.wait_for_requests(1, bound));
        CHECK(fake.requests()[0].target == "/v1/chat/completions");
    }
}

TEST_CASE("an absolute-form target naming evil.example is answered without leaving the configured routes",
          "[headers]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    auto proxy = start_proxy(one_route(fake));
    HttpClient client = proxy->client();
    REQUIRE_FALSE(client.send_raw(format_request("POST", "http://evil.example/v1/chat/completions",
                                                 {{"Host", "evil.example"},
                                                  {"Content-Type", "application/json"},
                                                  {"Content-Length", std::to_string(chat_request.size())}},
                                                 chat_request)));
    const Response r = client.read_response();
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    // Either refused as invalid_path, or served by the configured upstream:
    // never a 502/504 from trying to reach evil.example.
    if (r.status == 400) {
        CHECK(boost::json::parse(r.body).at("error").at("code") == "invalid_path");
        CHECK(fake.request_count() == 0);
    } else {
        CHECK(r.status == 200);
        CHECK(fake.request_count() == 1);
    }
}

TEST_CASE("no record and no stderr line holds the route key or a client Authorization value", "[headers]") {
    FakeProvider fake;
    fake.push(Script::json(200, chat_answer));
    fake.push(Script::json(401, R"({"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}})"));
    fake.push(Script::json(400, R"({"error":{"message":"bad","type":"invalid_request_error","code":null}})"));
    auto proxy = start_proxy(keyed_route(fake), {{key_env, route_key}});
    HttpClient client = proxy->client();
    const Headers credentials{{"Authorization", "Bearer client-secret-7f3e"}, {"x-api-key", "client-secret-x-91c2"}};

    CHECK(client.post_json("/v1/chat/completions", chat_request, credentials).status == 200);
    CHECK(client.post_json("/v1/chat/completions", chat_request, credentials).status == 401);
    CHECK(client.post_json("/v1/chat/completions", chat_request, credentials).status == 400);
    REQUIRE(proxy->wait_for_records("turn", 3, bound));
    REQUIRE(fake.wait_for_requests(3, bound));
    CHECK(fake.requests()[2].header("authorization") == "Bearer " + route_key);  // the key was in use

    // Everything the process will ever write: close the client, stop it, wait for its exit.
    client.close();
    REQUIRE(proxy->signal(SIGTERM));
    CHECK(proxy->wait_exit(bound).has_value());

    std::vector<std::string> bad;
    const auto records = proxy->records(&bad);
    CHECK(bad.empty());
    CHECK(records.size() >= 6);  // an attempt and a turn record per turn
    for (const auto& line : proxy->stdout_lines()) {
        CAPTURE(line);
        CHECK_THAT(line, !Contains(route_key));
        CHECK_THAT(line, !Contains("client-secret"));
    }
    for (const auto& line : proxy->stderr_lines()) {
        CAPTURE(line);
        CHECK_THAT(line, !Contains(route_key));
        CHECK_THAT(line, !Contains("client-secret"));
    }
}
