// Routes: upstream URLs, models, keys, headers, TLS, the retry override and
// the rules across fields and routes.
#include "config/config.hpp"

#include <catch2/catch.hpp>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;

namespace {

std::vector<std::string> problem_lines(std::string_view yaml) {
    std::vector<std::string> lines;
    for (const mc::Problem& problem : mc::load_config(yaml).problems) {
        lines.push_back(problem.line());
    }
    return lines;
}

// One route whose mapping body is `body` (flow style, without braces).
std::string one_route(const std::string& body) {
    return "routes:\n  - {" + body + "}\n";
}

mc::Route load_route(const std::string& body) {
    const mc::LoadResult result = mc::load_config(one_route(body));
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.config.has_value());
    REQUIRE(result.config->routes.size() == 1);
    return result.config->routes[0];
}

}  // namespace

TEST_CASE("upstream URLs are parsed into scheme, host, port and base path") {
    auto [url, https, host, port, base_path] = GENERATE(table<std::string, bool, std::string, int, std::string>({
        {"https://api.openai.com/v1", true, "api.openai.com", 443, "/v1"},
        {"http://localhost:8081", false, "localhost", 8081, ""},
        {"http://localhost", false, "localhost", 80, ""},
        {"https://example.com/", true, "example.com", 443, ""},
        {"https://example.com/openai/v1/", true, "example.com", 443, "/openai/v1"},
        {"https://Example.COM:8443/v1", true, "example.com", 8443, "/v1"},
        {"HTTPS://example.com/v1", true, "example.com", 443, "/v1"},
        {"http://[::1]:9000/x", false, "::1", 9000, "/x"},
        {"http://127.0.0.1:1/v1//", false, "127.0.0.1", 1, "/v1"},
        {"https://h.example:/v1", true, "h.example", 443, "/v1"},
    }));
    CAPTURE(url);
    const mc::Route route = load_route("name: r, upstream: \"" + url + "\", models: [m]");
    CHECK(route.upstream_url == url);
    CHECK(route.upstream.https == https);
    CHECK(route.upstream.host == host);
    CHECK(route.upstream.port == port);
    CHECK(route.upstream.base_path == base_path);
}

TEST_CASE("bad upstream URLs are refused with the reason") {
    auto [url, why] = GENERATE(table<std::string, std::string>({
        {"ftp://example.com/v1", "must start with http:// or https://, got ftp:"},
        {"ws://example.com/v1", "must start with http:// or https://, got ws:"},
        {"https:///v1", "must name a host"},
        {"https:/v1", "must name a host"},
        // Boost.URL 1.81 asserts on a scheme followed by a character that
        // cannot begin a path; the config refuses these before parsing.
        {"https:}", "must name a host"},
        {"HTTP:x", "must name a host"},
        {"ftp:}", "must start with http:// or https://, got ftp:"},
        {"https://user:pass@example.com/v1", "must not carry user info; put the key's variable in api_key_env"},
        {"https://key@example.com/v1", "must not carry user info; put the key's variable in api_key_env"},
        {"https://example.com/v1?api-version=1", "must not have a query; use the route's query map"},
        {"https://example.com/v1?", "must not have a query; use the route's query map"},
        {"https://example.com/v1#top", "must not have a fragment"},
        {"https://example.com:0/v1", "port must be 1..65535, got 0"},
        {"https://example.com:65536/v1", "port must be 1..65535, got 65536"},
        {"https://example.com/v1/../admin", "path must not contain '.' or '..' segments"},
        {"https://example.com/%2E%2E/admin", "path must not contain '.' or '..' segments"},
        {"api.openai.com/v1", "must be an absolute http:// or https:// URL"},
        {"https://exa mple.com", "must be an absolute http:// or https:// URL"},
        {"", "must be an absolute http:// or https:// URL"},
        {"https://ex%41mple.com/", "must name a host by letters, digits, '.', '-' or an IP address"},
        {"https://[v1.x]/", "must name a host name or an IPv4 or IPv6 address"},
    }));
    CAPTURE(url);
    CHECK(problem_lines(one_route("name: r, upstream: \"" + url + "\", models: [m]")) ==
          Lines{"routes[0].upstream: " + why});
}

TEST_CASE("a route needs a name, an upstream and models") {
    CHECK(problem_lines(one_route("models: [m]")) ==
          Lines{"routes[0].name: is required", "routes[0].upstream: is required"});
    CHECK(problem_lines(one_route("name: r, upstream: 'http://h'")) ==
          Lines{"routes[0].models: is required (list the model names this route serves, or \"*\")"});
    CHECK(problem_lines(one_route("name: r, upstream: 'http://h', models: []")) ==
          Lines{"routes[0].models: must list at least one model, or \"*\""});
    CHECK(problem_lines("routes: []\n") == Lines{"routes: must list at least one route"});
}

TEST_CASE("route names are non-empty, plain and unique") {
    CHECK(problem_lines(one_route("name: '', upstream: 'http://h', models: [m]")) ==
          Lines{"routes[0].name: must not be empty"});
    CHECK(problem_lines(one_route("name: 'open ai', upstream: 'http://h', models: [m]")) ==
          Lines{"routes[0].name: must be letters, digits, '.', '_' or '-' (it names metrics labels)"});
    CHECK(problem_lines(R"(routes:
  - {name: a, upstream: 'http://h', models: [m]}
  - {name: b, upstream: 'http://h', models: [n]}
  - {name: a, upstream: 'http://h', models: [o]}
)") == Lines{"routes[2].name: route name a is already used by routes[0]"});
}

TEST_CASE("models: shorthand and map forms") {
    const mc::Route route = load_route(
        "name: r, upstream: 'http://h', models: [gpt-4o-mini, {name: fast, upstream_model: gpt-4o-mini, "
        "accept: [gpt-4o-mini, 'gpt-4o-mini-20*']}, {name: plain}, {name: renamed, upstream_model: real}]");
    REQUIRE(route.models.size() == 4);
    CHECK(route.models[0].name == "gpt-4o-mini");
    CHECK(route.models[0].upstream_model == "gpt-4o-mini");
    CHECK(route.models[0].accept.empty());  // the default: the upstream model and its snapshots
    CHECK(route.models[1].name == "fast");
    CHECK(route.models[1].upstream_model == "gpt-4o-mini");
    CHECK(route.models[1].accept == Lines{"gpt-4o-mini", "gpt-4o-mini-20*"});
    CHECK(route.models[2].name == "plain");
    CHECK(route.models[2].upstream_model == "plain");
    CHECK(route.models[2].accept.empty());
    CHECK(route.models[3].upstream_model == "real");
    CHECK(route.models[3].accept.empty());  // the default rule, over upstream_model
    CHECK_FALSE(route.wildcard);
}

TEST_CASE("\"*\" marks the wildcard route and is not a model") {
    const mc::Route route = load_route("name: r, upstream: 'http://h', models: [a, '*', b]");
    CHECK(route.wildcard);
    REQUIRE(route.models.size() == 2);
    CHECK(route.models[0].name == "a");
    CHECK(route.models[1].name == "b");
}

TEST_CASE("bad model entries") {
    auto [models, expected] = GENERATE(table<std::string, std::string>({
        {"[{name: '*'}]", "routes[0].models[0].name: \"*\" is allowed only as a plain list entry: - \"*\""},
        {"['gpt-*']",
         "routes[0].models[0]: model names match exactly; only \"*\" alone, as a plain list entry, serves every model"},
        {"[{name: a, upstream_model: 'b*'}]",
         "routes[0].models[0].upstream_model: model names match exactly; only \"*\" alone, as a plain list entry, "
         "serves every model"},
        {"['']", "routes[0].models[0]: must not be empty"},
        {"[{upstream_model: x}]", "routes[0].models[0].name: is required"},
        {"[{name: ''}]", "routes[0].models[0].name: must not be empty"},
        {"[{name: a, accept: []}]",
         "routes[0].models[0].accept: must list at least one identity; without it every answer is refused"},
        {"[{name: a, accept: [x, '']}]", "routes[0].models[0].accept[1]: must not be empty"},
        {"[\"a\\tb\"]", "routes[0].models[0]: must not contain control characters"},
        {"[a, b, a]", "routes[0].models[2]: model a is listed twice in this route (first at routes[0].models[0])"},
        {"[a, {name: a}]",
         "routes[0].models[1].name: model a is listed twice in this route (first at routes[0].models[0])"},
        {"['*', '*']", "routes[0].models[1]: model * is listed twice in this route (first at routes[0].models[0])"},
    }));
    CAPTURE(models);
    CHECK(problem_lines(one_route("name: r, upstream: 'http://h', models: " + models)) == Lines{expected});
}

TEST_CASE("a model name listed by several routes loads: those routes are its deployments") {
    const mc::LoadResult result = mc::load_config(R"(routes:
  - {name: openai, upstream: 'https://api.openai.com/v1', models: [gpt-4o, o3]}
  - {name: azure, upstream: 'https://x.example/v1', models: [gpt-5, {name: o3, upstream_model: o3-2025}]}
)");
    CHECK(result.problems.empty());
    REQUIRE(result.config.has_value());
    CHECK(result.config->routes[1].models[1].upstream_model == "o3-2025");
    // Twice in one route is still refused, after a listing in another route.
    CHECK(problem_lines(R"(routes:
  - {name: a, upstream: 'http://h', models: [m]}
  - {name: b, upstream: 'http://h', models: [m, n, m]}
)") == Lines{"routes[1].models[2]: model m is listed twice in this route (first at routes[1].models[0])"});
}

TEST_CASE("at most one route lists \"*\"") {
    CHECK(problem_lines(R"(routes:
  - {name: one, upstream: 'http://a', models: ['*']}
  - {name: two, upstream: 'http://b', models: [x, '*']}
)") == Lines{"routes[1].models[1]: only one route may list \"*\"; route one already does (routes[0].models[0])"});
}

TEST_CASE("api_key_prefix defaults by header, and the header is stored lower-case") {
    auto [keys, header, prefix] = GENERATE(table<std::string, std::string, std::string>({
        {"", "authorization", "Bearer "},
        {"api_key_header: Authorization", "authorization", "Bearer "},
        {"api_key_header: x-api-key", "x-api-key", ""},
        {"api_key_header: Api-Key", "api-key", ""},
        {"api_key_header: x-api-key, api_key_prefix: 'Token '", "x-api-key", "Token "},
        {"api_key_prefix: ''", "authorization", ""},
        {"api_key_prefix: 'Basic '", "authorization", "Basic "},
    }));
    CAPTURE(keys);
    const std::string body = "name: r, upstream: 'http://h', models: [m], api_key_env: K" +
                             (keys.empty() ? std::string() : ", " + keys);
    const mc::Route route = load_route(body);
    CHECK(route.api_key_header == header);
    CHECK(route.api_key_prefix == prefix);
}

TEST_CASE("key settings that are refused") {
    auto [keys, expected] = GENERATE(table<std::string, std::string>({
        {"api_key_env: sk-proj-abcdef0123456789",
         "routes[0].api_key_env: must be the name of an environment variable, not its value"},
        {"api_key_env: 1KEY", "routes[0].api_key_env: must be the name of an environment variable, not its value"},
        {"api_key_header: 'x api key'", "routes[0].api_key_header: must be a header name (an HTTP token)"},
        {"api_key_header: ''", "routes[0].api_key_header: must be a header name (an HTTP token)"},
        {"api_key_header: Host", "routes[0].api_key_header: is set by the proxy to the upstream's host"},
        {"api_key_header: Proxy-Authorization",
         "routes[0].api_key_header: is a hop-by-hop header and is never forwarded"},
        {"api_key_prefix: \"Bearer\\r\\n\"", "routes[0].api_key_prefix: must not contain control characters"},
        {"api_key_required: true", "routes[0].api_key_required: is true but the route has no api_key_env"},
    }));
    CAPTURE(keys);
    const std::vector<std::string> lines =
        problem_lines(one_route("name: r, upstream: 'http://h', models: [m], " + keys));
    CHECK(lines == Lines{expected});
    for (const std::string& line : lines) {
        CHECK(line.find("abcdef0123456789") == std::string::npos);  // a pasted key is never echoed
    }
}

TEST_CASE("an empty api_key_env is the same as none") {
    const mc::Route route = load_route("name: r, upstream: 'http://h', models: [m], api_key_env: ''");
    CHECK(route.api_key_env.empty());
}

TEST_CASE("static headers: names, values and the refused ones") {
    auto [headers, expected] = GENERATE(table<std::string, std::string>({
        {"{Connection: close}", "routes[0].headers.Connection: is a hop-by-hop header and is never forwarded"},
        {"{keep-alive: x}", "routes[0].headers.keep-alive: is a hop-by-hop header and is never forwarded"},
        {"{Transfer-Encoding: chunked}",
         "routes[0].headers.Transfer-Encoding: is a hop-by-hop header and is never forwarded"},
        {"{TE: trailers}", "routes[0].headers.TE: is a hop-by-hop header and is never forwarded"},
        {"{Trailer: x}", "routes[0].headers.Trailer: is a hop-by-hop header and is never forwarded"},
        {"{Upgrade: h2c}", "routes[0].headers.Upgrade: is a hop-by-hop header and is never forwarded"},
        {"{Proxy-Authorization: x}",
         "routes[0].headers.Proxy-Authorization: is a hop-by-hop header and is never forwarded"},
        {"{Host: evil.example}", "routes[0].headers.Host: is set by the proxy to the upstream's host"},
        {"{Content-Length: '5'}", "routes[0].headers.Content-Length: is set by the proxy from the body it sends"},
        {"{Expect: 100-continue}", "routes[0].headers.Expect: is answered by the proxy and never forwarded"},
        {"{'x a': b}", "routes[0].headers.\"x a\": is not a valid header name (an HTTP token)"},
        {"{'x-a': \"b\\nInjected: 1\"}", "routes[0].headers.x-a: must not contain control characters"},
        {"{x-a: b, X-A: c}", "routes[0].headers.X-A: duplicate header (names are case-insensitive)"},
        {"{Authorization: x}",
         "routes[0].headers.Authorization: is the route's api_key_header, which carries the key from api_key_env"},
    }));
    CAPTURE(headers);
    CHECK(problem_lines(one_route("name: r, upstream: 'http://h', models: [m], api_key_env: K, headers: " +
                                  headers)) == Lines{expected});
}

TEST_CASE("the key header may be set statically when the route has no key") {
    const mc::Route route =
        load_route("name: r, upstream: 'http://h', models: [m], headers: {Authorization: 'Bearer local'}");
    REQUIRE(route.headers.size() == 1);
    CHECK(route.headers[0].first == "Authorization");
}

TEST_CASE("query parameters keep file order and refuse an empty name") {
    const mc::Route route =
        load_route("name: r, upstream: 'http://h', models: [m], query: {api-version: 2024-10-21, z: '', a: '1'}");
    using Pairs = std::vector<std::pair<std::string, std::string>>;
    CHECK(route.query == Pairs{{"api-version", "2024-10-21"}, {"z", ""}, {"a", "1"}});
    CHECK(problem_lines(one_route("name: r, upstream: 'http://h', models: [m], query: {'': x}")) ==
          Lines{"routes[0].query.\"\": a query parameter name must not be empty"});
}

TEST_CASE("tls: files only, cert and key together, https only") {
    auto [upstream, tls, expected] = GENERATE(table<std::string, std::string, Lines>({
        {"https://h", "{ca_file: /ca.pem}", Lines{}},
        {"https://h", "{ca_file: '', cert_file: '', key_file: ''}", Lines{}},
        {"https://h", "{cert_file: /c.pem, key_file: /k.pem}", Lines{}},
        {"https://h", "{cert_file: /c.pem}", Lines{"routes[0].tls.key_file: is required when cert_file is set"}},
        {"https://h", "{key_file: /k.pem}", Lines{"routes[0].tls.cert_file: is required when key_file is set"}},
        {"http://h", "{ca_file: /ca.pem}",
         Lines{"routes[0].tls.ca_file: applies only to https:// upstreams; http://h is plain http"}},
        {"http://h", "{ca_file: ''}", Lines{}},
    }));
    CAPTURE(upstream, tls);
    CHECK(problem_lines(one_route("name: r, models: [m], upstream: '" + upstream + "', tls: " + tls)) == expected);
}

TEST_CASE("a route's retry override merges over the catalog") {
    const mc::LoadResult result = mc::load_config(R"(
retry: {max_attempts: 5, base_delay_ms: 100, jitter: full, throttled_max_attempts: 30}
routes:
  - name: tuned
    upstream: https://a.example/v1
    models: [a]
    retry: {max_attempts: 2, max_delay_ms: 800, jitter: none}
  - name: plain
    upstream: https://b.example/v1
    models: [b]
)");
    REQUIRE(result.problems.empty());
    const auto& catalog = result.config->retry;
    const auto& tuned = result.config->routes[0].retry;
    const auto& plain = result.config->routes[1].retry;
    CHECK(catalog.max_attempts == 5);
    CHECK(catalog.max_delay_ms == 20000);
    CHECK(tuned.max_attempts == 2);
    CHECK(tuned.base_delay_ms == 100);
    CHECK(tuned.max_delay_ms == 800);
    CHECK(tuned.max_total_delay_ms == 60000);
    CHECK(tuned.throttled_max_attempts == 30);
    CHECK(tuned.jitter == modelproxy::policy::Jitter::none);
    CHECK(tuned.min_attempt_ms == 1000);
    CHECK(plain.max_attempts == 5);
    CHECK(plain.base_delay_ms == 100);
    CHECK(plain.throttled_max_attempts == 30);
    CHECK(plain.jitter == modelproxy::policy::Jitter::full);
}

TEST_CASE("base_delay_ms <= max_delay_ms, in the catalog and in each route's merged retry") {
    auto [yaml, expected] = GENERATE(table<std::string, Lines>({
        {"retry: {base_delay_ms: 30000}\n", Lines{"retry.base_delay_ms: must be <= max_delay_ms (20000), got 30000"}},
        {"retry: {max_delay_ms: 100}\n", Lines{"retry.max_delay_ms: must be >= base_delay_ms (500), got 100"}},
        {"retry: {base_delay_ms: 700, max_delay_ms: 700}\n", Lines{}},
        {"retry: {base_delay_ms: 701, max_delay_ms: 700}\n",
         Lines{"retry.base_delay_ms: must be <= max_delay_ms (700), got 701"}},
        // A refused value is not judged again.
        {"retry: {base_delay_ms: 0, max_delay_ms: 9999999}\n",
         Lines{"retry.base_delay_ms: must be 1..3600000 (1 ms..1 h), got 0",
               "retry.max_delay_ms: must be 1..3600000 (1 ms..1 h), got 9999999"}},
    }));
    CAPTURE(yaml);
    CHECK(problem_lines(yaml + one_route("name: r, upstream: 'http://h', models: [m]")) == expected);
}

TEST_CASE("base_delay_ms <= max_delay_ms with a route override") {
    CHECK(problem_lines(one_route("name: r, upstream: 'http://h', models: [m], retry: {base_delay_ms: 30000}")) ==
          Lines{"routes[0].retry.base_delay_ms: must be <= max_delay_ms (20000), got 30000"});
    CHECK(problem_lines("retry: {max_delay_ms: 1000}\n" +
                        one_route("name: r, upstream: 'http://h', models: [m], retry: {base_delay_ms: 2000}")) ==
          Lines{"routes[0].retry.base_delay_ms: must be <= max_delay_ms (1000), got 2000"});
    CHECK(problem_lines(one_route("name: r, upstream: 'http://h', models: [m], retry: {max_delay_ms: 499}")) ==
          Lines{"routes[0].retry.max_delay_ms: must be >= base_delay_ms (500), got 499"});
    // The catalog's own violation is reported once, at the catalog.
    CHECK(problem_lines("retry: {base_delay_ms: 30000}\n" +
                        one_route("name: r, upstream: 'http://h', models: [m], retry: {max_attempts: 2}")) ==
          Lines{"retry.base_delay_ms: must be <= max_delay_ms (20000), got 30000"});
}

TEST_CASE("min_attempt_ms < timeout_ms for each route, with its merged retry") {
    auto [yaml, expected] = GENERATE(table<std::string, Lines>({
        {"routes: [{name: r, upstream: 'http://h', models: [m], timeout_ms: 1000}]\n",
         Lines{"routes[0].timeout_ms: min_attempt_ms (1000) must be less than timeout_ms (1000)"}},
        {"routes: [{name: r, upstream: 'http://h', models: [m], timeout_ms: 1001}]\n", Lines{}},
        {"routes: [{name: r, upstream: 'http://h', models: [m], timeout_ms: 3000, retry: {min_attempt_ms: 5000}}]\n",
         Lines{"routes[0].retry.min_attempt_ms: min_attempt_ms (5000) must be less than timeout_ms (3000)"}},
        {"retry: {min_attempt_ms: 400000}\n"
         "routes: [{name: a, upstream: 'http://h', models: [m]}, {name: b, upstream: 'http://h', models: [n], "
         "timeout_ms: 500000}]\n",
         Lines{"routes[0].timeout_ms: min_attempt_ms (400000) must be less than timeout_ms (300000)"}},
        {"retry: {min_attempt_ms: 400000}\n"
         "routes: [{name: a, upstream: 'http://h', models: [m], retry: {min_attempt_ms: 10}}]\n",
         Lines{}},
        // A refused timeout is not judged again.
        {"routes: [{name: r, upstream: 'http://h', models: [m], timeout_ms: 5}]\n",
         Lines{"routes[0].timeout_ms: must be 10..86400000 (10 ms..24 h), got 5"}},
    }));
    CAPTURE(yaml);
    CHECK(problem_lines(yaml) == expected);
}
