#include "soak/check.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>

namespace modelproxy::soak {

namespace {

namespace json = boost::json;

std::string show(const std::optional<std::string>& value) { return value ? "'" + *value + "'" : "(absent)"; }

std::optional<int> integer(const std::optional<std::string>& text) {
    if (!text) return std::nullopt;
    int value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc{} || end != text->data() + text->size()) return std::nullopt;
    return value;
}

std::string str(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    if (!v) return "(absent)";
    if (v->is_string()) return std::string(v->as_string());
    if (v->is_null()) return "(null)";
    return json::serialize(*v);
}

// Collects differences; the first few make the verdict's reason.
struct Differences {
    std::string text;
    void expect(bool ok, const std::string& what) {
        if (ok) return;
        if (!text.empty()) text += "; ";
        text += what;
    }
    // `want` "" = not checked; "-" = none (absent or null) expected.
    void field(std::string_view name, const std::string& got, const std::string& want) {
        if (want.empty()) return;
        const bool ok = want == "-" ? (got == "(absent)" || got == "(null)") : got == want;
        expect(ok, std::string(name) + " " + got + ", want " + want);
    }
};

// The error object of a JSON body, or null when it is not one.
std::optional<json::object> error_object(std::string_view body) {
    json::error_code ec;
    const json::value doc = json::parse(body, ec);
    if (ec || !doc.is_object()) return std::nullopt;
    const auto* error = doc.as_object().if_contains("error");
    if (!error || !error->is_object()) return std::nullopt;
    return error->as_object();
}

// A chat stream as an SDK reads it: the answer text joined, the end
// marker, and the chunks whose ids are not the ones given.
struct StreamView {
    bool parsed = true;
    std::string bad;
    std::string text;
    int done = 0, finishes = 0, roles = 0, errors = 0, chunks = 0;
    int foreign_ids = 0;
    std::string first_foreign;
};

StreamView stream_view(std::string_view body, const Expectation& e) {
    StreamView v;
    for (std::size_t at = body.find("data: "); at != std::string_view::npos; at = body.find("data: ", at)) {
        const std::size_t end = std::min(body.find('\n', at), body.size());
        const std::string_view data = body.substr(at + 6, end - at - 6);
        at = end;
        if (data == "[DONE]") {
            ++v.done;
            continue;
        }
        json::error_code ec;
        const json::value doc = json::parse(data, ec);
        if (ec || !doc.is_object()) {
            if (v.parsed) v.bad = std::string(data);
            v.parsed = false;
            continue;
        }
        const auto& o = doc.as_object();
        if (o.contains("error")) {
            ++v.errors;
            continue;
        }
        ++v.chunks;
        const auto raw = [&](std::string_view key) {
            const auto* value = o.if_contains(key);
            return value ? json::serialize(*value) : std::string("(absent)");
        };
        if (raw("id") != e.first_id || raw("created") != e.first_created ||
            raw("system_fingerprint") != e.first_fingerprint) {
            if (v.foreign_ids++ == 0) v.first_foreign = raw("id") + " " + raw("created") + " " + raw("system_fingerprint");
        }
        const auto* choices = o.if_contains("choices");
        if (!choices || !choices->is_array()) continue;
        for (const auto& c : choices->as_array()) {
            if (!c.is_object()) continue;
            const auto& choice = c.as_object();
            if (const auto* f = choice.if_contains("finish_reason"); f && f->is_string()) ++v.finishes;
            const auto* delta = choice.if_contains("delta");
            if (!delta || !delta->is_object()) continue;
            if (delta->as_object().contains("role")) ++v.roles;
            if (const auto* content = delta->as_object().if_contains("content"); content && content->is_string())
                v.text += content->as_string();
        }
    }
    return v;
}

}  // namespace

int foreign_ids(std::string_view wire, const std::string& id) {
    int count = 0;
    for (auto at = wire.find(turn_id_prefix); at != std::string_view::npos;
         at = wire.find(turn_id_prefix, at + 1)) {
        if (wire.compare(at, id.size(), id) == 0) continue;
        std::uint64_t turn = 0;
        if (parse_turn_id(wire.substr(at), turn)) ++count;
    }
    return count;
}

Verdict judge(const test::Response& r, const Expectation& e, const std::string& id, bool stream,
              const UpstreamCount& upstream, bool refused_route) {
    Verdict v;
    if (!r.ok()) {
        v.why = "incomplete response (" + r.error.message() + "), status " + std::to_string(r.status);
        return v;
    }
    Differences d;
    d.expect(r.status == e.status, "status " + std::to_string(r.status) + ", want " + std::to_string(e.status));
    d.expect(r.header("x-modelproxy-request-id") == id, "x-modelproxy-request-id " + show(r.header("x-modelproxy-request-id")));

    // Attempts: the table's number, and what reached the provider (less free
    // resends, and less a resume's requests sent after the head went out)
    // must be what the proxy counted.
    const std::optional<int> attempts = integer(r.header("x-modelproxy-attempts"));
    const int counted = upstream.requests - upstream.free - e.unheaded;
    const int want_attempts = e.attempts >= 0 ? e.attempts : counted;
    d.expect(attempts == want_attempts,
             "x-modelproxy-attempts " + show(r.header("x-modelproxy-attempts")) + ", want " + std::to_string(want_attempts));
    if (!refused_route)
        d.expect(attempts == counted, "provider saw " + std::to_string(upstream.requests) + " requests (" +
                                          std::to_string(upstream.free) + " free resends), proxy counted " +
                                          show(r.header("x-modelproxy-attempts")));
    if (e.requests >= 0)
        d.expect(upstream.requests == e.requests, "provider saw " + std::to_string(upstream.requests) +
                                                       " requests, want " + std::to_string(e.requests));
    if (stream && r.status == 200)
        d.expect(r.header("content-type") == "text/event-stream", "content-type " + show(r.header("content-type")));
    if (e.shape != Shape::ok && e.shape != Shape::stream_closing && e.shape != Shape::stream_exact &&
        e.shape != Shape::resumed)
        d.expect(r.header_count("x-should-retry") == 1 && r.header("x-should-retry") == "false",
                 "x-should-retry " + show(r.header("x-should-retry")));

    const std::string shown_attempts = r.header("x-modelproxy-attempts").value_or("?");
    switch (e.shape) {
    case Shape::ok:
        d.expect(r.body == e.body, "body differs from the turn's success bytes");
        v.label = attempts == 1 ? "ok" : "ok after replay";
        break;
    case Shape::passed_on: {
        d.expect(r.body == e.body, "body differs from the upstream's error body");
        const auto header = [&](std::string_view name) { return r.header(name).value_or("(absent)"); };
        d.field("x-modelproxy-error-class", header("x-modelproxy-error-class"), e.error_class);
        d.field("x-modelproxy-decision", header("x-modelproxy-decision"), e.decision);
        d.field("x-modelproxy-bound", header("x-modelproxy-bound"), e.bound);
        v.label = std::to_string(r.status) + " passed on: " + header("x-modelproxy-error-class") + ", " +
                  header("x-modelproxy-decision");
        if (r.header("x-modelproxy-bound")) v.label += " (" + header("x-modelproxy-bound") + ")";
        break;
    }
    case Shape::envelope: {
        const auto error = error_object(r.body);
        if (!error) {
            d.expect(false, "body is not an error envelope");
            break;
        }
        d.field("code", str(*error, "code"), e.code);
        d.field("class", str(*error, "class"), e.error_class);
        d.field("decision", str(*error, "decision"), e.decision);
        d.field("bound", str(*error, "bound"), e.bound);
        d.field("attempts", str(*error, "attempts"), std::to_string(want_attempts));
        v.label = std::to_string(r.status) + " " + str(*error, "code") + ": " + str(*error, "class") + ", " +
                  str(*error, "decision");
        if (const auto* b = error->if_contains("bound"); b && b->is_string()) v.label += " (" + str(*error, "bound") + ")";
        break;
    }
    case Shape::stream_closing: {
        d.expect(r.body.compare(0, e.body.size(), e.body) == 0, "the published events differ");
        d.expect(r.body.find("[DONE]") == std::string::npos, "a [DONE] after a failure");
        const std::string tail = r.body.size() > e.body.size() ? r.body.substr(e.body.size()) : "";
        const bool one_event = tail.rfind("data: ", 0) == 0 && tail.find("data: ", 1) == std::string::npos &&
                               tail.size() > 8 && tail.compare(tail.size() - 2, 2, "\n\n") == 0;
        d.expect(one_event, "not exactly one closing event after the published bytes: '" + tail.substr(0, 200) + "'");
        const auto error = one_event ? error_object(std::string_view(tail).substr(6)) : std::nullopt;
        if (!error) {
            d.expect(false, "closing event is not an error object");
            break;
        }
        d.field("closing type", str(*error, "type"), e.code);
        d.field("closing code", str(*error, "code"), "502");
        // The closing event is written at the end: it counts a resume's attempt.
        d.field("closing attempts", str(*error, "attempts"), std::to_string(want_attempts + e.unheaded));
        v.label = "200 stream + closing event " + str(*error, "type");
        break;
    }
    case Shape::stream_exact:
        d.expect(r.body == e.body, "body differs from the upstream's error event stream");
        v.label = "200 stream holding the upstream error event";
        break;
    case Shape::resumed: {
        // The exact bytes say it all; what an SDK would notice is named
        // first, so a wrong body says how it is wrong.
        const StreamView s = stream_view(r.body, e);
        d.expect(s.parsed, "a data line is not JSON: " + s.bad.substr(0, 200));
        d.expect(s.text == e.text, "the answer text differs from the whole answer (" + std::to_string(s.text.size()) +
                                       " bytes, want " + std::to_string(e.text.size()) + ")");
        d.expect(s.done == 1, std::to_string(s.done) + " [DONE], want 1");
        d.expect(s.finishes == 1, std::to_string(s.finishes) + " finish_reason, want 1");
        d.expect(s.roles == 1, std::to_string(s.roles) + " role deltas, want 1");
        d.expect(s.errors == 0, "an error event");
        d.expect(s.foreign_ids == 0, std::to_string(s.foreign_ids) + " chunks not under the first stream's id " +
                                         e.first_id + ", created " + e.first_created + ", system_fingerprint " +
                                         e.first_fingerprint + " (first seen: " + s.first_foreign + ")");
        d.expect(s.chunks > 0, "no chunk");
        d.expect(r.body == e.body, "body differs from the uncut answer's bytes after the seam rewrite");
        v.label = "200 stream continued by a resume";
        break;
    }
    }
    v.right = d.text.empty();
    if (!v.right) v.why = d.text;
    return v;
}

}  // namespace modelproxy::soak
