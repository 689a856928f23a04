#include "soak/faults.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <tuple>

namespace modelproxy::soak {

using test::Script;
using test::SseEnd;
using test::SseOptions;

std::string turn_id(std::uint64_t turn) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "soak-t%08llu", static_cast<unsigned long long>(turn % 100000000u));
    return buffer;
}

bool parse_turn_id(std::string_view text, std::uint64_t& turn) {
    const auto at = text.find(turn_id_prefix);
    if (at == std::string_view::npos || text.size() < at + turn_id_prefix.size() + 8) return false;
    std::uint64_t value = 0;
    for (char c : text.substr(at + turn_id_prefix.size(), 8)) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    turn = value;
    return true;
}

namespace {

// Filler of a length that varies with the turn (0..1499 bytes), JSON-safe.
std::string filler(std::uint64_t turn) {
    static const std::string words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do ";
    std::string out;
    const std::size_t size = (turn * 37) % 1500;
    while (out.size() < size) out += words;
    out.resize(size);
    return out;
}

std::string sse_data(const std::string& json) { return "data: " + json + "\n\n"; }

std::string chunk_json(const std::string& id, const std::string& model, const std::string& delta,
                       const std::string& finish = "null") {
    return R"({"id":"chatcmpl-)" + id + R"(","object":"chat.completion.chunk","model":")" + model +
           R"(","choices":[{"index":0,"delta":)" + delta + R"(,"finish_reason":)" + finish + "}]}";
}

std::string role_event(const std::string& id) {
    return sse_data(chunk_json(id, id, R"({"role":"assistant","content":""})"));
}
std::string text_event(const std::string& id, const std::string& text, const std::string& model = {}) {
    return sse_data(chunk_json(id, model.empty() ? id : model, R"({"content":")" + text + R"("})"));
}
std::string finish_event(const std::string& id) { return sse_data(chunk_json(id, id, "{}", R"("stop")")); }
const std::string done_event = "data: [DONE]\n\n";

std::string error_body(const std::string& id, const std::string& type, const std::string& code = "null") {
    return R"({"error":{"message":"soak fault for )" + id + R"(","type":")" + type + R"(","code":)" + code + "}}";
}

// A whole-token secret of the default shapes (section 8), derived from the id.
std::string secret(const std::string& id) {
    std::string digits = id.substr(turn_id_prefix.size());
    return "sk-proj-SOAK" + digits + std::string(36, 'x');
}

Script status(unsigned code, const std::string& body, test::Headers headers = {}) {
    return Script::json(code, body, std::move(headers));
}

Expectation passed_on(unsigned code, std::string body, std::string cls, std::string decision, std::string bound,
                      int attempts) {
    Expectation e;
    e.shape = Shape::passed_on;
    e.status = code;
    e.body = std::move(body);
    e.error_class = std::move(cls);
    e.decision = std::move(decision);
    e.bound = std::move(bound);
    e.attempts = attempts;
    e.requests = attempts;
    return e;
}

Expectation envelope(unsigned code, std::string envelope_code, std::string cls, std::string decision,
                     std::string bound, int attempts, int requests) {
    Expectation e;
    e.shape = Shape::envelope;
    e.status = code;
    e.code = std::move(envelope_code);
    e.error_class = std::move(cls);
    e.decision = std::move(decision);
    e.bound = std::move(bound);
    e.attempts = attempts;
    e.requests = requests;
    return e;
}

Expectation refusal(const std::string& code) { return envelope(502, code, "", "", "", 1, 1); }

Expectation stream_closing(std::string published, std::string type) {
    Expectation e;
    e.shape = Shape::stream_closing;
    e.body = std::move(published);
    e.code = std::move(type);
    e.attempts = 1;
    e.requests = 1;
    return e;
}

Expectation stream_exact(std::string body) {
    Expectation e;
    e.shape = Shape::stream_exact;
    e.body = std::move(body);
    e.attempts = 1;
    e.requests = 1;
    return e;
}

Script sse(std::vector<std::string> events, SseEnd end = SseEnd::finish) {
    SseOptions options;
    options.end = end;
    return Script::sse(std::move(events), options);
}

// The head and half of the success JSON, announced whole by Content-Length.
std::string half_json(const std::string& id, std::uint64_t turn) {
    const std::string body = success_json(id, turn);
    return test::format_response_head(200, {{"Content-Type", "application/json"},
                                            {"Content-Length", std::to_string(body.size())}}) +
           body.substr(0, body.size() / 2);
}


// Continuing a cut stream (docs/behaviour.md section 16). A resume case's
// answer, all derived from the turn: its text, the first stream's split of
// it and the cut, the replay's different split of the same text (never a
// boundary at the seam, so one replay event always straddles it), and the
// bytes the client gets when the replay continues the stream.
namespace resume {

const std::string model(resume_model);

// The first stream's ids, and the replay's own: the client must only ever
// see the first ones.
struct Ids {
    std::string id, created, fingerprint;  // raw JSON tokens
};
Ids first_ids(const std::string& id, std::uint64_t turn) {
    return {"\"chatcmpl-" + id + "\"", std::to_string(1700000000 + turn % 100000000u), "\"fp_" + id + "_a\""};
}
Ids replay_ids(const std::string& id, std::uint64_t turn) {
    return {"\"chatcmpl-" + id + "-replay\"", std::to_string(1800000000 + turn % 100000000u),
            "\"fp_" + id + "_b\""};
}

// JSON string escaping as the proxy's rewrite writes a cut text (quote,
// backslash, control characters escaped; UTF-8 as it is), so a straddling
// event's expected bytes are exactly what the seam rewrite gives.
std::string quoted(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (u < 0x20) out += std::string("\\u00") + hex[u >> 4] + hex[u & 15];
        else out += c;
    }
    return out + "\"";
}

std::string chunk(const Ids& ids, const std::string& delta, const std::string& finish = "null") {
    return sse_data(R"({"id":)" + ids.id + R"(,"object":"chat.completion.chunk","created":)" + ids.created +
                    R"(,"model":")" + model + R"(","system_fingerprint":)" + ids.fingerprint +
                    R"(,"choices":[{"index":0,"delta":)" + delta + R"(,"logprobs":null,"finish_reason":)" + finish +
                    "}]}");
}
std::string role(const Ids& ids) { return chunk(ids, R"({"role":"assistant","content":""})"); }
std::string text(const Ids& ids, std::string_view words) { return chunk(ids, R"({"content":)" + quoted(words) + "}"); }
std::string role_text(const Ids& ids, std::string_view words) {
    return chunk(ids, R"({"role":"assistant","content":)" + quoted(words) + "}");
}
std::string finish(const Ids& ids) { return chunk(ids, "{}", R"("stop")"); }

std::uint64_t code_points(std::string_view utf8) {
    std::uint64_t n = 0;
    for (const char c : utf8)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

// The next offset at or after `at` that starts a character.
std::size_t char_boundary(const std::string& text, std::size_t at) {
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
    return std::min(at, text.size());
}

// Event boundaries every `step` bytes (moved to character starts), ending
// at the text's end, leaving out `avoid`.
std::vector<std::size_t> split(const std::string& text, std::size_t step, std::size_t avoid = 0) {
    std::vector<std::size_t> ends;
    for (std::size_t at = step; at < text.size(); at += step) {
        const std::size_t b = char_boundary(text, at);
        if (b < text.size() && b != avoid && (ends.empty() || b > ends.back())) ends.push_back(b);
    }
    ends.push_back(text.size());
    return ends;
}

struct Plan {
    std::string text;               // the whole answer, decoded
    std::vector<std::size_t> first;   // the first stream's event ends in `text`
    std::size_t published = 0;        // the first stream's text events sent before the cut
    std::size_t seam = 0;             // bytes of `text` they hold
    std::vector<std::size_t> replay;  // the replay's event ends; none at `seam`
    bool role_carries_text = false;   // the replay's first text rides in its role event
};

Plan plan(const std::string& id, std::uint64_t turn) {
    Plan p;
    // Quotes, an escaped newline and two- and three-byte characters, so the
    // seam is found in decoded text and resume_offset counts code points.
    // At most 500 bytes of filler: split in small events, a longer answer
    // would be a stream of hundreds of events that soaks nothing more.
    p.text = "resumed answer for " + id + ": na\u00efve caf\u00e9, \u201cquoted\u201d \"x\" and a line\nbreak; " +
             filler(turn).substr(0, turn % 500) + " end of " + id;
    p.first = split(p.text, 16 + turn % 29);
    // At least one event published, at least one left unsaid.
    p.published = 1 + static_cast<std::size_t>(turn / 7 % (p.first.size() - 1));
    p.seam = p.first[p.published - 1];
    p.replay = split(p.text, 9 + turn % 23, p.seam);
    p.role_carries_text = turn % 2 == 1;
    // Now and then the role event itself straddles the seam: the client
    // must get its unpublished text without a second role.
    if (turn % 4 == 1) std::erase_if(p.replay, [&](std::size_t end) { return end <= p.seam; });
    return p;
}

// The replay's events from the first text on: the split `ends` of `text`.
std::vector<std::string> text_events(const Ids& ids, const std::string& answer, const std::vector<std::size_t>& ends,
                                     bool role_carries_text) {
    std::vector<std::string> events;
    if (!role_carries_text) events.push_back(role(ids));
    std::size_t from = 0;
    for (const std::size_t end : ends) {
        const std::string_view words = std::string_view(answer).substr(from, end - from);
        events.push_back(events.empty() ? role_text(ids, words) : text(ids, words));
        from = end;
    }
    return events;
}

// The first stream's published events: what the client has at the cut.
std::string published(const std::string& id, std::uint64_t turn) {
    const Plan p = plan(id, turn);
    const Ids a = first_ids(id, turn);
    std::string out = role(a);
    std::size_t from = 0;
    for (std::size_t i = 0; i < p.published; ++i) {
        out += text(a, std::string_view(p.text).substr(from, p.first[i] - from));
        from = p.first[i];
    }
    return out;
}

// How the first stream breaks after its published events (section 16's
// "when"): a reset, a clean close without [DONE], a truncated chunked body,
// or (`error_event`) a server-class error event.
Script cut(const std::string& id, std::uint64_t turn, bool error_event) {
    const Plan p = plan(id, turn);
    const Ids a = first_ids(id, turn);
    std::vector<std::string> events{published(id, turn)};
    const int how = static_cast<int>(turn / 3 % (error_event ? 4 : 3));
    if (how == 3) {
        events.push_back(sse_data(R"({"error":{"type":"server_error","code":500,"message":"cut )" + id + R"("}})"));
        events.push_back(done_event);
        return sse(std::move(events));
    }
    const SseEnd end = how == 0 ? SseEnd::reset : how == 1 ? SseEnd::finish : SseEnd::close;
    if (end != SseEnd::finish && turn % 2 == 0) {
        // Half of the next event, never terminated: not an event, not published.
        const std::string next = text(a, std::string_view(p.text).substr(p.seam, p.first[p.published] - p.seam));
        events.push_back(next.substr(0, next.size() / 2));
    }
    return sse(std::move(events), end);
}

// The replay stream's bytes, re-chunked at a turn-dependent size so its
// events also cross the proxy's reads mid-line.
Script replay(std::vector<std::string> events, std::uint64_t turn, SseEnd end = SseEnd::finish) {
    std::string all;
    for (const auto& e : events) all += e;
    const std::size_t size = 40 + turn % 200;
    std::vector<std::string> chunks;
    for (std::size_t at = 0; at < all.size(); at += size) chunks.push_back(all.substr(at, size));
    return sse(std::move(chunks), end);
}

// The replay that says the same answer, split its own way, under its own ids.
Script same_answer(const std::string& id, std::uint64_t turn) {
    const Plan p = plan(id, turn);
    const Ids b = replay_ids(id, turn);
    auto events = text_events(b, p.text, p.replay, p.role_carries_text);
    events.push_back(finish(b));
    events.push_back(done_event);
    return replay(std::move(events), turn);
}

// What the client must get when the replay continues the stream: the
// published events, then the replay's from the seam on, the straddling one
// cut to its unpublished text (and without the role the client has), all
// under the first stream's ids.
std::string continued_body(const std::string& id, std::uint64_t turn) {
    const Plan p = plan(id, turn);
    const Ids a = first_ids(id, turn);
    std::string out = published(id, turn);
    std::size_t from = 0;
    for (const std::size_t end : p.replay) {
        const std::size_t start = std::max(from, p.seam);
        if (end > p.seam) out += text(a, std::string_view(p.text).substr(start, end - start));
        from = end;
    }
    return out + finish(a) + done_event;
}

// A replay that says something else within the published text: one
// character changed, or a complete answer that ends before the seam.
Script other_answer(const std::string& id, std::uint64_t turn) {
    const Plan p = plan(id, turn);
    const Ids b = replay_ids(id, turn);
    std::string said = p.text;
    std::vector<std::size_t> ends = p.replay;
    if (turn / 5 % 2 == 0) {
        std::size_t at = turn * 7919 % p.seam;
        while (!std::isalnum(static_cast<unsigned char>(said[at]))) at = (at + 1) % p.seam;
        said[at] = said[at] == 'X' ? 'Y' : 'X';
    } else {
        // The last whole character before the seam is left unsaid.
        std::size_t end = p.seam - 1;
        while (end > 0 && (static_cast<unsigned char>(said[end]) & 0xC0) == 0x80) --end;
        said.resize(end);
        std::vector<std::size_t> shorter;
        for (const std::size_t e : ends)
            if (e < said.size()) shorter.push_back(e);
        shorter.push_back(said.size());
        ends = std::move(shorter);
    }
    auto events = text_events(b, said, ends, p.role_carries_text);
    events.push_back(finish(b));
    events.push_back(done_event);
    return replay(std::move(events), turn);
}

// A replay that breaks before it reaches the seam: a reset after the
// events wholly before it, a 503, or silence until the idle timeout.
Script broken_replay(const std::string& id, std::uint64_t turn) {
    const Plan p = plan(id, turn);
    const Ids b = replay_ids(id, turn);
    const int how = static_cast<int>(turn / 5 % 3);
    if (how == 1) return status(503, error_body(id, "server_error"));
    std::vector<std::size_t> before;
    for (const std::size_t e : p.replay)
        if (e < p.seam) before.push_back(e);
    std::vector<std::string> events{role(b)};
    std::size_t from = 0;
    for (const std::size_t end : before) {
        events.push_back(text(b, std::string_view(p.text).substr(from, end - from)));
        from = end;
    }
    return replay(std::move(events), turn, how == 0 ? SseEnd::reset : SseEnd::hang);
}

}  // namespace resume

}  // namespace

std::string request_body(const std::string& id, bool stream, std::string_view model, bool deterministic) {
    std::string body = R"({"model":")" + (model.empty() ? id : std::string(model)) + "\"";
    if (stream) body += R"(,"stream":true)";
    if (deterministic) body += R"(,"temperature":0)";
    body += R"(,"messages":[{"role":"user","content":"turn )" + id + R"("}]})";
    return body;
}

std::string success_json(const std::string& id, std::uint64_t turn) {
    return R"({"id":"chatcmpl-)" + id + R"(","object":"chat.completion","model":")" + id +
           R"(","choices":[{"index":0,"message":{"role":"assistant","content":"answer for )" + id + " " +
           filler(turn) +
           R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}})";
}

std::vector<std::string> success_stream(const std::string& id, std::uint64_t turn) {
    return {role_event(id), text_event(id, "answer for " + id), text_event(id, " " + filler(turn)),
            text_event(id, " end of " + id), finish_event(id), done_event};
}

Script success_script(const std::string& id, std::uint64_t turn, bool stream) {
    return stream ? Script::sse(success_stream(id, turn)) : Script::json(200, success_json(id, turn));
}

std::string turn_request(const FaultCase* fault, const std::string& id, bool stream) {
    if (fault && fault->refused_route) return request_body(id, stream, refused_model);
    if (fault && !fault->resume.empty()) return request_body(id, stream, resume_model, fault->resume != "skipped");
    return request_body(id, stream);
}

Expectation expect_success(const std::string& id, std::uint64_t turn, bool stream, int requests) {
    Expectation e;
    e.shape = Shape::ok;
    if (stream) {
        for (const auto& event : success_stream(id, turn)) e.body += event;
    } else {
        e.body = success_json(id, turn);
    }
    e.requests = requests;
    return e;
}

std::vector<FaultCase> fault_cases(const Bounds& bounds) {
    std::vector<FaultCase> cases;
    using S = const std::string&;
    using T = std::uint64_t;
    auto success_after = [](S id, T turn, bool stream, int k) { return expect_success(id, turn, stream, k + 1); };
    // Retryable, k times then the success (sections 5 and 7: replayed in the turn).
    auto transient = [&](std::string name, Kinds kinds,
                         std::function<Script(S id, T turn, bool stream, int n)> script) {
        cases.push_back({std::move(name), kinds, true, false, std::move(script), success_after});
    };
    auto terminal = [&](std::string name, Kinds kinds, std::function<Script(S, T, bool, int)> script,
                        std::function<Expectation(S, T, bool, int)> expectation) {
        cases.push_back({std::move(name), kinds, false, false, std::move(script), std::move(expectation)});
    };
    const int max = bounds.max_attempts;
    const int throttled = bounds.throttled_max_attempts;

    for (unsigned code : {408u, 425u, 500u, 502u, 504u, 529u})
        transient("http " + std::to_string(code), Kinds::both,
                  [code](S id, T, bool, int) { return status(code, error_body(id, "server_error")); });
    transient("http 429 retry-after 0", Kinds::both, [](S id, T, bool, int) {
        return status(429, error_body(id, "requests", R"("rate_limit_exceeded")"), {{"Retry-After", "0"}});
    });
    transient("http 503 retry-after-ms 3", Kinds::both, [](S id, T, bool, int) {
        return status(503, error_body(id, "server_error"), {{"retry-after-ms", "3"}});
    });
    transient("reset before the head", Kinds::both, [](S, T, bool, int) { return Script{}.reset(); });
    transient("closed before the head", Kinds::both, [](S, T, bool, int) { return Script::refuse_head_then_close(); });
    transient("reset mid-body", Kinds::plain, [](S id, T turn, bool, int) { return Script::reset_mid_body(half_json(id, turn)); });
    transient("closed mid-body", Kinds::plain, [](S id, T turn, bool, int) {
        return Script{}.write(half_json(id, turn)).close();
    });
    transient("stream reset before answer text", Kinds::stream,
              [](S id, T, bool, int) { return sse({role_event(id)}, SseEnd::reset); });
    transient("stream clean end before answer text", Kinds::stream,
              [](S id, T, bool, int) { return sse({role_event(id)}); });
    transient("stream idle before answer text", Kinds::stream,
              [](S id, T, bool, int) { return sse({role_event(id)}, SseEnd::hang); });
    transient("stream error event code 503", Kinds::stream, [](S id, T, bool, int) {
        return sse({role_event(id), sse_data(R"({"error":{"code":503,"message":"overloaded )" + id + R"("}})")});
    });
    transient("stream error event type server_error", Kinds::stream, [](S id, T, bool, int) {
        return sse({sse_data(R"({"error":{"type":"server_error","message":")" + id + R"("}})")});
    });

    // Repeated past the bounds (section 6).
    terminal("http 503 forever", Kinds::both, [](S id, T, bool, int) { return status(503, error_body(id, "server_error")); },
             [max](S id, T, bool, int) { return passed_on(503, error_body(id, "server_error"), "server", "exhausted", "max_attempts", max); });
    const auto limited = [](S id) { return error_body(id, "requests", R"("rate_limit_exceeded")"); };
    terminal("http 429 forever", Kinds::both, [limited](S id, T, bool, int) { return status(429, limited(id)); },
             [limited, throttled](S id, T, bool, int) {
                 return passed_on(429, limited(id), "rate-limit", "exhausted", "throttled_max_attempts", throttled);
             });
    terminal("5 x 429 then 503 forever", Kinds::both,
             [limited](S id, T, bool, int n) { return n <= 5 ? status(429, limited(id)) : status(503, error_body(id, "server_error")); },
             [](S id, T, bool, int) { return passed_on(503, error_body(id, "server_error"), "server", "exhausted", "max_attempts", 6); });
    terminal("reset before the head forever", Kinds::both, [](S, T, bool, int) { return Script{}.reset(); },
             [max](S, T, bool, int) { return envelope(502, "", "network", "exhausted", "max_attempts", max, -1); });
    terminal("reset mid-body forever", Kinds::plain,
             [](S id, T turn, bool, int) { return Script::reset_mid_body(half_json(id, turn)); },
             [max](S, T, bool, int) { return envelope(502, "", "network", "exhausted", "max_attempts", max, max); });
    terminal("stream clean end before answer text forever", Kinds::stream, [](S id, T, bool, int) { return sse({role_event(id)}); },
             [max](S, T, bool, int) { return envelope(502, "", "stream-incomplete", "exhausted", "max_attempts", max, max); });
    cases.push_back({"connect refused forever", Kinds::both, false, true, [](S, T, bool, int) { return Script{}; },
                     [max](S, T, bool, int) { return envelope(502, "", "network", "exhausted", "max_attempts", max, 0); }});

    // Terminal statuses: passed on after one request (sections 5 and 9).
    const std::vector<std::tuple<unsigned, std::string, std::string>> terminal_statuses{
        {400, "invalid_request_error", "invalid-request"}, {401, "invalid_request_error", "authentication"},
        {403, "invalid_request_error", "authentication"},  {404, "invalid_request_error", "not-found"},
        {409, "invalid_request_error", "client"},          {422, "invalid_request_error", "invalid-request"}};
    for (const auto& [code, type, cls] : terminal_statuses) {
        terminal("http " + std::to_string(code), Kinds::both,
                 [code, type](S id, T, bool, int) { return status(code, error_body(id, type)); },
                 [code, type, cls](S id, T, bool, int) { return passed_on(code, error_body(id, type), cls, "terminal", "-", 1); });
    }
    terminal("http 400 content_filter", Kinds::both,
             [](S id, T, bool, int) { return status(400, error_body(id, "invalid_request_error", R"("content_filter")")); },
             [](S id, T, bool, int) {
                 return passed_on(400, error_body(id, "invalid_request_error", R"("content_filter")"), "content-filter", "terminal", "-", 1);
             });

    // Deadline (section 6): a hanging upstream is cut at timeout_ms.
    terminal("upstream hang until the deadline", Kinds::plain, [](S, T, bool, int) { return Script{}.hang(); },
             [](S, T, bool, int) { return envelope(504, "", "timeout", "deadline", "deadline", 1, 1); });

    // The response boundary (section 8): refused, never replayed.
    terminal("model identity mismatch", Kinds::plain, [](S id, T turn, bool, int) {
        std::string body = success_json(id, turn);
        body.replace(body.find(R"("model":")" + id), 9 + id.size(), R"("model":"gpt-4o-other)");
        return status(200, body);
    }, [](S, T, bool, int) { return refusal("model_identity_mismatch"); });
    terminal("stream model identity mismatch", Kinds::stream,
             [](S id, T, bool, int) { return sse({text_event(id, "hello", "gpt-4o-other"), done_event}); },
             [](S, T, bool, int) { return refusal("model_identity_mismatch"); });
    terminal("credential in a body", Kinds::plain, [](S id, T, bool, int) {
        return status(200, R"({"id":"x","object":"chat.completion","model":")" + id +
                               R"(","choices":[{"index":0,"message":{"role":"assistant","content":"key )" + secret(id) +
                               R"("},"finish_reason":"stop"}]})");
    }, [](S, T, bool, int) { return refusal("credential_in_response"); });
    terminal("credential in a stream", Kinds::stream,
             [](S id, T, bool, int) { return sse({role_event(id), text_event(id, "key " + secret(id)), done_event}); },
             [](S, T, bool, int) { return refusal("credential_in_response"); });
    terminal("json answer to a stream request", Kinds::stream,
             [](S id, T turn, bool, int) { return status(200, success_json(id, turn)); },
             [](S, T, bool, int) { return refusal("not_a_stream"); });
    terminal("empty stream", Kinds::stream, [](S, T, bool, int) { return sse({}); },
             [](S, T, bool, int) { return refusal("empty_stream"); });
    terminal("unparseable event", Kinds::stream, [](S id, T, bool, int) { return sse({role_event(id), "data: {oops\n\n"}); },
             [](S, T, bool, int) { return refusal("unparseable_event"); });

    // After answer text was published (section 7): never replayed.
    const auto published = [](S id) { return role_event(id) + text_event(id, "partial " + id); };
    const auto after_text = [&](std::string name, SseEnd end) {
        terminal(std::move(name), Kinds::stream,
                 [end](S id, T, bool, int) { return sse({role_event(id), text_event(id, "partial " + id)}, end); },
                 [published](S id, T, bool, int) { return stream_closing(published(id), "stream_incomplete"); });
    };
    after_text("stream reset after answer text", SseEnd::reset);
    after_text("stream clean end after answer text", SseEnd::finish);
    after_text("stream idle after answer text", SseEnd::hang);
    terminal("stream foreign model after answer text", Kinds::stream,
             [](S id, T, bool, int) {
                 return sse({role_event(id), text_event(id, "partial " + id), text_event(id, "x", "gpt-4o-other"), done_event});
             },
             [published](S id, T, bool, int) { return stream_closing(published(id), "model_identity_mismatch"); });
    const auto server_event = [](S id) { return sse_data(R"({"error":{"type":"server_error","code":500,"message":")" + id + R"("}})"); };
    terminal("stream error event after answer text", Kinds::stream,
             [server_event](S id, T, bool, int) {
                 return sse({role_event(id), text_event(id, "partial " + id), server_event(id), done_event});
             },
             [published, server_event](S id, T, bool, int) { return stream_exact(published(id) + server_event(id)); });
    const auto quota_event = [](S id) { return sse_data(R"({"error":{"code":429,"message":"quota )" + id + R"("}})"); };
    terminal("stream error event code 429", Kinds::stream,
             [quota_event](S id, T, bool, int) { return sse({quota_event(id)}); },
             [quota_event](S id, T, bool, int) { return stream_exact(quota_event(id)); });

    // Continuing a cut stream (section 16), on the resume route: a stream
    // cut after answer text is asked again; a replay that says the same
    // answer continues it invisibly, one that diverges or breaks before the
    // seam ends it with the closing event as section 7 would, never spliced;
    // a request without temperature 0 is not resumed at all.
    const auto on_resume_route = [&](std::string name, std::string result, std::function<Script(S, T, bool, int)> script,
                                     std::function<Expectation(S, T, bool, int)> expectation) {
        cases.push_back({std::move(name), Kinds::stream, false, false, std::move(script), std::move(expectation),
                         std::move(result)});
    };
    const auto offset = [](S id, T turn) {
        const resume::Plan p = resume::plan(id, turn);
        return static_cast<std::int64_t>(resume::code_points(std::string_view(p.text).substr(0, p.seam)));
    };
    // The closing event after the published events, the resume's request
    // sent after the head.
    const auto abandoned = [offset](S id, T turn) {
        Expectation e = stream_closing(resume::published(id, turn), "stream_incomplete");
        e.requests = 2;
        e.unheaded = 1;
        e.resume_offset = offset(id, turn);
        return e;
    };
    on_resume_route("cut-resumed", "continued",
                    [](S id, T turn, bool, int n) { return n == 1 ? resume::cut(id, turn, true) : resume::same_answer(id, turn); },
                    [offset](S id, T turn, bool, int) {
                        Expectation e;
                        e.shape = Shape::resumed;
                        e.body = resume::continued_body(id, turn);
                        e.text = resume::plan(id, turn).text;
                        const resume::Ids a = resume::first_ids(id, turn);
                        e.first_id = a.id;
                        e.first_created = a.created;
                        e.first_fingerprint = a.fingerprint;
                        e.attempts = 1;
                        e.requests = 2;
                        e.unheaded = 1;
                        e.resume_offset = offset(id, turn);
                        e.resumed = 1;
                        return e;
                    });
    on_resume_route("cut-diverged", "diverged",
                    [](S id, T turn, bool, int n) { return n == 1 ? resume::cut(id, turn, false) : resume::other_answer(id, turn); },
                    [abandoned](S id, T turn, bool, int) { return abandoned(id, turn); });
    on_resume_route("cut-broken", "broken",
                    [](S id, T turn, bool, int n) { return n == 1 ? resume::cut(id, turn, false) : resume::broken_replay(id, turn); },
                    [abandoned](S id, T turn, bool, int) { return abandoned(id, turn); });
    on_resume_route("cut-skipped", "skipped",
                    [](S id, T turn, bool, int n) { return n == 1 ? resume::cut(id, turn, false) : resume::same_answer(id, turn); },
                    [](S id, T turn, bool, int) { return stream_closing(resume::published(id, turn), "stream_incomplete"); });
    return cases;
}

}  // namespace modelproxy::soak
