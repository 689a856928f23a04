// Replicas sharing a route's quota through a real redis-server
// (docs/behaviour.md section 15), each a real modelproxy process: the quota
// held across them, tokens settled by the answers' usage, a replica's own
// window without a fleet, Redis stopped mid-run changing no turn's outcome,
// and nothing secret in Redis.
#include "support/fake_provider.hpp"

#include "support/http_client.hpp"
#include "support/proxy_process.hpp"
#include "support/redis_server.hpp"
#include "support/run_task.hpp"
#include "transport/redis.hpp"
#include "transport/redis_url.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;
namespace transport = modelproxy::transport;

namespace {

constexpr auto bound = 8s;

const std::string chat = R"({"model":"gpt-4o","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]})";
std::string answer(int total_tokens) {
    return R"({"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":)"
           R"({"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":)" +
           std::to_string(total_tokens - 2) + R"(,"completion_tokens":2,"total_tokens":)" +
           std::to_string(total_tokens) + "}}";
}

// One route "openai" with `quota`, a short queue time, and the fleet when `redis` is given.
std::string config(const FakeProvider& fake, std::string_view quota, const RedisServer* redis,
                   std::string_view extra_route = "") {
    std::string yaml;
    if (redis) yaml += "fleet:\n  redis: " + redis->url() + "\n  timeout_ms: 200\n";
    yaml += "admission: {queue_timeout_ms: 300}\n";
    yaml += "routes:\n  - name: openai\n    upstream: " + fake.base_url("/v1") +
            "\n    models: [gpt-4o]\n    api_key_env: FLEET_TEST_KEY\n    quota: ";
    yaml += quota;
    yaml += "\n";
    yaml += extra_route;
    return yaml;
}

const Environment key_env{{"FLEET_TEST_KEY", "sk-fleettest0123456789abcdefSECRET"}};

int send(ProxyProcess& proxy, const std::string& body = chat) {
    return proxy.client().post_json("/v1/chat/completions", body).status;
}

// Every key in the server and every value under it, as text.
std::string dump(const RedisServer& server, const std::string& password) {
    boost::asio::io_context io;
    transport::RedisClient client(
        io.get_executor(),
        transport::RedisOptions{.url = std::get<transport::RedisUrl>(transport::parse_redis_url(server.url())),
                                .password = password});
    auto call = [&](std::vector<std::string> args) { return run_task(io, client.call(std::move(args), 5000ms)); };
    std::string out;
    const transport::RedisResult keys = call({"KEYS", "*"});
    REQUIRE(keys.kind == transport::RedisResult::Kind::array);
    for (const auto& k : keys.elements) {
        out += k.text + "\n";
        const std::string type = call({"TYPE", k.text}).text;
        transport::RedisResult values;
        if (type == "hash") values = call({"HGETALL", k.text});
        if (type == "zset") values = call({"ZRANGE", k.text, "0", "-1", "WITHSCORES"});
        if (type == "string") values = call({"GET", k.text});
        if (type == "list") values = call({"LRANGE", k.text, "0", "-1"});
        if (type == "set") values = call({"SMEMBERS", k.text});
        out += values.text + "\n";
        for (const auto& v : values.elements) out += v.text + "\n";
    }
    return out;
}

bool wait_for_metric(ProxyProcess& proxy, const std::string& series, double value, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    do {
        if (metric_value(proxy.client().get("/metrics").body, series) == value) return true;
        std::this_thread::sleep_for(50ms);
    } while (std::chrono::steady_clock::now() < until);
    return false;
}

}  // namespace

TEST_CASE("without a fleet, each replica keeps its route's quota itself: past it, 429 quota_timeout, nothing sent",
          "[fleet][quota]") {
    FakeProvider fake;
    fake.set_default(Script::json(200, answer(10)));
    auto proxy = start_proxy(config(fake, "{requests_per_minute: 3}", nullptr), key_env);
    for (int i = 0; i < 3; ++i) CHECK(send(*proxy) == 200);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat);
    CHECK(r.status == 429);
    CHECK(r.body.find(R"("code":"quota_timeout")") != std::string::npos);
    CHECK(r.header("x-modelproxy-decision") == "rejected");
    // The oldest reservation leaves the window a minute after it was made.
    REQUIRE(r.header("retry-after"));
    CHECK(std::stoi(*r.header("retry-after")) >= 58);
    CHECK(fake.request_count() == 3);
}

TEST_CASE("three replicas share one quota through Redis: the provider never sees more than it", "[fleet][quota]") {
    RedisServer redis;
    FakeProvider fake;
    fake.set_default(Script::json(200, answer(10)));
    const std::string yaml = config(fake, "{requests_per_minute: 5}", &redis);
    auto a = start_proxy(yaml, key_env);
    auto b = start_proxy(yaml, key_env);
    auto c = start_proxy(yaml, key_env);
    CHECK(send(*a) == 200);
    CHECK(send(*b) == 200);
    CHECK(send(*c) == 200);
    CHECK(send(*a) == 200);
    CHECK(send(*b) == 200);
    // Each replica alone would still have room; together they have none.
    CHECK(send(*c) == 429);
    CHECK(send(*a) == 429);
    CHECK(fake.request_count() == 5);
    CHECK(metric_value(c->client().get("/metrics").body, "modelproxy_fleet_up") == 1);
}

TEST_CASE("tokens are reserved by the estimate and settled by the answer's usage across replicas", "[fleet][quota]") {
    RedisServer redis;
    FakeProvider fake;
    fake.set_default(Script::json(200, answer(10)));
    // Each turn asks for about 1000 tokens (its max_tokens): two fit in 2500.
    const std::string yaml = config(fake, "{tokens_per_minute: 2500}", &redis);
    auto a = start_proxy(yaml, key_env);
    auto b = start_proxy(yaml, key_env);
    CHECK(send(*a) == 200);
    CHECK(send(*b) == 200);
    // Settled at their usage (10 each): room again, once the settlements landed.
    bool third = false;
    for (int i = 0; i < 20 && !third; ++i) {
        third = send(*a) == 200;
        if (!third) std::this_thread::sleep_for(100ms);
    }
    CHECK(third);
    // A failed attempt gives its tokens back.
    fake.push(Script::json(400, R"({"error":{"message":"bad","type":"invalid_request_error","code":null}})"), 3);
    for (int i = 0; i < 3; ++i) CHECK(send(*b) == 400);
    fake.set_default(Script::json(200, answer(10)));
    std::this_thread::sleep_for(300ms);  // the settlements are sent after the answers (a lower bound)
    CHECK(send(*a) == 200);
}

TEST_CASE("Redis stopped mid-run changes no turn's outcome, and sharing resumes when it is back", "[fleet][quota]") {
    RedisServer redis;
    FakeProvider fake;
    fake.set_default(Script::json(200, answer(10)));
    auto proxy = start_proxy(config(fake, "{requests_per_minute: 1000}", &redis), key_env);
    for (int i = 0; i < 3; ++i) CHECK(send(*proxy) == 200);
    redis.stop();
    // Every turn still answered: the replica falls back to its own window.
    for (int i = 0; i < 10; ++i) CHECK(send(*proxy) == 200);
    CHECK(wait_for_metric(*proxy, "modelproxy_fleet_up", 0, bound));
    CHECK(proxy->wait_for_stderr_line([](const std::string& l) { return l.find("fleet: Redis at") != std::string::npos &&
                                                                        l.find("own state") != std::string::npos; },
                                      bound));
    redis.start();
    CHECK(wait_for_metric(*proxy, "modelproxy_fleet_up", 1, 15s));
    CHECK(proxy->wait_for_stderr_line(
        [](const std::string& l) { return l.find("sharing again") != std::string::npos; }, bound));
    for (int i = 0; i < 3; ++i) CHECK(send(*proxy) == 200);
    CHECK(fake.request_count() == 16);
}

TEST_CASE("nothing secret reaches Redis: no key, token, password or body", "[fleet][quota]") {
    RedisServer redis({.password = "redis-pass-SECRET-42"});
    FakeProvider fake;
    fake.set_default(Script::json(200, answer(10)));
    std::string yaml = config(fake, "{requests_per_minute: 100, tokens_per_minute: 100000}", &redis);
    yaml.insert(yaml.find("  timeout_ms: 200"), "  password_env: FLEET_REDIS_PASSWORD\n");
    Environment env = key_env;
    env["FLEET_REDIS_PASSWORD"] = "redis-pass-SECRET-42";
    auto proxy = start_proxy(yaml, env);
    const std::string body =
        R"({"model":"gpt-4o","messages":[{"role":"user","content":"the body text BODYMARK-7731"}]})";
    for (int i = 0; i < 3; ++i) {
        const Response r = proxy->client().post_json("/v1/chat/completions", body,
                                                     {{"Authorization", "Bearer client-token-SECRET-99"}});
        CHECK(r.status == 200);
    }
    std::this_thread::sleep_for(1500ms);  // a heartbeat or two (a lower bound)
    const std::string stored = dump(redis, "redis-pass-SECRET-42");
    CAPTURE(stored);
    CHECK(stored.find("quota:openai") != std::string::npos);  // the quota is there
    for (const char* secret : {"SECRET", "sk-fleettest", "BODYMARK", "client-token", "redis-pass"})
        CHECK(stored.find(secret) == std::string::npos);
}

namespace {

std::string mini_answer() {
    return R"({"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":)"
           R"({"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

// A primary "east" (gpt-4o, the given breaker) and its fallback "west"
// (gpt-4o-mini), sharing breakers through `redis`.
std::string two_routes(const RedisServer& redis, const FakeProvider& primary, const FakeProvider& backup,
                       std::string_view breaker) {
    std::string yaml = "fleet:\n  redis: " + redis.url() + "\n  timeout_ms: 200\nroutes:\n";
    yaml += "  - name: east\n    upstream: " + primary.base_url("/v1") +
            "\n    models: [gpt-4o]\n    retry: {max_attempts: 2, base_delay_ms: 5}\n    breaker: ";
    yaml += breaker;
    yaml += "\n  - name: west\n    upstream: " + backup.base_url("/v1") +
            "\n    models: [gpt-4o-mini]\n    breaker: {enabled: false}\n";
    yaml += "models:\n  - name: gpt-4o\n    attempts_per_candidate: 1\n    fallbacks: [gpt-4o-mini]\n";
    return yaml;
}

const std::string east_state = R"(modelproxy_breaker_state{route="east",model="gpt-4o"})";
const std::string server_error = R"({"error":{"message":"down","type":"server_error","code":null}})";

std::string route_of(ProxyProcess& proxy) {
    return proxy.client().post_json("/v1/chat/completions", chat).header("x-modelproxy-route").value_or("");
}

}  // namespace

TEST_CASE("a breaker one replica opens on the provider's 5xx keeps the other replicas' turns off that upstream",
          "[fleet][breaker]") {
    RedisServer redis;
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    backup.set_default(Script::json(200, mini_answer()));
    const std::string yaml = two_routes(redis, primary, backup, "{consecutive_failures: 2, open_ms: 20000, max_open_ms: 20000}");
    auto a = start_proxy(yaml, key_env);
    auto b = start_proxy(yaml, key_env);
    CHECK(route_of(*a) == "west");
    CHECK(route_of(*a) == "west");
    REQUIRE(primary.request_count() == 2);
    // B never failed itself: the fleet's state, read from Redis, holds it.
    REQUIRE(wait_for_metric(*b, east_state, 1, bound));
    for (int i = 0; i < 3; ++i) CHECK(route_of(*b) == "west");
    CHECK(primary.request_count() == 2);
}

TEST_CASE("a replica's network failures open its own breaker only, never the fleet's", "[fleet][breaker]") {
    RedisServer redis;
    FakeProvider primary, backup;
    primary.set_default(Script().reset());
    backup.set_default(Script::json(200, mini_answer()));
    const std::string yaml = two_routes(redis, primary, backup, "{consecutive_failures: 2, open_ms: 20000, max_open_ms: 20000}");
    auto a = start_proxy(yaml, key_env);
    auto b = start_proxy(yaml, key_env);
    CHECK(route_of(*a) == "west");
    CHECK(route_of(*a) == "west");
    REQUIRE(wait_for_metric(*a, east_state, 1, bound));  // A's own breaker
    const std::size_t before = primary.request_count();
    std::this_thread::sleep_for(500ms);  // five refreshes (a lower bound)
    CHECK(metric_value(b->client().get("/metrics").body, east_state) == 0);
    CHECK(route_of(*b) == "west");                   // the reset falls over...
    CHECK(primary.request_count() > before);         // ...after B tried the primary itself
}

TEST_CASE("half-open, the fleet sends one probe at a time across its replicas, and its success closes it everywhere",
          "[fleet][breaker]") {
    RedisServer redis;
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    backup.set_default(Script::json(200, mini_answer()));
    const std::string yaml =
        two_routes(redis, primary, backup, "{consecutive_failures: 2, open_ms: 300, max_open_ms: 300, probes: 1}");
    std::vector<std::unique_ptr<ProxyProcess>> replicas;
    for (int i = 0; i < 3; ++i) replicas.push_back(start_proxy(yaml, key_env));
    CHECK(route_of(*replicas[0]) == "west");
    CHECK(route_of(*replicas[0]) == "west");
    for (auto& r : replicas) REQUIRE(wait_for_metric(*r, east_state, 1, bound));
    // The primary recovers, slowly: a probe stays in flight for 1.5 s.
    primary.set_default(Script().sleep(1500ms).then(Script::json(200, answer(10))));
    std::this_thread::sleep_for(400ms);  // past the open time (a lower bound)
    const std::size_t opened = primary.request_count();
    // Turns on every replica while half-open: one probe reaches the primary.
    std::vector<std::future<std::string>> turns;
    for (int round = 0; round < 8; ++round)
        for (auto& r : replicas) {
            turns.push_back(std::async(std::launch::async, [&r] { return route_of(*r); }));
            std::this_thread::sleep_for(30ms);
        }
    for (auto& t : turns) t.get();
    CHECK(primary.request_count() == opened + 1);
    // Its success closed the fleet's breaker: every replica is back on the primary.
    primary.set_default(Script::json(200, answer(10)));
    for (auto& r : replicas) {
        // The replica that opened it has its own breaker too, half-open by
        // now: its next turn is that breaker's probe, and succeeds.
        bool east = false;
        const auto until = std::chrono::steady_clock::now() + bound;
        while (!east && std::chrono::steady_clock::now() < until) {
            east = route_of(*r) == "east";
            if (!east) std::this_thread::sleep_for(100ms);
        }
        CHECK(east);
    }
    CHECK(metric_value(replicas[1]->client().get("/metrics").body, east_state) == 0);
}
