#include "soak/faults.hpp"

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

}  // namespace

std::string request_body(const std::string& id, bool stream, std::string_view model) {
    std::string body = R"({"model":")" + (model.empty() ? id : std::string(model)) + "\"";
    if (stream) body += R"(,"stream":true)";
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
    return cases;
}

}  // namespace modelproxy::soak
