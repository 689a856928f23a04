// Deployments, fallbacks and the first-byte and first-token timers through
// the real binary against two or three fake providers (docs/behaviour.md
// section 13): where each attempt goes, what the client and the records see,
// and each candidate's own payload. Every route uses tiny configured delays.
#include "support/fake_provider.hpp"

#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;
constexpr std::string_view fast_retry = "{base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}";

// A route `name` to `fake` serving `models` (a YAML flow list or list of
// maps), with the fast retry and `extra` route keys (each "    key: value\n").
std::string route(std::string_view name, const FakeProvider& fake, std::string_view models,
                  std::string_view extra = "") {
    std::string yaml = "  - name: ";
    yaml += name;
    yaml += "\n    upstream: " + fake.base_url("/v1") + "\n    models: ";
    yaml += models;
    yaml += "\n    retry: ";
    yaml += fast_retry;
    yaml += "\n    breaker: {enabled: false}\n";
    yaml += extra;
    return yaml;
}

std::string chat(std::string_view model, bool stream = false) {
    std::string body = R"({"model":")";
    body += model;
    body += R"(","messages":[{"role":"user","content":"hi"}])";
    if (stream) body += R"(,"stream":true)";
    body += "}";
    return body;
}

std::string chat_answer(std::string_view model) {
    return std::string(R"({"id":"chatcmpl-1","object":"chat.completion","model":")") + std::string(model) +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]})";
}

const std::string server_error = R"({"error":{"message":"overloaded","type":"server_error","code":null}})";
const std::string too_long =
    R"({"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}})";

std::string event(std::string_view model, std::string_view delta) {
    return std::string(R"(data: {"id":"c1","object":"chat.completion.chunk","model":")") + std::string(model) +
           R"(","choices":[{"index":0,"delta":)" + std::string(delta) + R"(,"finish_reason":null}]})" + "\n\n";
}
std::string role(std::string_view model) { return event(model, R"({"role":"assistant","content":""})"); }
std::string text(std::string_view model, std::string_view words) {
    return event(model, std::string(R"({"content":")") + std::string(words) + "\"}");
}
const std::string done = "data: [DONE]\n\n";

std::vector<JsonRecord> attempts_of(const ProxyProcess& proxy, std::size_t n) {
    proxy.wait_for_records("attempt", n, bound);
    return attempt_records(proxy);
}

}  // namespace

TEST_CASE("a 503 on the primary falls over to the fallback after attempts_per_candidate attempts",
          "[fallback]") {
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    backup.set_default(Script::json(200, chat_answer("gpt-4o-mini")));
    const std::string yaml = "routes:\n" + route("east", primary, "[gpt-4o]") +
                             route("west", backup, "[gpt-4o-mini]") +
                             "models:\n  - name: gpt-4o\n    attempts_per_candidate: 2\n    fallbacks: [gpt-4o-mini]\n";
    auto proxy = start_proxy(yaml);

    const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.body == chat_answer("gpt-4o-mini"));
    CHECK(r.header("x-modelproxy-attempts") == "3");
    CHECK(r.header("x-modelproxy-model") == "gpt-4o-mini");
    CHECK(r.header("x-modelproxy-route") == "west");
    CHECK(primary.request_count() == 2);
    REQUIRE(backup.request_count() == 1);
    // The fallback's own payload: its model in the body.
    CHECK(backup.requests()[0].body == chat("gpt-4o-mini"));
    CHECK(primary.requests()[0].body == chat("gpt-4o"));

    const auto attempts = attempts_of(*proxy, 3);
    REQUIRE(attempts.size() == 3);
    CHECK(attempts[0].str("decision") == "retry");
    CHECK(attempts[0].integer("candidate") == 0);
    CHECK(attempts[0].str("route") == "east");
    CHECK(attempts[1].str("decision") == "fallback");
    CHECK(attempts[1].integer("candidate") == 0);
    CHECK(attempts[1].integer("delay_ms") == 0);
    CHECK(attempts[2].str("decision") == "ok");
    CHECK(attempts[2].integer("candidate") == 1);
    CHECK(attempts[2].str("route") == "west");
    CHECK(attempts[2].str("model") == "gpt-4o-mini");
    // Each candidate's digest is over its own payload.
    CHECK(attempts[0].str("digest") == attempts[1].str("digest"));
    CHECK(attempts[1].str("digest") != attempts[2].str("digest"));
    const auto turn = turn_record(*proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->str("route") == "west");
    CHECK(turn->str("model") == "gpt-4o-mini");
    CHECK(turn->str("fallback_from") == "gpt-4o");
}

TEST_CASE("a 429 falls over at once and cools the candidate down for new turns", "[fallback]") {
    FakeProvider primary, backup;
    primary.push(Script::json(429, R"({"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}})",
                              {{"Retry-After", "30"}}));
    primary.set_default(Script::json(200, chat_answer("gpt-4o")));
    backup.set_default(Script::json(200, chat_answer("gpt-4o-mini")));
    const std::string yaml = "routes:\n" + route("east", primary, "[gpt-4o]") +
                             route("west", backup, "[gpt-4o-mini]") +
                             "models:\n  - name: gpt-4o\n    fallbacks: [gpt-4o-mini]\n";
    auto proxy = start_proxy(yaml);

    const Response first = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    REQUIRE(first.ok());
    CHECK(first.status == 200);
    CHECK(first.header("x-modelproxy-route") == "west");
    CHECK(primary.request_count() == 1);
    // The next turn skips the cooling primary (its Retry-After is 30 s).
    const Response second = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
    REQUIRE(second.ok());
    CHECK(second.header("x-modelproxy-route") == "west");
    CHECK(second.header("x-modelproxy-attempts") == "1");
    CHECK(primary.request_count() == 1);
    CHECK(backup.request_count() == 2);
}

TEST_CASE("fallback_on: a code: entry falls over on a terminal 400, and a class not listed does not",
          "[fallback]") {
    FakeProvider primary, backup;
    primary.set_default(Script::json(400, too_long));
    backup.set_default(Script::json(200, chat_answer("big")));
    SECTION("listed: falls over at once") {
        const std::string yaml = "routes:\n" + route("small", primary, "[gpt-4o]") + route("large", backup, "[big]") +
                                 "models:\n  - name: gpt-4o\n    fallbacks: [big]\n"
                                 "    fallback_on: [server, \"code:context_length_exceeded\"]\n";
        auto proxy = start_proxy(yaml);
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.header("x-modelproxy-model") == "big");
        CHECK(primary.request_count() == 1);
        CHECK(backup.request_count() == 1);
    }
    SECTION("not listed: the 400 is passed on") {
        const std::string yaml = "routes:\n" + route("small", primary, "[gpt-4o]") + route("large", backup, "[big]") +
                                 "models:\n  - name: gpt-4o\n    fallbacks: [big]\n";
        auto proxy = start_proxy(yaml);
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
        REQUIRE(r.ok());
        CHECK(r.status == 400);
        CHECK(r.body == too_long);
        CHECK(r.header("x-modelproxy-model") == "gpt-4o");
        CHECK(r.header("x-modelproxy-route") == "small");
        CHECK(backup.request_count() == 0);
    }
}

TEST_CASE("x-modelproxy-fallback: off keeps the turn on the requested model", "[fallback]") {
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    backup.set_default(Script::json(200, chat_answer("gpt-4o-mini")));
    const std::string yaml = "routes:\n" +
                             route("east", primary, "[gpt-4o]") + route("west", backup, "[gpt-4o-mini]") +
                             "retry: {max_attempts: 3}\n"
                             "models:\n  - name: gpt-4o\n    fallbacks: [gpt-4o-mini]\n";
    auto proxy = start_proxy(yaml);
    const Response r =
        proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"), {{"x-modelproxy-fallback", "off"}});
    REQUIRE(r.ok());
    CHECK(r.status == 503);
    CHECK(backup.request_count() == 0);
    CHECK(primary.request_count() == 3);
    // The header is the proxy's: never forwarded.
    for (const auto& request : primary.requests()) CHECK_FALSE(request.header("x-modelproxy-fallback"));
}

TEST_CASE("one attempt counter for the whole turn: more candidates never mean more attempts", "[fallback]") {
    FakeProvider a, b, c;
    for (FakeProvider* f : {&a, &b, &c}) f->set_default(Script::json(503, server_error));
    const std::string yaml = "retry: {max_attempts: 2}\nroutes:\n" + route("a", a, "[m]") + route("b", b, "[m]") +
                             route("c", c, "[n]") +
                             "models:\n  - name: m\n    attempts_per_candidate: 1\n    fallbacks: [n]\n";
    auto proxy = start_proxy(yaml);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat("m"));
    REQUIRE(r.ok());
    CHECK(r.status == 503);
    CHECK(r.header("x-modelproxy-attempts") == "2");
    CHECK(r.header("x-modelproxy-bound") == "max_attempts");
    CHECK(r.header("x-modelproxy-route") == "b");
    CHECK(a.request_count() == 1);
    CHECK(b.request_count() == 1);
    CHECK(c.request_count() == 0);
}

TEST_CASE("deployments: a model on two routes, ordered, goes to the first, weighted splits by weight",
          "[fallback]") {
    FakeProvider one, two;
    one.set_default(Script::json(200, chat_answer("m")));
    two.set_default(Script::json(200, chat_answer("m")));
    SECTION("ordered") {
        auto proxy = start_proxy("routes:\n" + route("one", one, "[m]") + route("two", two, "[m]"));
        for (int i = 0; i < 4; ++i) {
            const Response r = proxy->client().post_json("/v1/chat/completions", chat("m"));
            REQUIRE(r.ok());
            CHECK(r.header("x-modelproxy-route") == "one");
        }
        CHECK(two.request_count() == 0);
    }
    SECTION("weighted 3:1") {
        auto proxy = start_proxy("routes:\n" + route("one", one, "[m]", "    weight: 3\n") + route("two", two, "[m]") +
                                 "models:\n  - name: m\n    balance: weighted\n");
        for (int i = 0; i < 8; ++i) REQUIRE(proxy->client().post_json("/v1/chat/completions", chat("m")).ok());
        CHECK(one.request_count() == 6);
        CHECK(two.request_count() == 2);
    }
}

TEST_CASE("first_byte_timeout_ms: a silent primary falls over at once, its connection closed", "[fallback][timers]") {
    FakeProvider primary, backup;
    primary.set_default(Script().hang());
    backup.set_default(Script::sse({role("gpt-4o-mini"), text("gpt-4o-mini", "hi"), done}));
    const std::string yaml = "routes:\n" + route("east", primary, "[gpt-4o]", "    first_byte_timeout_ms: 100\n") +
                             route("west", backup, "[gpt-4o-mini]") +
                             "models:\n  - name: gpt-4o\n    fallbacks: [gpt-4o-mini]\n";
    auto proxy = start_proxy(yaml);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o", true));
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-route") == "west");
    CHECK(r.body.find("hi") != std::string::npos);
    CHECK(primary.request_count() == 1);
    CHECK(primary.wait_for_peer_close(0, bound));
    const auto attempts = attempts_of(*proxy, 2);
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].str("class") == "timeout");
    CHECK(attempts[0].str("timeout_source") == "first-byte");
    CHECK(attempts[0].str("decision") == "fallback");
}

TEST_CASE("first_token_timeout_ms: keep-alives and a role-only delta do not stop it, the last candidate is never cut",
          "[fallback][timers]") {
    FakeProvider primary, backup;
    SseOptions slow;
    slow.delay = 60ms;
    // Head at once, then only comments and a role delta for 360 ms, then text.
    primary.set_default(Script::sse({": keep-alive\n\n", role("gpt-4o"), ": keep-alive\n\n", ": keep-alive\n\n",
                                     ": keep-alive\n\n", ": keep-alive\n\n", text("gpt-4o", "late"), done},
                                    slow));
    backup.set_default(Script::sse({role("gpt-4o-mini"), text("gpt-4o-mini", "quick"), done}));
    SECTION("with a later candidate: falls over") {
        const std::string yaml = "routes:\n" +
                                 route("east", primary, "[gpt-4o]", "    first_token_timeout_ms: 150\n") +
                                 route("west", backup, "[gpt-4o-mini]") +
                                 "models:\n  - name: gpt-4o\n    fallbacks: [gpt-4o-mini]\n";
        auto proxy = start_proxy(yaml);
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o", true));
        REQUIRE(r.ok());
        CHECK(r.body.find("quick") != std::string::npos);
        CHECK(r.body.find("late") == std::string::npos);
        const auto attempts = attempts_of(*proxy, 2);
        REQUIRE(attempts.size() == 2);
        CHECK(attempts[0].str("timeout_source") == "first-token");
        CHECK(attempts[0].str("decision") == "fallback");
    }
    SECTION("the last usable candidate: not cut") {
        const std::string yaml = "routes:\n" +
                                 route("east", primary, "[gpt-4o]", "    first_token_timeout_ms: 150\n");
        auto proxy = start_proxy(yaml);
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o", true));
        REQUIRE(r.ok());
        CHECK(r.body.find("late") != std::string::npos);
        CHECK(primary.request_count() == 1);
    }
}

TEST_CASE("a stream that published answer text never falls over", "[fallback]") {
    FakeProvider primary, backup;
    SseOptions cut;
    cut.end = SseEnd::reset;
    primary.set_default(Script::sse({role("gpt-4o"), text("gpt-4o", "half")}, cut));
    backup.set_default(Script::sse({role("gpt-4o-mini"), text("gpt-4o-mini", "other"), done}));
    const std::string yaml = "routes:\n" + route("east", primary, "[gpt-4o]") +
                             route("west", backup, "[gpt-4o-mini]") +
                             "models:\n  - name: gpt-4o\n    fallbacks: [gpt-4o-mini]\n";
    auto proxy = start_proxy(yaml);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o", true));
    REQUIRE(r.ok());
    CHECK(r.body.find("half") != std::string::npos);
    CHECK(r.body.find("other") == std::string::npos);
    CHECK(r.body.find("[DONE]") == std::string::npos);
    CHECK(backup.request_count() == 0);
}

TEST_CASE("each candidate's answer is checked against its own accept list", "[fallback]") {
    FakeProvider primary, backup;
    primary.set_default(Script::json(503, server_error));
    const std::string yaml = "routes:\n" + route("east", primary, "[gpt-4o]") +
                             route("west", backup, "[{name: gpt-4o-mini, accept: [gpt-4o-mini]}]") +
                             "models:\n  - name: gpt-4o\n    attempts_per_candidate: 1\n    fallbacks: [gpt-4o-mini]\n";
    auto proxy = start_proxy(yaml);
    SECTION("the fallback answers as itself: passed on") {
        backup.set_default(Script::json(200, chat_answer("gpt-4o-mini")));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
        REQUIRE(r.ok());
        CHECK(r.status == 200);
        CHECK(r.header("x-modelproxy-model") == "gpt-4o-mini");
    }
    SECTION("the fallback answers with the requested model's name: refused") {
        backup.set_default(Script::json(200, chat_answer("gpt-4o")));
        const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o"));
        REQUIRE(r.ok());
        CHECK(r.status == 502);
        CHECK(r.body.find("model_identity_mismatch") != std::string::npos);
    }
}

TEST_CASE("a head the hold limit sent names the first deployment, and a comment names the candidate that answers",
          "[fallback][timers]") {
    FakeProvider primary, backup;
    primary.set_default(Script().hang());
    backup.set_default(Script::sse({role("gpt-4o-mini"), text("gpt-4o-mini", "there"), done}));
    const std::string yaml = "routes:\n" +
                             route("east", primary, "[gpt-4o]",
                                   "    first_byte_timeout_ms: 400\n    stream_head_hold_ms: 50\n") +
                             route("west", backup, "[gpt-4o-mini]") +
                             "models:\n  - name: gpt-4o\n    fallbacks: [gpt-4o-mini]\n";
    auto proxy = start_proxy(yaml);
    const Response r = proxy->client().post_json("/v1/chat/completions", chat("gpt-4o", true));
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    CHECK(r.header("x-modelproxy-model") == "gpt-4o");
    CHECK(r.header("x-modelproxy-route") == "east");
    const auto comment = r.body.find(": x-modelproxy-model gpt-4o-mini west\n\n");
    const auto first_event = r.body.find("data:");
    REQUIRE(comment != std::string::npos);
    REQUIRE(first_event != std::string::npos);
    CHECK(comment < first_event);
    CHECK(r.body.find("there") != std::string::npos);
}
