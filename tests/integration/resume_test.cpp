// Continuing a cut stream (docs/behaviour.md section 16) through the real
// binary: a stream cut after answer text is re-requested and verified, and
// the client gets the uncut answer once, under the ids it first saw, or
// section 7's closing error event, never a spliced answer. Every route uses
// tiny configured delays.
#include "support/fake_provider.hpp"
#include "support/http_client.hpp"
#include "support/json_record.hpp"
#include "support/proxy_process.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace modelproxy::test;
using namespace std::chrono_literals;

namespace {

constexpr auto bound = 5s;

std::string route(std::string_view name, const FakeProvider& fake, std::string_view models,
                  std::string_view resume = "{enabled: true}", std::string_view dialect = "openai",
                  std::string_view extra = "") {
    std::string yaml = "  - name: " + std::string(name) + "\n    upstream: " + fake.base_url("/v1") +
                       "\n    dialect: " + std::string(dialect) + "\n    models: " + std::string(models) +
                       "\n    retry: {base_delay_ms: 5, max_delay_ms: 20, min_attempt_ms: 10}\n" +
                       "    breaker: {enabled: false}\n";
    if (!resume.empty()) yaml += "    resume: " + std::string(resume) + "\n";
    return yaml + std::string(extra);
}

std::string one_route(const FakeProvider& fake, std::string_view resume = "{enabled: true}") {
    return "routes:\n" + route("openai", fake, "[gpt-4o-mini]", resume);
}

const std::string chat_request =
    R"({"model":"gpt-4o-mini","stream":true,"temperature":0,"messages":[{"role":"user","content":"hi"}]})";

// One chat chunk of stream `tag` ("A" the first, "B" the replay: ids,
// created and system_fingerprint of their own).
std::string chunk(std::string_view tag, std::string_view delta, std::string_view finish = "null") {
    const std::string t(tag);
    return "data: {\"id\":\"chatcmpl-" + t + "\",\"object\":\"chat.completion.chunk\",\"created\":" +
           (t == "A" ? "111" : t == "B" ? "222" : "333") + ",\"model\":\"gpt-4o-mini\",\"system_fingerprint\":\"fp_" +
           t + "\",\"choices\":[{\"index\":0,\"delta\":" + std::string(delta) +
           ",\"logprobs\":null,\"finish_reason\":" + std::string(finish) + "}]}\n\n";
}
std::string text(std::string_view tag, std::string_view words) {
    return chunk(tag, "{\"content\":\"" + std::string(words) + "\"}");
}
const std::string done = "data: [DONE]\n\n";

// The whole stream of `tag` saying `words` in that split.
std::vector<std::string> chat_stream(std::string_view tag, const std::vector<std::string>& words) {
    std::vector<std::string> events{chunk(tag, R"({"role":"assistant","content":""})")};
    for (const auto& w : words) events.push_back(text(tag, w));
    events.push_back(chunk(tag, "{}", "\"stop\""));
    events.push_back(done);
    return events;
}
// Its first `n` events (a cut stream, ended by `end`).
Script cut_after(std::vector<std::string> events, std::size_t n, SseEnd end = SseEnd::close) {
    events.resize(n);
    return Script::sse(events, {.end = end});
}

// What the client's data lines say, as an SDK builds it.
struct Seen {
    std::string content;
    int done = 0;
    int finishes = 0;
    std::vector<std::string> ids, created, fingerprints;
    std::string error_type;  // a closing error event's
    int roles = 0;
};

Seen seen(const std::string& body) {
    Seen s;
    std::size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
        const std::size_t end = body.find('\n', at);
        const std::string data = body.substr(at + 6, end - at - 6);
        at = end;
        if (data == "[DONE]") {
            ++s.done;
            continue;
        }
        const boost::json::object o = boost::json::parse(data).as_object();
        if (o.contains("error")) {
            s.error_type = boost::json::value_to<std::string>(o.at("error").at("type"));
            continue;
        }
        if (o.contains("type")) {  // Messages
            const auto type = boost::json::value_to<std::string>(o.at("type"));
            if (type == "message_start") s.ids.push_back(boost::json::value_to<std::string>(o.at("message").at("id")));
            if (type == "content_block_delta")
                s.content += boost::json::value_to<std::string>(o.at("delta").at("text"));
            if (type == "message_stop") ++s.done;
            if (type == "message_delta") ++s.finishes;
            if (type == "error") s.error_type = boost::json::value_to<std::string>(o.at("error").at("type"));
            continue;
        }
        if (o.contains("id")) s.ids.push_back(boost::json::value_to<std::string>(o.at("id")));
        if (o.contains("created")) s.created.push_back(std::to_string(o.at("created").as_int64()));
        if (o.contains("system_fingerprint"))
            s.fingerprints.push_back(boost::json::value_to<std::string>(o.at("system_fingerprint")));
        for (const auto& c : o.at("choices").as_array()) {
            const auto& choice = c.as_object();
            if (choice.contains("text")) s.content += boost::json::value_to<std::string>(choice.at("text"));
            if (choice.contains("delta")) {
                const auto& delta = choice.at("delta").as_object();
                if (delta.contains("content") && delta.at("content").is_string())
                    s.content += boost::json::value_to<std::string>(delta.at("content"));
                if (delta.contains("role")) ++s.roles;
            }
            if (choice.contains("finish_reason") && choice.at("finish_reason").is_string()) ++s.finishes;
        }
    }
    return s;
}

bool all_of(const std::vector<std::string>& values, std::string_view v) {
    for (const auto& x : values)
        if (x != v) return false;
    return !values.empty();
}

std::vector<JsonRecord> attempts_of(const ProxyProcess& proxy, std::size_t n) {
    proxy.wait_for_records("attempt", n, bound);
    return attempt_records(proxy);
}

std::optional<double> resumes(ProxyProcess& proxy, std::string_view route, std::string_view result) {
    const std::string metrics = proxy.client().get("/metrics").body;
    return metric_value(metrics, "modelproxy_resumes_total{route=\"" + std::string(route) + "\",result=\"" +
                                     std::string(result) + "\"}");
}

}  // namespace

TEST_CASE("a chat stream cut after answer text is continued invisibly from a replay that says the same",
          "[resume]") {
    FakeProvider fake;
    const std::vector<std::string> answer{"The ", "quick ", "brown ", "fox"};
    fake.push(cut_after(chat_stream("A", answer), 3, SseEnd::reset));       // role, "The ", "quick "
    fake.push(Script::sse(chat_stream("B", {"The qu", "ick br", "own ", "fox"})));
    ProxyProcess proxy({.config_yaml = one_route(fake)});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(r.status == 200);
    const Seen s = seen(r.body);
    CHECK(s.content == "The quick brown fox");
    CHECK(s.done == 1);
    CHECK(s.finishes == 1);
    CHECK(s.roles == 1);
    CHECK(s.error_type.empty());
    // Every event under the ids the client first saw.
    CHECK(all_of(s.ids, "chatcmpl-A"));
    CHECK(all_of(s.created, "111"));
    CHECK(all_of(s.fingerprints, "fp_A"));
    // The straddling event: "ick br" of which "ick " was published.
    CHECK(r.body.find(R"("delta":{"content":"br"})") != std::string::npos);
    CHECK(fake.request_count() == 2);
    CHECK(fake.requests()[1].body == fake.requests()[0].body);  // byte-identical replay

    const auto attempts = attempts_of(proxy, 2);
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].str("decision") == "resume");
    CHECK(attempts[0].integer("resume_offset") == 10);  // "The quick " in code points
    CHECK(attempts[0].str("code") == "stream_incomplete");
    CHECK(attempts[1].str("decision") == "ok");
    CHECK(attempts[1].integer("resume_offset") == 10);
    const auto turn = turn_record(proxy);
    REQUIRE(turn);
    CHECK(turn->str("outcome") == "ok");
    CHECK(turn->integer("resumed") == 1);
    CHECK(turn->integer("attempts") == 2);
    CHECK(resumes(proxy, "openai", "continued") == 1);
    CHECK(resumes(proxy, "openai", "diverged") == 0);
}

TEST_CASE("a completions stream cut after its text is continued from the replay", "[resume]") {
    FakeProvider fake;
    const auto event = [](std::string_view tag, std::string_view words, std::string_view finish = "null") {
        return "data: {\"id\":\"cmpl-" + std::string(tag) + "\",\"object\":\"text_completion\",\"created\":" +
               (tag == "A" ? "111" : "222") + ",\"choices\":[{\"text\":\"" + std::string(words) +
               "\",\"index\":0,\"logprobs\":null,\"finish_reason\":" + std::string(finish) +
               "}],\"model\":\"gpt-4o-mini\"}\n\n";
    };
    // A clean close without [DONE]: a break after publication.
    fake.push(Script::sse({event("A", "Once "), event("A", "upon")}));
    fake.push(Script::sse({event("B", "Once up"), event("B", "on a time"), event("B", "", "\"stop\""), done}));
    ProxyProcess proxy({.config_yaml = one_route(fake)});
    proxy.start();
    const Response r = proxy.client().post_json(
        "/v1/completions", R"({"model":"gpt-4o-mini","stream":true,"seed":7,"prompt":"tell me"})");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "Once upon a time");
    CHECK(s.done == 1);
    CHECK(all_of(s.ids, "cmpl-A"));
    CHECK(all_of(s.created, "111"));
    CHECK(fake.request_count() == 2);
    const auto turn = turn_record(proxy);
    REQUIRE(turn);
    CHECK(turn->integer("resumed") == 1);
}

TEST_CASE("a Messages stream cut after its text is continued with one message_stop", "[resume]") {
    FakeProvider fake;
    const auto start = [](std::string_view tag) {
        return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_" +
               std::string(tag) +
               "\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\","
               "\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n";
    };
    const std::string block = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                              "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    const auto delta = [](std::string_view words) {
        return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
               "\"text_delta\",\"text\":\"" +
               std::string(words) + "\"}}\n\n";
    };
    const std::string stop = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n";
    const std::string message_delta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{"
                                      "\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{"
                                      "\"output_tokens\":6}}\n\n";
    const std::string message_stop = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    fake.push(Script::sse({start("A"), block, delta("Hello, "), delta("wor")}, {.end = SseEnd::reset}));
    fake.push(Script::sse({start("B"), block, delta("Hello"), delta(", world"), delta("!"), stop, message_delta,
                           message_stop}));
    ProxyProcess proxy({.config_yaml = "routes:\n" + route("anthropic", fake, "[claude-x]", "{enabled: true}",
                                                           "anthropic")});
    proxy.start();
    const Response r = proxy.client().post_json(
        "/v1/messages",
        R"({"model":"claude-x","stream":true,"temperature":0,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]})");
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "Hello, world!");
    CHECK(s.done == 1);
    CHECK(s.finishes == 1);
    CHECK(all_of(s.ids, "msg_A"));
    // One content_block_start, the one the client first got.
    std::size_t starts = 0;
    for (std::size_t at = 0; (at = r.body.find("event: content_block_start", at)) != std::string::npos; ++at) ++starts;
    CHECK(starts == 1);
    CHECK(r.body.find("\"text\":\"ld\"") != std::string::npos);  // ", world" cut to what follows ", wor"
    const auto turn = turn_record(proxy);
    REQUIRE(turn);
    CHECK(turn->integer("resumed") == 1);
    CHECK(resumes(proxy, "anthropic", "continued") == 1);
}

TEST_CASE("a replay that diverges from the published text ends the stream with the closing error event",
          "[resume]") {
    FakeProvider fake;
    fake.push(cut_after(chat_stream("A", {"The ", "quick ", "brown"}), 3));
    fake.push(Script::sse(chat_stream("B", {"The ", "slow ", "brown"})));
    ProxyProcess proxy({.config_yaml = one_route(fake)});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "The quick ");  // nothing of the replay's
    CHECK(s.done == 0);
    CHECK(s.error_type == "stream_incomplete");
    CHECK(r.body.find("slow") == std::string::npos);
    CHECK(r.body.find("chatcmpl-B") == std::string::npos);
    const auto turn = turn_record(proxy);
    REQUIRE(turn);
    CHECK(turn->str("code") == "stream_incomplete");
    CHECK(turn->integer("resumed") == 0);
    CHECK(resumes(proxy, "openai", "diverged") == 1);
    CHECK(resumes(proxy, "openai", "continued") == 0);
}

TEST_CASE("a replay that breaks before the seam ends the stream with the closing error event", "[resume]") {
    FakeProvider fake;
    fake.push(cut_after(chat_stream("A", {"The ", "quick ", "brown"}), 3));
    fake.push(cut_after(chat_stream("B", {"The ", "quick ", "brown"}), 2, SseEnd::reset));
    ProxyProcess proxy({.config_yaml = one_route(fake, "{enabled: true, max_resumes: 3}")});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "The quick ");
    CHECK(s.error_type == "stream_incomplete");
    CHECK(fake.request_count() == 2);  // never a resume of a resume that did not reach its seam
    CHECK(resumes(proxy, "openai", "broken") == 1);
}

TEST_CASE("a second cut is continued up to max_resumes, then ends with the closing error event", "[resume]") {
    const std::vector<std::string> words{"one ", "two ", "three ", "four"};
    SECTION("max_resumes 2: both cuts continued") {
        FakeProvider fake;
        fake.push(cut_after(chat_stream("A", words), 2));  // "one "
        fake.push(cut_after(chat_stream("B", words), 4));  // "one two three "
        fake.push(Script::sse(chat_stream("C", words)));
        ProxyProcess proxy({.config_yaml = one_route(fake, "{enabled: true, max_resumes: 2}")});
        proxy.start();
        const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        const Seen s = seen(r.body);
        CHECK(s.content == "one two three four");
        CHECK(s.done == 1);
        CHECK(all_of(s.ids, "chatcmpl-A"));
        const auto attempts = attempts_of(proxy, 3);
        REQUIRE(attempts.size() == 3);
        CHECK(attempts[0].integer("resume_offset") == 4);
        CHECK(attempts[1].str("decision") == "resume");
        CHECK(attempts[1].integer("resume_offset") == 14);
        const auto turn = turn_record(proxy);
        REQUIRE(turn);
        CHECK(turn->integer("resumed") == 2);
        CHECK(resumes(proxy, "openai", "continued") == 2);
    }
    SECTION("max_resumes 1: the second cut ends the stream") {
        FakeProvider fake;
        fake.push(cut_after(chat_stream("A", words), 2));
        fake.push(cut_after(chat_stream("B", words), 4));
        fake.push(Script::sse(chat_stream("C", words)));
        ProxyProcess proxy({.config_yaml = one_route(fake)});
        proxy.start();
        const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        const Seen s = seen(r.body);
        CHECK(s.content == "one two three ");
        CHECK(s.error_type == "stream_incomplete");
        CHECK(fake.request_count() == 2);
        const auto turn = turn_record(proxy);
        REQUIRE(turn);
        CHECK(turn->integer("resumed") == 1);
        CHECK(resumes(proxy, "openai", "continued") == 1);
        CHECK(resumes(proxy, "openai", "skipped") == 1);
    }
}

TEST_CASE("a server error event after answer text is not forwarded when a resume continues the stream",
          "[resume]") {
    FakeProvider fake;
    auto first = chat_stream("A", {"Hi ", "there"});
    first.resize(2);
    first.push_back(R"(data: {"error":{"type":"server_error","code":500,"message":"boom"}})" "\n\n");
    fake.push(Script::sse(first));
    fake.push(Script::sse(chat_stream("B", {"Hi there"})));
    ProxyProcess proxy({.config_yaml = one_route(fake)});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "Hi there");
    CHECK(s.error_type.empty());
    CHECK(r.body.find("boom") == std::string::npos);
    CHECK(s.done == 1);
}

TEST_CASE("resume is off by default: a cut after answer text ends with the closing error event", "[resume]") {
    FakeProvider fake;
    fake.push(cut_after(chat_stream("A", {"The ", "quick "}), 3));
    fake.push(Script::sse(chat_stream("B", {"The ", "quick "})));
    ProxyProcess proxy({.config_yaml = one_route(fake, "")});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "The quick ");
    CHECK(s.error_type == "stream_incomplete");
    CHECK(fake.request_count() == 1);
    const auto attempts = attempts_of(proxy, 1);
    REQUIRE(attempts.size() == 1);
    CHECK(attempts[0].is_null("resume_offset"));
    CHECK(resumes(proxy, "openai", "skipped") == 0);  // not a route that resumes
}

TEST_CASE("a resume goes to another deployment of the model, never to a fallback model", "[resume]") {
    SECTION("the next deployment of the same model continues the stream") {
        FakeProvider east, west;
        east.push(cut_after(chat_stream("A", {"The ", "quick ", "fox"}), 3));
        west.push(Script::sse(chat_stream("B", {"The quick fox"})));
        const std::string yaml = "routes:\n" + route("east", east, "[gpt-4o-mini]") +
                                 route("west", west, "[gpt-4o-mini]") +
                                 "models:\n  - name: gpt-4o-mini\n    attempts_per_candidate: 1\n";
        ProxyProcess proxy({.config_yaml = yaml});
        proxy.start();
        const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        const Seen s = seen(r.body);
        CHECK(s.content == "The quick fox");
        CHECK(all_of(s.ids, "chatcmpl-A"));
        CHECK(west.request_count() == 1);
        const auto turn = turn_record(proxy);
        REQUIRE(turn);
        CHECK(turn->str("route") == "west");
        CHECK(turn->integer("resumed") == 1);
    }
    SECTION("with no attempt left on the model's one deployment, the fallback model is not asked") {
        FakeProvider primary, backup;
        primary.push(cut_after(chat_stream("A", {"The ", "quick ", "fox"}), 3));
        backup.set_default(Script::sse(chat_stream("B", {"The quick fox"})));
        const std::string yaml = "routes:\n" + route("east", primary, "[gpt-4o-mini]") +
                                 route("west", backup, "[gpt-4o]") +
                                 "models:\n  - name: gpt-4o-mini\n    attempts_per_candidate: 1\n"
                                 "    fallbacks: [gpt-4o]\n";
        ProxyProcess proxy({.config_yaml = yaml});
        proxy.start();
        const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        const Seen s = seen(r.body);
        CHECK(s.content == "The quick ");
        CHECK(s.error_type == "stream_incomplete");
        CHECK(backup.request_count() == 0);
        CHECK(resumes(proxy, "east", "skipped") == 1);
    }
}

TEST_CASE("no resume on /responses, with n above 1, or without temperature 0 or a seed when only_deterministic",
          "[resume]") {
    SECTION("/responses") {
        FakeProvider fake;
        const auto event = [](std::string_view type, std::string_view rest, int n) {
            return "event: " + std::string(type) + "\ndata: {\"type\":\"" + std::string(type) +
                   "\",\"sequence_number\":" + std::to_string(n) + "," + std::string(rest) + "}\n\n";
        };
        const std::string created =
            event("response.created", R"("response":{"id":"resp_1","model":"gpt-4o-mini","status":"in_progress"})", 0);
        const std::string delta =
            event("response.output_text.delta", R"("item_id":"m1","output_index":0,"content_index":0,"delta":"Hi")", 1);
        fake.push(Script::sse({created, delta}, {.end = SseEnd::reset}));
        fake.push(Script::sse({created, delta}));
        ProxyProcess proxy({.config_yaml = one_route(fake)});
        proxy.start();
        const Response r = proxy.client().post_json(
            "/v1/responses", R"({"model":"gpt-4o-mini","stream":true,"temperature":0,"input":"hi"})");
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(r.body.find("stream_incomplete") != std::string::npos);
        CHECK(fake.request_count() == 1);
        CHECK(resumes(proxy, "openai", "skipped") == 1);
    }
    SECTION("n 2") {
        FakeProvider fake;
        fake.push(cut_after(chat_stream("A", {"The ", "quick "}), 3));
        ProxyProcess proxy({.config_yaml = one_route(fake)});
        proxy.start();
        const Response r = proxy.client().post_json(
            "/v1/chat/completions",
            R"({"model":"gpt-4o-mini","stream":true,"n":2,"temperature":0,"messages":[{"role":"user","content":"hi"}]})");
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(seen(r.body).error_type == "stream_incomplete");
        CHECK(fake.request_count() == 1);
        CHECK(resumes(proxy, "openai", "skipped") == 1);
    }
    SECTION("no temperature 0 and no seed, only_deterministic on") {
        FakeProvider fake;
        fake.push(cut_after(chat_stream("A", {"The ", "quick "}), 3));
        ProxyProcess proxy({.config_yaml = one_route(fake)});
        proxy.start();
        const Response r = proxy.client().post_json(
            "/v1/chat/completions",
            R"({"model":"gpt-4o-mini","stream":true,"temperature":0.7,"messages":[{"role":"user","content":"hi"}]})");
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        CHECK(seen(r.body).error_type == "stream_incomplete");
        CHECK(fake.request_count() == 1);
        CHECK(resumes(proxy, "openai", "skipped") == 1);
    }
    SECTION("no temperature 0 and no seed, only_deterministic off: resumed") {
        FakeProvider fake;
        fake.push(cut_after(chat_stream("A", {"The ", "quick "}), 3));
        fake.push(Script::sse(chat_stream("B", {"The quick "})));
        ProxyProcess proxy({.config_yaml = one_route(fake, "{enabled: true, only_deterministic: false}")});
        proxy.start();
        const Response r = proxy.client().post_json(
            "/v1/chat/completions",
            R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})");
        CAPTURE(r.wire);
        REQUIRE(r.ok());
        const Seen s = seen(r.body);
        CHECK(s.content == "The quick ");
        CHECK(s.done == 1);
        CHECK(fake.request_count() == 2);
    }
}

TEST_CASE("a published text longer than max_offset is not resumed", "[resume]") {
    FakeProvider fake;
    fake.push(cut_after(chat_stream("A", {"The ", "quick "}), 3));
    ProxyProcess proxy({.config_yaml = one_route(fake, "{enabled: true, max_offset: 5}")});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    CHECK(seen(r.body).error_type == "stream_incomplete");
    CHECK(fake.request_count() == 1);
    CHECK(resumes(proxy, "openai", "skipped") == 1);
}

TEST_CASE("the turn deadline ends a resume's catch-up with the closing error event", "[resume]") {
    FakeProvider fake;
    fake.push(cut_after(chat_stream("A", {"The ", "quick "}), 3));
    // The replay's head and role, then nothing.
    auto replay = chat_stream("B", {"The ", "quick "});
    replay.resize(1);
    fake.push(Script::sse(replay, {.end = SseEnd::hang}));
    const std::string yaml = "routes:\n" + route("openai", fake, "[gpt-4o-mini]", "{enabled: true}", "openai",
                                                 "    timeout_ms: 1500\n");
    ProxyProcess proxy({.config_yaml = yaml});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "The quick ");
    CHECK(s.error_type == "stream_incomplete");
    CHECK(resumes(proxy, "openai", "broken") == 1);
}

TEST_CASE("a resume whose attempt fails before its stream ends the stream as the cut would have", "[resume]") {
    FakeProvider fake;
    fake.push(cut_after(chat_stream("A", {"The ", "quick "}), 3));
    fake.push(Script::json(503, R"({"error":{"message":"overloaded","type":"server_error","code":null}})"));
    fake.push(Script::sse(chat_stream("C", {"The quick "})));
    ProxyProcess proxy({.config_yaml = one_route(fake)});
    proxy.start();
    const Response r = proxy.client().post_json("/v1/chat/completions", chat_request);
    CAPTURE(r.wire);
    REQUIRE(r.ok());
    const Seen s = seen(r.body);
    CHECK(s.content == "The quick ");
    CHECK(s.error_type == "stream_incomplete");
    CHECK(r.body.find("overloaded") == std::string::npos);
    CHECK(fake.request_count() == 2);  // the resume's attempt is not replayed
    const auto attempts = attempts_of(proxy, 2);
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[1].integer("status") == 503);
    CHECK(attempts[1].str("decision") == "terminal");
    CHECK(attempts[1].integer("resume_offset") == 10);
    const auto turn = turn_record(proxy);
    REQUIRE(turn);
    CHECK(turn->str("code") == "stream_incomplete");
    CHECK(turn->integer("resumed") == 0);
    CHECK(resumes(proxy, "openai", "broken") == 1);
}
