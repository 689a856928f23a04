#include "sse/identity.hpp"

#include "sse/inspect.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using modelproxy::policy::Endpoint;
using modelproxy::sse::BodyIdentity;
using modelproxy::sse::check_body_identity;
using modelproxy::sse::DataInfo;
using modelproxy::sse::glob_match;
using modelproxy::sse::IdentityRule;
using modelproxy::sse::IdentityVerdict;
using modelproxy::sse::Inspector;
using modelproxy::sse::StreamIdentity;
using modelproxy::sse::wildcard_accepts;

namespace {

using Lines = std::vector<std::string>;

// What a stream of data lines gets: the first line that refused (-1: none),
// its verdict, and the verdict at the end.
struct Run {
    int refused_at = -1;
    IdentityVerdict at_line = IdentityVerdict::ok;
    IdentityVerdict final = IdentityVerdict::ok;
};

Run run(const IdentityRule& rule, const Lines& lines, Endpoint endpoint = Endpoint::chat_completions,
        std::string_view event_name = {}) {
    Inspector inspector;
    StreamIdentity identity(rule);
    Run result;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const IdentityVerdict v = identity.on_line(inspector.inspect(lines[i], endpoint, event_name));
        if (v != IdentityVerdict::ok && result.refused_at < 0) {
            result.refused_at = static_cast<int>(i);
            result.at_line = v;
        }
    }
    result.final = identity.finish();
    return result;
}

const std::string role = R"({"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})";
const std::string role_no_model = R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})";
const std::string text = R"({"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"Hi"}}]})";
const std::string text_no_model = R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})";
const std::string text_empty_model = R"({"model":"","choices":[{"index":0,"delta":{"content":"Hi"}}]})";
const std::string foreign = R"({"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hi"}}]})";
const std::string foreign_role = R"({"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant"}}]})";
const std::string finish = R"({"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})";
const std::string error = R"({"error":{"type":"server_error","code":503}})";
const std::string done = "[DONE]";

}  // namespace

TEST_CASE("glob_match", "[identity]") {
    auto [pattern, text, match] = GENERATE(table<std::string, std::string, bool>({
        {"gpt-4o", "gpt-4o", true},
        {"gpt-4o", "gpt-4o-mini", false},           // whole string
        {"gpt-4o", "xgpt-4o", false},
        {"gpt-4o-mini-20*", "gpt-4o-mini-2024-07-18", true},
        {"gpt-4o-mini-20*", "gpt-4o-mini-20", true},  // * matches the empty run
        {"gpt-4o-mini-20*", "gpt-4o-mini", false},
        {"gpt-4o-mini-20*", "xgpt-4o-mini-2024", false},  // a prefix, not a part
        {"gpt-4o-mini-20*", "gpt-4o-mini-19*", false},
        {"GPT-4o", "gpt-4o", false},                // case-sensitive
        {"*", "", true},
        {"*", "anything", true},
        {"", "", true},
        {"", "a", false},
        {"a*b*c", "abc", true},
        {"a*b*c", "aXbYbZc", true},
        {"a*b*c", "aXbYbZ", false},
        {"*-mini", "gpt-4o-mini", true},
        {"claude-*-sonnet-*", "claude-3-5-sonnet-20241022", true},
        {"a?c", "abc", false},                      // ? is a plain byte
        {"a?c", "a?c", true},
        {"a**b", "ab", true},
        {"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
    }));
    CAPTURE(pattern, text);
    CHECK(glob_match(pattern, text) == match);
}

TEST_CASE("wildcard_accepts: the \"*\" route rule", "[identity]") {
    auto [requested, identity, accepted] = GENERATE(table<std::string, std::string, bool>({
        {"gpt-4o", "gpt-4o", true},
        {"gpt-4o", "gpt-4o-2024-08-06", true},
        {"gpt-4o", "gpt-4o-20240806", true},
        {"gpt-4o", "gpt-4o-0806", true},
        {"gpt-4o", "gpt-4o-mini", false},
        {"gpt-4o", "gpt-4o-2024-08-06-x", false},  // nothing after the suffix
        {"gpt-4o", "gpt-4o-2024-08-06-0806", false},  // one suffix only
        {"gpt-4o", "gpt-4o-2024-13-06", false},    // month 13
        {"gpt-4o", "gpt-4o-2024-08-32", false},    // day 32
        {"gpt-4o", "gpt-4o-1234", false},          // MMDD with day 34
        {"gpt-4o", "gpt-4o-2024-8-6", false},
        {"gpt-4o", "gpt-4o-202408", false},
        {"gpt-4o", "gpt-4o2024-08-06", false},     // the dash is part of the suffix
        {"gpt-4o", "gpt-4o-2024_08_06", false},
        {"gpt-4o", "GPT-4o", false},
        {"gpt-4o", "", false},
        {"claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", true},
        {"claude-3-5-sonnet-latest", "claude-3-5-sonnet-latest", true},
        {"claude-3-5-sonnet-latest", "claude-3-5-sonnet-latest-20241022", false},
        {"claude-3-5-sonnet-latest", "claude-3-5-sonnet", false},  // the bare base is neither form
        {"gpt-4", "gpt-4-0613", true},
    }));
    CAPTURE(requested, identity);
    CHECK(wildcard_accepts(requested, identity) == accepted);
    CHECK(IdentityRule::wildcard_for(requested).accepts(identity) == accepted);
}

TEST_CASE("IdentityRule: accept globs", "[identity]") {
    const IdentityRule rule = IdentityRule::from_accept({"gpt-4o-mini", "gpt-4o-mini-20*"});
    auto [identity, accepted] = GENERATE(table<std::string, bool>({
        {"gpt-4o-mini", true},
        {"gpt-4o-mini-2024-07-18", true},
        {"gpt-4o", false},
        {"gpt-4o-mini-x", false},
        {"", false},
    }));
    CAPTURE(identity);
    CHECK(rule.accepts(identity) == accepted);
}

TEST_CASE("StreamIdentity: sequences", "[identity]") {
    const IdentityRule rule = IdentityRule::wildcard_for("gpt-4o");
    using V = IdentityVerdict;
    auto [name, lines, refused_at, at_line, final] = GENERATE_REF(table<std::string, Lines, int, V, V>({
        {"role chunk with model, then content", {role, text, finish, done}, -1, V::ok, V::ok},
        {"content naming the model itself", {text, done}, -1, V::ok, V::ok},
        {"role chunk without model, then content naming it", {role_no_model, text, done}, -1, V::ok, V::ok},
        {"content before any model", {role_no_model, text_no_model, text}, 1, V::answer_before_model,
         V::answer_before_model},
        {"an empty-string model names no model", {text_empty_model, text}, 0, V::answer_before_model,
         V::answer_before_model},
        {"foreign model chunk mid-stream", {role, text, foreign, text, done}, 2, V::foreign_model, V::foreign_model},
        {"foreign role chunk before any text", {foreign_role, text}, 0, V::foreign_model, V::foreign_model},
        {"foreign chunk, then an error event", {role, foreign_role, error}, 1, V::foreign_model, V::foreign_model},
        {"error-only stream, no model", {error, done}, -1, V::ok, V::ok},
        {"error-only stream without [DONE]", {error}, -1, V::ok, V::ok},
        {"[DONE] alone", {done}, -1, V::ok, V::ok},
        {"[DONE], then a foreign chunk", {role, text, done, foreign}, 3, V::foreign_model, V::foreign_model},
        {"[DONE], then an accepted chunk", {role, text, done, text}, -1, V::ok, V::ok},
        {"error, [DONE], then an error: data after [DONE] needs a model", {error, done, error}, -1, V::ok,
         V::no_model},
        {"error, [DONE], [DONE]", {error, done, done}, -1, V::ok, V::no_model},
        {"an error then a role chunk without model", {error, role_no_model, done}, -1, V::ok, V::no_model},
        {"role and finish without any model", {role_no_model, done}, -1, V::ok, V::no_model},
        {"model named, error follows", {role, error}, -1, V::ok, V::ok},
    }));
    CAPTURE(name);
    const Run r = run(rule, lines);
    CHECK(r.refused_at == refused_at);
    CHECK(r.at_line == at_line);
    CHECK(r.final == final);
}

TEST_CASE("StreamIdentity: an error event naming another model", "[identity]") {
    // Responses' response.failed names response.model: alone it is an
    // error-only stream (no identity check); a later other event refuses.
    const IdentityRule rule = IdentityRule::from_accept({"gpt-4o"});
    const std::string failed =
        R"({"type":"response.failed","response":{"model":"o3","error":{"code":"server_error"}}})";
    const std::string created = R"({"type":"response.in_progress","response":{"status":"in_progress"}})";
    CHECK(run(rule, {failed}, Endpoint::responses).final == IdentityVerdict::ok);
    const Run later = run(rule, {failed, created}, Endpoint::responses);
    CHECK(later.refused_at == 1);
    CHECK(later.at_line == IdentityVerdict::foreign_model);
}

TEST_CASE("StreamIdentity: Messages and Responses identity fields", "[identity]") {
    const IdentityRule rule = IdentityRule::from_accept({"claude-sonnet-4-*"});
    const Lines messages = {
        R"({"type":"message_start","message":{"id":"m","model":"claude-sonnet-4-20250514","content":[]}})",
        R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})",
        R"({"type":"message_stop"})",
    };
    CHECK(run(rule, messages, Endpoint::messages).final == IdentityVerdict::ok);
    const Run without_start = run(rule, {messages[2]}, Endpoint::messages);
    CHECK(without_start.refused_at == 0);
    CHECK(without_start.at_line == IdentityVerdict::answer_before_model);

    const IdentityRule o3 = IdentityRule::wildcard_for("o3");
    const Lines responses = {
        R"({"type":"response.created","response":{"model":"o3-2025-04-16"}})",
        R"({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hi"})",
        R"({"type":"response.completed","response":{"model":"o3-2025-04-16"}})",
    };
    CHECK(run(o3, responses, Endpoint::responses).final == IdentityVerdict::ok);
}

TEST_CASE("StreamIdentity: the first refusal is final, reset starts over", "[identity]") {
    const IdentityRule rule = IdentityRule::wildcard_for("gpt-4o");
    Inspector inspector;
    StreamIdentity identity(rule);
    CHECK(identity.on_line(inspector.inspect(foreign, Endpoint::chat_completions)) == IdentityVerdict::foreign_model);
    CHECK(identity.on_line(inspector.inspect(text, Endpoint::chat_completions)) == IdentityVerdict::foreign_model);
    CHECK(identity.finish() == IdentityVerdict::foreign_model);
    identity.reset();
    CHECK(identity.on_line(inspector.inspect(text, Endpoint::chat_completions)) == IdentityVerdict::ok);
    CHECK(identity.finish() == IdentityVerdict::ok);
}

TEST_CASE("StreamIdentity: a hand-made DataInfo", "[identity]") {
    // The machine reads only kind, models(), answer_text and structured_error.
    const IdentityRule rule = IdentityRule::from_accept({"m"});
    StreamIdentity identity(rule);
    DataInfo line;
    line.kind = modelproxy::sse::DataKind::json;
    line.object = true;
    line.model_slots[0] = "";  // an empty name is no name, even if a caller passes one
    line.model_count = 1;
    line.answer_text = true;
    CHECK(identity.on_line(line) == IdentityVerdict::answer_before_model);
}

TEST_CASE("check_body_identity", "[identity]") {
    const IdentityRule rule = IdentityRule::from_accept({"gpt-4o-mini", "gpt-4o-mini-20*"});
    auto [name, body, verdict] = GENERATE(table<std::string, std::string, IdentityVerdict>({
        {"not an object", R"(["gpt-4o-mini"])", IdentityVerdict::not_an_object},
        {"not JSON", R"(gpt-4o-mini)", IdentityVerdict::not_an_object},
        {"missing model", R"({"choices":[]})", IdentityVerdict::no_model},
        {"empty model", R"({"model":"","choices":[]})", IdentityVerdict::no_model},
        {"matching", R"({"model":"gpt-4o-mini","choices":[]})", IdentityVerdict::ok},
        {"dated identity under an accept glob", R"({"model":"gpt-4o-mini-2024-07-18"})", IdentityVerdict::ok},
        {"foreign", R"({"model":"gpt-4o"})", IdentityVerdict::foreign_model},
    }));
    CAPTURE(name);
    CHECK(check_body_identity(modelproxy::sse::body_identity(body, Endpoint::chat_completions), rule) == verdict);
}

TEST_CASE("check_body_identity: every identity field must match", "[identity]") {
    const IdentityRule rule = IdentityRule::from_accept({"o3"});
    const auto both = modelproxy::sse::body_identity(R"({"model":"o3","response":{"model":"o4"}})", Endpoint::responses);
    CHECK(check_body_identity(both, rule) == IdentityVerdict::foreign_model);
    CHECK(check_body_identity(BodyIdentity{true, {"o3"}}, rule) == IdentityVerdict::ok);
    CHECK(modelproxy::sse::refusal_code(IdentityVerdict::no_model) == "model_identity_mismatch");
    CHECK(modelproxy::sse::refusal_code(IdentityVerdict::ok).empty());
}

// ---- what a refusal says (docs/behaviour.md section 9) ---------------------------------

using modelproxy::sse::bounded_name;
using modelproxy::sse::describe_refusal;
using modelproxy::sse::IdentityRefusal;

TEST_CASE("a model listed without accept takes its dated snapshots, never a longer name", "[identity]") {
    // The default rule is the "*" rule over the upstream model (docs/behaviour.md section
    // 3): providers answer an alias with a dated snapshot.
    const IdentityRule rule = IdentityRule::wildcard_for("gpt-4o-mini");
    CHECK(rule.accepts("gpt-4o-mini"));
    CHECK(rule.accepts("gpt-4o-mini-2024-07-18"));
    CHECK(rule.accepts("gpt-4o-mini-20240718"));
    CHECK(rule.accepts("gpt-4o-mini-0718"));
    CHECK_FALSE(rule.accepts("gpt-4o"));
    CHECK_FALSE(rule.accepts("gpt-4o-mini-audio"));
    CHECK_FALSE(rule.accepts("gpt-4o-mini-2024-07-18-x"));
    const IdentityRule claude = IdentityRule::wildcard_for("claude-sonnet-4-5");
    CHECK(claude.accepts("claude-sonnet-4-5-20250929"));
    CHECK_FALSE(claude.accepts("claude-sonnet-4-5-1"));
}

TEST_CASE("bounded_name: printable ASCII, at most 128 bytes", "[identity]") {
    std::string out = "left over";
    bounded_name("gpt-4o \"x\"", out);
    CHECK(out == "gpt-4o \"x\"");
    bounded_name("a\nb\x01\x7f\xc3\xa9", out);
    CHECK(out == "a?b????");
    bounded_name(std::string(129, 'm'), out);
    CHECK(out == std::string(128, 'm') + "...");
    bounded_name(std::string(128, 'm'), out);
    CHECK(out == std::string(128, 'm'));
}

TEST_CASE("describe_refusal names the model answered and the names accepted", "[identity]") {
    IdentityRefusal out;
    SECTION("a default rule, a foreign model") {
        describe_refusal(IdentityVerdict::foreign_model, "gpt-4o-mini-2024-07-18",
                         IdentityRule::wildcard_for("gpt-4o"), out);
        CHECK(out.answered == "gpt-4o-mini-2024-07-18");
        CHECK(out.accepted == Lines{"gpt-4o", "gpt-4o-YYYY-MM-DD", "gpt-4o-YYYYMMDD", "gpt-4o-MMDD"});
        CHECK(out.message ==
              "the upstream answered with model \"gpt-4o-mini-2024-07-18\", which this route does not accept "
              "(accepted: gpt-4o, gpt-4o-YYYY-MM-DD, gpt-4o-YYYYMMDD, gpt-4o-MMDD)");
    }
    SECTION("a -latest name: its snapshots are the base's") {
        describe_refusal(IdentityVerdict::foreign_model, "x", IdentityRule::wildcard_for("claude-3-5-haiku-latest"), out);
        CHECK(out.accepted == Lines{"claude-3-5-haiku-latest", "claude-3-5-haiku-YYYY-MM-DD",
                                    "claude-3-5-haiku-YYYYMMDD", "claude-3-5-haiku-MMDD"});
    }
    SECTION("accept globs, more than eight") {
        Lines globs;
        for (int i = 0; i < 10; ++i) globs.push_back("m" + std::to_string(i) + "-*");
        describe_refusal(IdentityVerdict::foreign_model, "other", IdentityRule::from_accept(globs), out);
        CHECK(out.accepted.size() == 9);
        CHECK(out.accepted[7] == "m7-*");
        CHECK(out.accepted[8] == "(2 more)");
    }
    SECTION("no model named: the message says so, nothing answered") {
        describe_refusal(IdentityVerdict::no_model, "ignored", IdentityRule::from_accept({"o3"}), out);
        CHECK(out.answered.empty());
        CHECK(out.message == "the upstream answer never named its model (accepted: o3)");
        describe_refusal(IdentityVerdict::answer_before_model, "", IdentityRule::from_accept({"o3"}), out);
        CHECK(out.message == "the upstream stream sent answer text before naming an accepted model (accepted: o3)");
    }
    SECTION("a hostile name stays bounded") {
        describe_refusal(IdentityVerdict::foreign_model, std::string(100000, 'z') + "\n",
                         IdentityRule::from_accept({std::string(1000, 'a')}), out);
        CHECK(out.answered.size() == 131);
        CHECK(out.accepted.at(0).size() == 131);
        CHECK(out.message.size() < 600);
    }
}

TEST_CASE("the model that refused: StreamIdentity and check_body_identity say which", "[identity]") {
    const IdentityRule rule = IdentityRule::wildcard_for("gpt-4o");
    Inspector inspector;
    StreamIdentity identity(rule);
    CHECK(identity.on_line(inspector.inspect(role, Endpoint::chat_completions)) == IdentityVerdict::ok);
    CHECK(identity.foreign_model().empty());
    CHECK(identity.on_line(inspector.inspect(foreign, Endpoint::chat_completions)) == IdentityVerdict::foreign_model);
    CHECK(identity.foreign_model() == "gpt-4o-mini");
    identity.reset();
    CHECK(identity.foreign_model().empty());
    // An error line's foreign model is the one named when the refusal comes
    // at a later line (which names another).
    const std::string failed = R"({"type":"response.failed","response":{"model":"o3","error":{"code":"server_error"}}})";
    const std::string created = R"({"type":"response.created","response":{"model":"o4"}})";
    CHECK(identity.on_line(inspector.inspect(failed, Endpoint::responses)) == IdentityVerdict::ok);
    CHECK(identity.on_line(inspector.inspect(created, Endpoint::responses)) == IdentityVerdict::foreign_model);
    CHECK(identity.foreign_model() == "o3");

    std::string_view answered;
    const auto body = modelproxy::sse::body_identity(R"({"model":"gpt-4o-mini"})", Endpoint::chat_completions);
    CHECK(check_body_identity(body, rule, &answered) == IdentityVerdict::foreign_model);
    CHECK(answered == "gpt-4o-mini");
}
