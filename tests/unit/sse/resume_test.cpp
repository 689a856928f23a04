// docs/behaviour.md section 16's seam, as properties: for random answers,
// any two ways of splitting them into events, and any byte at which the
// first stream is cut, what the client ends up with (the published events,
// then the second stream's events the seam lets through, rewritten) is the
// answer exactly once, under the ids the client first saw; and a second
// stream that contradicts the published text is always found out.
#include "sse/reader.hpp"
#include "sse/resume.hpp"

#include <catch2/catch.hpp>
#include <simdjson.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace modelproxy;
using sse::ResumePiece;
using Step = sse::Seam::Step;

namespace {

std::string json_str(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            default: out += c;
        }
    }
    return out + "\"";
}

// One answer: a list of items, each a text of some kind or a tool call.
struct Item {
    enum Kind { reasoning, content, tool } kind = content;
    std::string name;  // tool
    std::string text;  // the text, or the tool call's arguments
};
using Answer = std::vector<Item>;

const char* const alphabet[] = {"a", "b", " ", "\"", "\\", "\n", "{", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80"};

std::string random_text(std::mt19937& rng, int max_chars) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_chars));
    for (int i = 0; i < n; ++i) s += alphabet[rng() % std::size(alphabet)];
    return s;
}

Answer random_answer(std::mt19937& rng, sse::ResumePiece::Kind, policy::Endpoint endpoint) {
    Answer a;
    if (endpoint == policy::Endpoint::completions) {
        a.push_back({Item::content, "", random_text(rng, 40)});
        return a;
    }
    if (rng() % 3 == 0) a.push_back({Item::reasoning, "", random_text(rng, 20)});
    if (rng() % 4 != 0) a.push_back({Item::content, "", random_text(rng, 40)});
    const int tools = static_cast<int>(rng() % 3);
    for (int t = 0; t < tools; ++t) a.push_back({Item::tool, "fn_" + std::to_string(rng() % 5), random_text(rng, 20)});
    if (a.empty()) a.push_back({Item::content, "", random_text(rng, 10)});
    return a;
}

// Splits `text` into fragments at random code point boundaries.
std::vector<std::string> split(std::mt19937& rng, const std::string& text) {
    std::vector<std::string> parts;
    std::string cur;
    for (std::size_t i = 0; i < text.size();) {
        std::size_t len = 1;
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0xF0) len = 4;
        else if (c >= 0xE0) len = 3;
        else if (c >= 0xC0) len = 2;
        cur.append(text, i, len);
        i += len;
        if (rng() % 3 == 0) {
            parts.push_back(cur);
            cur.clear();
        }
    }
    if (!cur.empty()) parts.push_back(cur);
    return parts;
}

struct Stream {
    std::vector<std::string> lines;  // data values
    std::vector<std::string> names;  // event names (Messages)
    void add(std::string line, std::string name = {}) {
        lines.push_back(std::move(line));
        names.push_back(std::move(name));
    }
    std::string bytes() const {
        std::string out;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (!names[i].empty()) out += "event: " + names[i] + "\n";
            out += "data: " + lines[i] + "\n\n";
        }
        return out;
    }
};

// The stream one provider would send for `answer`, its text split at
// random, under ids of its own (`tag`).
Stream chat_stream(std::mt19937& rng, const Answer& answer, const std::string& tag) {
    Stream s;
    const std::string head = R"({"id":"chatcmpl-)" + tag + R"(","object":"chat.completion.chunk","created":)" +
                             (tag == "A" ? "111" : "222") + R"(,"model":"m","system_fingerprint":"fp_)" + tag +
                             R"(","choices":[{"index":0,"delta":)";
    s.add(head + R"({"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})");
    int tool_index = 0;
    bool tools = false;
    for (const Item& item : answer) {
        if (item.kind == Item::tool) {
            tools = true;
            const std::string idx = std::to_string(tool_index++);
            s.add(head + R"({"tool_calls":[{"index":)" + idx + R"(,"id":"call_)" + tag + idx +
                  R"(","type":"function","function":{"name":)" + json_str(item.name) +
                  R"(,"arguments":""}}]},"finish_reason":null}]})");
            for (const auto& part : split(rng, item.text))
                s.add(head + R"({"tool_calls":[{"index":)" + idx + R"(,"function":{"arguments":)" + json_str(part) +
                      R"(}}]},"finish_reason":null}]})");
            continue;
        }
        const char* field = item.kind == Item::reasoning ? "reasoning_content" : "content";
        for (const auto& part : split(rng, item.text))
            s.add(head + R"({")" + field + R"(":)" + json_str(part) + R"(},"finish_reason":null}]})");
    }
    // Sometimes the last text and the finish share a line.
    const std::string reason = tools ? "\"tool_calls\"" : "\"stop\"";
    if (!tools && rng() % 2 == 0 && answer.back().kind == Item::content) {
        std::string& last = s.lines.back();
        last.replace(last.rfind("\"finish_reason\":null"), 20, "\"finish_reason\":" + reason);
    } else {
        s.add(head + R"({},"finish_reason":)" + reason + "}]}");
    }
    s.add(R"({"id":"chatcmpl-)" + tag + R"(","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}})");
    s.add("[DONE]");
    return s;
}

Stream completions_stream(std::mt19937& rng, const Answer& answer, const std::string& tag) {
    Stream s;
    const std::string head = R"({"id":"cmpl-)" + tag + R"(","object":"text_completion","created":)" +
                             (tag == "A" ? "111" : "222") + R"(,"choices":[{"text":)";
    for (const auto& part : split(rng, answer.front().text))
        s.add(head + json_str(part) + R"(,"index":0,"logprobs":null,"finish_reason":null}],"model":"m"})");
    s.add(head + R"("","index":0,"logprobs":null,"finish_reason":"stop"}],"model":"m"})");
    s.add("[DONE]");
    return s;
}

Stream messages_stream(std::mt19937& rng, const Answer& answer, const std::string& tag) {
    Stream s;
    s.add(R"({"type":"message_start","message":{"id":"msg_)" + tag +
              R"(","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}})",
          "message_start");
    int index = 0;
    bool tools = false;
    for (const Item& item : answer) {
        const std::string idx = std::to_string(index++);
        std::string start, delta_type, field;
        if (item.kind == Item::tool) {
            tools = true;
            start = R"({"type":"tool_use","id":"toolu_)" + tag + idx + R"(","name":)" + json_str(item.name) +
                    R"(,"input":{}})";
            delta_type = "input_json_delta";
            field = "partial_json";
        } else if (item.kind == Item::reasoning) {
            start = R"({"type":"thinking","thinking":""})";
            delta_type = "thinking_delta";
            field = "thinking";
        } else {
            start = R"({"type":"text","text":""})";
            delta_type = "text_delta";
            field = "text";
        }
        s.add(R"({"type":"content_block_start","index":)" + idx + R"(,"content_block":)" + start + "}",
              "content_block_start");
        if (rng() % 4 == 0) s.add(R"({"type":"ping"})", "ping");
        for (const auto& part : split(rng, item.text))
            s.add(R"({"type":"content_block_delta","index":)" + idx + R"(,"delta":{"type":")" + delta_type +
                      R"(",")" + field + R"(":)" + json_str(part) + "}}",
                  "content_block_delta");
        if (item.kind == Item::reasoning)
            s.add(R"({"type":"content_block_delta","index":)" + idx +
                      R"(,"delta":{"type":"signature_delta","signature":"sig)" + tag + R"("}})",
                  "content_block_delta");
        s.add(R"({"type":"content_block_stop","index":)" + idx + "}", "content_block_stop");
    }
    s.add(std::string(R"({"type":"message_delta","delta":{"stop_reason":")") + (tools ? "tool_use" : "end_turn") +
              R"(","stop_sequence":null},"usage":{"output_tokens":9}})",
          "message_delta");
    s.add(R"({"type":"message_stop"})", "message_stop");
    return s;
}

Stream make_stream(std::mt19937& rng, policy::Endpoint endpoint, const Answer& answer, const std::string& tag) {
    switch (endpoint) {
        case policy::Endpoint::completions: return completions_stream(rng, answer, tag);
        case policy::Endpoint::messages: return messages_stream(rng, answer, tag);
        default: return chat_stream(rng, answer, tag);
    }
}

// What a client SDK builds from the lines it gets: every string member of
// the answer concatenated per slot (so a repeated name, id or role shows
// up doubled), every finish and block start/stop counted, and the ids seen.
struct Client {
    std::map<std::string, std::string> slots;
    std::map<std::string, int> counts;
    std::vector<std::string> ids;

    void take(std::string_view line, policy::Endpoint endpoint) {
        if (line == "[DONE]") {
            ++counts["[DONE]"];
            return;
        }
        simdjson::dom::parser parser;
        simdjson::dom::element doc = parser.parse(line);  // throws on bad JSON: a test failure
        if (endpoint == policy::Endpoint::messages) {
            const std::string type(doc["type"].get_string().value());
            if (type == "message_start") ids.emplace_back(doc["message"]["id"].get_string().value());
            if (type == "content_block_start") {
                const auto idx = std::to_string(doc["index"].get_int64().value());
                ++counts["start" + idx];
                auto block = doc["content_block"];
                slots["type" + idx] += std::string(block["type"].get_string().value());
                if (auto name = block["name"].get_string(); !name.error()) slots["name" + idx] += std::string(name.value());
            }
            if (type == "content_block_stop") ++counts["stop" + std::to_string(doc["index"].get_int64().value())];
            if (type == "content_block_delta") {
                const auto idx = std::to_string(doc["index"].get_int64().value());
                for (const char* f : {"text", "partial_json", "thinking"})
                    if (auto v = doc["delta"][f].get_string(); !v.error()) slots[f + idx] += std::string(v.value());
                if (auto v = doc["delta"]["signature"].get_string(); !v.error()) ++counts["signature" + idx];
            }
            if (type == "message_delta") slots["stop_reason"] += std::string(doc["delta"]["stop_reason"].get_string().value());
            if (type == "message_stop") ++counts["message_stop"];
            return;
        }
        ids.emplace_back(doc["id"].get_string().value());
        if (auto created = doc["created"].get_int64(); !created.error() && doc["choices"].get_array().size() > 0)
            ids.push_back(std::to_string(created.value()));
        if (auto fp = doc["system_fingerprint"].get_string(); !fp.error()) ids.emplace_back(fp.value());
        if (auto usage = doc["usage"].get_object(); !usage.error()) ++counts["usage"];
        for (auto choice : doc["choices"].get_array()) {
            if (auto reason = choice["finish_reason"].get_string(); !reason.error())
                slots["finish"] += std::string(reason.value());
            if (endpoint == policy::Endpoint::completions) {
                slots["text"] += std::string(choice["text"].get_string().value());
                continue;
            }
            auto delta = choice["delta"];
            for (const char* f : {"role", "content", "reasoning_content"})
                if (auto v = delta[f].get_string(); !v.error()) slots[f] += std::string(v.value());
            if (auto calls = delta["tool_calls"].get_array(); !calls.error()) {
                for (auto call : calls.value()) {
                    const auto idx = std::to_string(call["index"].get_int64().value());
                    // A tool call's id is the stream's own (never compared): a
                    // call the client first sees in the second stream has its id.
                    if (auto v = call["id"].get_string(); !v.error())
                        slots["id" + idx] += std::string(v.value()).substr(0, 5) + "?" + idx;
                    if (auto v = call["type"].get_string(); !v.error()) slots["type" + idx] += std::string(v.value());
                    if (auto v = call["function"]["name"].get_string(); !v.error()) slots["name" + idx] += std::string(v.value());
                    if (auto v = call["function"]["arguments"].get_string(); !v.error())
                        slots["args" + idx] += std::string(v.value());
                }
            }
        }
    }
};

// The complete events in the first `cut` bytes of a stream: what the
// proxy published before the cut (an event cut short is never published).
std::vector<std::string> events_before(const std::string& bytes, std::size_t cut) {
    sse::Reader reader;
    reader.feed(std::string_view(bytes).substr(0, cut));
    reader.finish();
    std::vector<std::string> lines;
    while (const sse::Event* e = reader.next()) {
        if (!e->terminated) continue;
        for (auto d : e->data) lines.emplace_back(d);
    }
    return lines;
}

std::string dump(const Client& c) {
    std::string out;
    for (const auto& [k, v] : c.slots) out += k + "=" + v + "|\n";
    for (const auto& [k, v] : c.counts) out += k + "#" + std::to_string(v) + "\n";
    return out;
}

struct Outcome {
    bool published_text = false;  // resume applies only after answer text
    bool diverged = false;
    bool reached = false;
    Client client;
    std::uint64_t offset = 0;
};

// The proxy's side: lines of A up to the cut published, then B judged and
// rewritten; the client takes what goes out.
Outcome resume(policy::Endpoint endpoint, const Stream& a, std::size_t cut, const Stream& b) {
    Outcome o;
    sse::ResumeReader reader;
    sse::PublishedAnswer published;
    for (const std::string& line : events_before(a.bytes(), cut)) {
        const sse::ResumeLine& read = reader.read(line, endpoint);
        REQUIRE((read.json || read.done));
        if (read.done) return o;  // the end marker went out: no break to continue
        published.add(read);
        o.client.take(line, endpoint);
    }
    o.offset = published.code_points();
    o.published_text = o.offset > 0;
    if (!o.published_text) return o;
    sse::Seam seam(published);
    for (const std::string& line : b.lines) {
        const sse::ResumeLine& read = reader.read(line, endpoint);
        INFO(line);
        REQUIRE((read.json || read.done));
        if (read.done && !seam.reached()) {
            o.diverged = true;  // the stream ended before the seam
            return o;
        }
        const sse::Seam::Verdict v = seam.judge(read);
        if (v.step == Step::diverged) {
            o.diverged = true;
            return o;
        }
        if (v.step == Step::drop) continue;
        std::string out;
        REQUIRE(reader.rewrite(line, endpoint, v.cut, published.ids(), out));
        o.client.take(out, endpoint);
    }
    o.reached = seam.reached();
    return o;
}

Client whole(policy::Endpoint endpoint, const Stream& s) {
    Client c;
    for (const auto& line : s.lines) c.take(line, endpoint);
    return c;
}

void check_ids(const Client& c, policy::Endpoint endpoint) {
    for (const auto& id : c.ids) {
        if (endpoint == policy::Endpoint::messages) {
            CHECK(id == "msg_A");
        } else {
            const bool first_stream = id == "chatcmpl-A" || id == "cmpl-A" || id == "111" || id == "fp_A" || id == "1";
            CHECK(first_stream);
        }
    }
}

void run_properties(policy::Endpoint endpoint, unsigned seed) {
    std::mt19937 rng(seed);
    int continued = 0, diverged = 0;
    for (int round = 0; round < 1500; ++round) {
        const Answer answer = random_answer(rng, ResumePiece::Kind::text, endpoint);
        const Stream a = make_stream(rng, endpoint, answer, "A");
        const Stream b = make_stream(rng, endpoint, answer, "B");
        const std::string bytes = a.bytes();
        const std::size_t cut = rng() % bytes.size();
        INFO("round " << round << " cut " << cut << "\n" << bytes);
        const Outcome o = resume(endpoint, a, cut, b);
        if (!o.published_text) continue;
        // The same answer said twice, split differently: always continued,
        // and the client has exactly the uncut answer, under A's ids.
        REQUIRE_FALSE(o.diverged);
        REQUIRE(o.reached);
        const Client expected = whole(endpoint, a);
        INFO("client:\n" << dump(o.client) << "expected:\n" << dump(expected));
        CHECK(o.client.slots == expected.slots);
        CHECK(o.client.counts == expected.counts);
        check_ids(o.client, endpoint);
        ++continued;

        // A different answer whose difference lies in the published text:
        // always found out, never spliced.
        Answer other = answer;
        const std::size_t which = rng() % other.size();
        Item& item = other[which];
        const bool rename = item.kind == Item::tool && rng() % 2 == 0;
        if (rename) {
            item.name += "x";
        } else {
            std::size_t at = rng() % item.text.size();
            while (at < item.text.size() && (static_cast<unsigned char>(item.text[at]) & 0xC0) == 0x80) ++at;
            item.text.insert(at, "Z");
        }
        const Stream c = make_stream(rng, endpoint, other, "B");
        const Outcome d = resume(endpoint, a, cut, c);
        if (d.diverged) {
            ++diverged;
            continue;
        }
        // Not found out: then the difference was not published, and what
        // the client has is exactly the second answer, once.
        const Client second = whole(endpoint, c);
        REQUIRE(d.reached);
        CHECK(d.client.slots == second.slots);
        CHECK(d.client.counts == second.counts);
    }
    CHECK(continued > 500);
    CHECK(diverged > 100);
}

sse::ResumeLine copy_of(const sse::ResumeLine& line) { return line; }

}  // namespace

TEST_CASE("resume seam: a chat stream cut anywhere is continued exactly once") {
    run_properties(policy::Endpoint::chat_completions, 1);
}

TEST_CASE("resume seam: a completions stream cut anywhere is continued exactly once") {
    run_properties(policy::Endpoint::completions, 2);
}

TEST_CASE("resume seam: a Messages stream cut anywhere is continued exactly once") {
    run_properties(policy::Endpoint::messages, 3);
}

TEST_CASE("resume seam: a replay that breaks before the seam never reaches it") {
    std::mt19937 rng(4);
    for (int round = 0; round < 300; ++round) {
        const Answer answer = random_answer(rng, ResumePiece::Kind::text, policy::Endpoint::chat_completions);
        const Stream a = chat_stream(rng, answer, "A");
        Stream b = chat_stream(rng, answer, "B");
        // A published everything but its [DONE]; B breaks one line short.
        const Outcome full = resume(policy::Endpoint::chat_completions, a, a.bytes().size() - 10, b);
        REQUIRE(full.reached);
        std::size_t last_text = 0;
        for (std::size_t i = 0; i < b.lines.size(); ++i)
            if (b.lines[i].find("\"content\":\"\"") == std::string::npos &&
                (b.lines[i].find("\"content\":") != std::string::npos || b.lines[i].find("\"arguments\":\"") != std::string::npos ||
                 b.lines[i].find("\"reasoning_content\":") != std::string::npos))
                last_text = i;
        b.lines.resize(last_text);
        const Outcome cut = resume(policy::Endpoint::chat_completions, a, a.bytes().size() - 10, b);
        CHECK_FALSE(cut.reached);
    }
}

TEST_CASE("resume seam: the straddling event is cut to its unpublished text and logprobs") {
    sse::ResumeReader reader;
    sse::PublishedAnswer published;
    const auto chat = policy::Endpoint::chat_completions;
    published.add(copy_of(reader.read(
        R"({"id":"chatcmpl-A","created":111,"system_fingerprint":"fp_A","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]})",
        chat)));
    CHECK(published.code_points() == 3);
    CHECK(published.ids().id == "\"chatcmpl-A\"");
    CHECK(published.ids().created == "111");
    sse::Seam seam(published);
    const std::string line =
        R"({"id":"chatcmpl-B","created":222,"system_fingerprint":"fp_B","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"logprobs":{"content":[{"token":"He","logprob":-0.5,"bytes":[72,101],"top_logprobs":[]},{"token":"ll","logprob":-1e-05,"bytes":[108,108],"top_logprobs":[]},{"token":"o","logprob":-0.25,"bytes":[111],"top_logprobs":[]}],"refusal":null},"finish_reason":null}]})";
    const auto v = seam.judge(reader.read(line, chat));
    REQUIRE(v.step == Step::cut);
    CHECK(v.cut.published == 0);
    CHECK(v.cut.cut_bytes == 3);
    CHECK(seam.reached());
    std::string out;
    REQUIRE(reader.rewrite(line, chat, v.cut, published.ids(), out));
    // The role and the tokens that start in "Hel" are gone; "o" stays, its
    // number as the provider wrote it.
    CHECK(out ==
          R"({"id":"chatcmpl-A","created":111,"system_fingerprint":"fp_A","choices":[{"index":0,"delta":{"content":"lo"},"logprobs":{"content":[{"token":"o","logprob":-0.25,"bytes":[111],"top_logprobs":[]}],"refusal":null},"finish_reason":null}]})");
    // Later lines go out whole, under the first stream's ids.
    const std::string next =
        R"({"id":"chatcmpl-B","created":222,"system_fingerprint":"fp_B","choices":[{"index":0,"delta":{"content":" w\u00f6rld"},"logprobs":{"content":[{"token":" w","logprob":-1.5E-3,"bytes":[32],"top_logprobs":[]}]},"finish_reason":null}]})";
    const auto v2 = seam.judge(reader.read(next, chat));
    CHECK(v2.step == Step::forward);
    out.clear();
    REQUIRE(reader.rewrite(next, chat, v2.cut, published.ids(), out));
    CHECK(out ==
          R"({"id":"chatcmpl-A","created":111,"system_fingerprint":"fp_A","choices":[{"index":0,"delta":{"content":" w\u00f6rld"},"logprobs":{"content":[{"token":" w","logprob":-1.5E-3,"bytes":[32],"top_logprobs":[]}]},"finish_reason":null}]})");
}

TEST_CASE("resume seam: completions logprobs are trimmed in all four arrays") {
    sse::ResumeReader reader;
    sse::PublishedAnswer published;
    const auto ep = policy::Endpoint::completions;
    published.add(copy_of(reader.read(R"({"id":"cmpl-A","created":1,"choices":[{"text":"ab","index":0}]})", ep)));
    sse::Seam seam(published);
    const std::string line =
        R"({"id":"cmpl-B","created":2,"choices":[{"text":"abcd","index":0,"logprobs":{"tokens":["a","bc","d"],"token_logprobs":[-1,-2,-3],"top_logprobs":[null,null,null],"text_offset":[0,1,3]},"finish_reason":null}]})";
    const auto v = seam.judge(reader.read(line, ep));
    REQUIRE(v.step == Step::cut);
    std::string out;
    REQUIRE(reader.rewrite(line, ep, v.cut, published.ids(), out));
    // "bc" starts inside the published "ab": dropped with "a".
    CHECK(out ==
          R"({"id":"cmpl-A","created":1,"choices":[{"text":"cd","index":0,"logprobs":{"tokens":["d"],"token_logprobs":[-3],"top_logprobs":[null],"text_offset":[3]},"finish_reason":null}]})");
}

TEST_CASE("resume seam: a tool call straddling the seam keeps its arguments, not its id or name") {
    sse::ResumeReader reader;
    sse::PublishedAnswer published;
    const auto chat = policy::Endpoint::chat_completions;
    published.add(copy_of(reader.read(
        R"({"id":"A","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"get","arguments":"{\"ci"}}]}}]})",
        chat)));
    sse::Seam seam(published);
    const std::string line =
        R"({"id":"B","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_B","type":"function","function":{"name":"get","arguments":"{\"city\":"}}]}}]})";
    const auto v = seam.judge(reader.read(line, chat));
    REQUIRE(v.step == Step::cut);
    CHECK(v.cut.published == 1);  // the name
    CHECK(v.cut.cut_bytes == 4);
    std::string out;
    REQUIRE(reader.rewrite(line, chat, v.cut, published.ids(), out));
    CHECK(out == R"({"id":"A","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":"}}]}}]})");
}

TEST_CASE("resume seam: a cut drops only the tool-call name the client has, not a second one past the cut") {
    sse::ResumeReader reader;
    sse::PublishedAnswer published;
    const auto chat = policy::Endpoint::chat_completions;
    published.add(copy_of(
        reader.read(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_A","function":{"name":"f"}}]}}]})", chat)));
    sse::Seam seam(published);
    // A duplicate member: the second name is a piece past the seam.
    const std::string line =
        R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_B","function":{"name":"f","name":"g"}}]}}]})";
    const auto v = seam.judge(reader.read(line, chat));
    REQUIRE(v.step == Step::cut);
    CHECK(v.cut.published == 1);
    CHECK(v.cut.cut_bytes == 0);
    std::string out;
    REQUIRE(reader.rewrite(line, chat, v.cut, published.ids(), out));
    CHECK(out == R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"g"}}]}}]})");
}

TEST_CASE("resume seam: a different function name, another choice or another text kind diverges") {
    sse::ResumeReader reader;
    const auto chat = policy::Endpoint::chat_completions;
    sse::PublishedAnswer published;
    published.add(copy_of(reader.read(
        R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"get","arguments":"{"}}]}}]})",
        chat)));
    {
        sse::Seam seam(published);
        CHECK(seam.judge(reader.read(
                  R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"put","arguments":"{"}}]}}]})",
                  chat))
                  .step == Step::diverged);
        // Spent: nothing after a divergence goes out.
        CHECK(seam.judge(reader.read(R"({"choices":[]})", chat)).step == Step::diverged);
        CHECK_FALSE(seam.reached());
    }
    {
        sse::Seam seam(published);
        CHECK(seam.judge(reader.read(R"({"choices":[{"index":1,"delta":{"content":"x"}}]})", chat)).step ==
              Step::diverged);
    }
    {
        sse::Seam seam(published);
        CHECK(seam.judge(reader.read(R"({"choices":[{"index":0,"delta":{"content":"get"}}]})", chat)).step ==
              Step::diverged);
    }
    // Events without answer text before the seam are dropped.
    {
        sse::Seam seam(published);
        CHECK(seam.judge(reader.read(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})", chat)).step ==
              Step::drop);
    }
}

TEST_CASE("resume seam: a line that is not JSON is read as such") {
    sse::ResumeReader reader;
    CHECK_FALSE(reader.read("{\"choices\":[", policy::Endpoint::chat_completions).json);
    CHECK_FALSE(reader.read("[1]", policy::Endpoint::chat_completions).json);
    CHECK(reader.read("[DONE]", policy::Endpoint::chat_completions).done);
    std::string out = "kept";
    CHECK_FALSE(reader.rewrite("{\"a\":", policy::Endpoint::chat_completions, {}, {}, out));
    CHECK(out == "kept");
}

TEST_CASE("resume seam: malformed JSON anywhere in a line, even where nothing is read, makes it not JSON") {
    // On-Demand alone is lazy: these once read as JSON (their answer text
    // published, their rewrites forwarded as they were or cut short).
    const auto chat = policy::Endpoint::chat_completions;
    const std::string content = R"({"choices":[{"index":0,"delta":{"content":"a"}}])";
    sse::ResumeReader reader;
    for (const std::string& line : {
             content + "}}",                                   // trailing content
             content + "} x",
             content + R"(,"usage":{"total_tokens":tru}})",   // a literal in a copied object
             content + R"(,"x":nul})",
             content + R"(,"created":01})",                    // numbers
             content + R"(,"usage":{"a":-}})",
             content + R"(,"x":[1,]})",                        // arrays
             content + R"(,"x":[1 2]})",
             content + R"(,"id":"\x"})",                       // an escape
             std::string(R"({"choices":[{"index":0x,"delta":{"content":"a"}}]})"),
         }) {
        INFO(line);
        const sse::ResumeLine& read = reader.read(line, chat);
        CHECK_FALSE(read.json);
        CHECK(read.pieces.empty());
        std::string out = "kept";
        CHECK_FALSE(reader.rewrite(line, chat, {}, {}, out));
        CHECK(out == "kept");
    }
    // Valid JSON simdjson cannot represent, escaped keys and whitespace
    // still read; the rewrite keeps every value's token.
    const std::string valid =
        R"({"usage" : {"a":1e400, "b" : [ 18446744073709551616 , {"\u0063":"\u00e9"} ]}, "choices":[{"index":0,"delta":{"content":"a"}}]} )";
    const sse::ResumeLine& read = reader.read(valid, chat);
    REQUIRE(read.json);
    REQUIRE(read.pieces.size() == 1);  // the content (usage beside choices is no mark)
    std::string out;
    REQUIRE(reader.rewrite(valid, chat, {}, {}, out));
    CHECK(out ==
          R"({"usage":{"a":1e400,"b":[18446744073709551616,{"c":"\u00e9"}]},"choices":[{"index":0,"delta":{"content":"a"}}]})");
}

TEST_CASE("resume seam: code points count characters, not bytes") {
    CHECK(sse::code_points("a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80") == 4);
    CHECK(sse::code_points("") == 0);
}

TEST_CASE("resume seam: usage on every chunk does not tie the seam to the event split") {
    sse::ResumeReader reader;
    sse::PublishedAnswer published;
    const auto chat = policy::Endpoint::chat_completions;
    const auto line = [](std::string_view text, int tokens) {
        return R"({"id":"X","choices":[{"index":0,"delta":{"content":")" + std::string(text) +
               R"("}}],"usage":{"completion_tokens":)" + std::to_string(tokens) + "}}";
    };
    for (const auto& l : {line("Hel", 1), line("lo", 2)}) published.add(copy_of(reader.read(l, chat)));
    sse::Seam seam(published);
    CHECK(seam.judge(reader.read(line("H", 1), chat)).step == Step::drop);
    const auto v = seam.judge(reader.read(line("ello wor", 2), chat));
    CHECK(v.step == Step::cut);
    CHECK(v.cut.cut_bytes == 4);
    CHECK(seam.reached());
    // The usage chunk that ends a stream (no choices) is a mark: its repeat
    // after the seam is what the client has not had yet.
    sse::PublishedAnswer with_end;
    with_end.add(copy_of(reader.read(line("Hi", 1), chat)));
    with_end.add(copy_of(reader.read(R"({"id":"X","choices":[],"usage":{"total_tokens":5}})", chat)));
    sse::Seam end_seam(with_end);
    CHECK(end_seam.judge(reader.read(line("Hi", 1), chat)).step == Step::drop);
    CHECK_FALSE(end_seam.reached());
    CHECK(end_seam.judge(reader.read(R"({"id":"Y","choices":[],"usage":{"total_tokens":5}})", chat)).step ==
          Step::drop);
    CHECK(end_seam.reached());
}
