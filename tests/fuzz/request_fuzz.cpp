// libFuzzer target for a client request up to the routing decision:
// the request rules of request/ (pure: no Asio, no Beast) with two fixed configs,
// one with named routes only and one adding a "*" route. The request head
// itself is parsed by Beast's request_parser in proxy/session.cpp; that is
// not this project's code and is not fuzzed here (the hostile-client
// integration tests cover what the session does with what Beast says).
//
// Input, split at its first four '\n': method, request target, Content-Type,
// one header line ("Name: value"), then the body (the rest, any bytes).
//
// Checked (abort() on failure), in the session's order:
//  - check_path: path and query are the target split at '?'; an accepted path
//    starts with '/' and has no "..", %2e, %2f, %5c or '\' (docs/behaviour.md section 4);
//  - dispatch and needs_client_token agree with section 4's table;
//  - inspect_body: kind none exactly for an empty body; a JSON body is valid
//    exactly when the independent checker (strict_json.hpp) says so (below
//    the depth bound); its top-level model / stream / background are those an
//    independent scanner (json_top.hpp) finds, with the model's span on its
//    bytes; a multipart model's span holds its name;
//  - decide_route follows the table in request/routing.hpp row by row;
//  - upstream_body with an upstream_model changes only the model's bytes and
//    reads back as that model; with no string model it changes nothing;
//  - upstream_target joins base path, path and both queries;
//  - header rules: connection tokens are lower-case trimmed non-empty; no
//    hop-by-hop, proxy-owned or replaced credential header is forwarded.
#include "check.hpp"
#include "json_top.hpp"
#include "strict_json.hpp"

#include "config/config.hpp"
#include "request/body.hpp"
#include "request/client_auth.hpp"
#include "request/headers.hpp"
#include "request/local_answers.hpp"
#include "request/routing.hpp"
#include "request/target.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace {

using namespace modelproxy;
using namespace modelproxy::request;

// Two routes; names that need JSON escaping when rewritten.
constexpr std::string_view named_yaml = R"(routes:
  - name: first
    upstream: http://127.0.0.1:9/v1/
    query: {api-version: "2024-06-01", "a b": "c&d"}
    models:
      - gpt-4o-mini
      - {name: fast, upstream_model: gpt-4o-mini}
      - {name: "mod\u00e8le", upstream_model: 'quote"and\back'}
  - name: second
    upstream: http://127.0.0.1:9
    models: [claude, {name: sonnet, upstream_model: "claude-3-5-sonnet-20241022"}]
)";
constexpr std::string_view wildcard_route_yaml = R"(  - name: rest
    upstream: http://127.0.0.1:9/base
    models: ["*"]
)";

config::Config load(const std::string& yaml) {
    auto loaded = config::load_config(yaml);
    MP_FUZZ_CHECK_THAT(loaded.config.has_value(), "request_fuzz's own config does not load");
    return std::move(*loaded.config);
}

const config::Config& named_config() {
    static const config::Config c = load(std::string(named_yaml));
    return c;
}

const config::Config& wildcard_config() {
    static const config::Config c = load(std::string(named_yaml) + std::string(wildcard_route_yaml));
    return c;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = lower(c);
    return out;
}

std::string_view trim(std::string_view s, std::string_view blanks = " \t") {
    while (!s.empty() && blanks.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
    while (!s.empty() && blanks.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
    return s;
}

std::string_view next_line(std::string_view& rest) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    return line;
}

void check_target(std::string_view target, const Target& t) {
    std::string joined(t.path);
    if (target.find('?') != std::string_view::npos) joined += "?" + std::string(t.query);
    MP_FUZZ_CHECK(joined == target);
    if (t.status != TargetStatus::ok) return;
    MP_FUZZ_CHECK(!target.empty() && target.front() == '/' && target.find('#') == std::string_view::npos);
    const std::string path = lowered(t.path) + "/";
    MP_FUZZ_CHECK_THAT(path.find("/../") == std::string::npos, "a .. segment passed check_path");
    for (std::string_view bad : {"%2e", "%2f", "%5c", "\\"})
        MP_FUZZ_CHECK_THAT(path.find(bad) == std::string::npos, "an encoded dot, slash or backslash passed check_path");
}

void check_dispatch(std::string_view method, std::string_view path, Dispatch d) {
    const bool get = method == "GET" || method == "HEAD";
    const bool v1 = path == "/v1" || path.starts_with("/v1/");
    const bool models = path == "/v1/models" || (path.starts_with("/v1/models/") && path.size() > 11);
    const bool local = path == "/healthz" || path == "/readyz" || path == "/metrics";
    if (local) MP_FUZZ_CHECK(d == (get ? (path == "/healthz" ? Dispatch::healthz
                                          : path == "/readyz" ? Dispatch::readyz : Dispatch::metrics)
                                       : Dispatch::method_not_allowed));
    else if (models && get) MP_FUZZ_CHECK(d == (path == "/v1/models" ? Dispatch::models_list : Dispatch::model_object));
    else MP_FUZZ_CHECK(d == (v1 ? Dispatch::forward : Dispatch::not_found));
    MP_FUZZ_CHECK(needs_client_token(d) == (v1 && (d == Dispatch::forward || d == Dispatch::models_list ||
                                                   d == Dispatch::model_object)));
}

// The JSON facts against the strict checker and the independent scanner.
void check_json(std::string_view body, const JsonBody& json) {
    const fuzz::StrictJson strict = fuzz::check_strict_json(body);
    if (json.shape != JsonShape::invalid) MP_FUZZ_CHECK_THAT(strict.valid, "invalid JSON was routed as valid");
    if (strict.valid && !strict.too_deep)
        MP_FUZZ_CHECK_THAT(json.shape != JsonShape::invalid, "valid JSON was refused as invalid_json");
    if (json.shape == JsonShape::invalid) {
        MP_FUZZ_CHECK(json.model == ModelField::absent && !json.stream && !json.background);
        return;
    }
    const fuzz::TopLevel top = fuzz::top_level(body);
    MP_FUZZ_CHECK((json.shape == JsonShape::object) == top.object);
    int models = 0;
    const fuzz::TopMember* model = nullptr;
    bool stream = false, background = false;
    for (const auto& m : top.members) {
        if (m.key == "model" && ++models == 1) model = &m;
        if (m.key == "stream") stream = m.value == "true";
        if (m.key == "background") background = m.value == "true";
    }
    MP_FUZZ_CHECK(json.stream == stream && json.background == background);
    if (models == 0) MP_FUZZ_CHECK(json.model == ModelField::absent);
    if (models > 1) MP_FUZZ_CHECK_THAT(json.model == ModelField::duplicate, "a duplicate top-level model was missed");
    if (models != 1) return;
    const bool is_string = model->value.front() == '"';
    MP_FUZZ_CHECK(json.model == (is_string ? ModelField::string : ModelField::not_string));
    if (!is_string) return;
    MP_FUZZ_CHECK(json.model_span == (Span{model->value_offset, model->value.size()}));
    MP_FUZZ_CHECK(json.model_name == fuzz::decode_json_string(model->value.substr(1, model->value.size() - 2)));
}

void check_facts(std::string_view content_type, std::string_view body, const BodyFacts& facts) {
    const std::string media = lowered(trim(content_type.substr(0, content_type.find(';'))));
    BodyKind kind = BodyKind::other;
    if (body.empty()) kind = BodyKind::none;
    else if (media == "application/json" || (media.starts_with("application/") && media.ends_with("+json")))
        kind = BodyKind::json;
    else if (media == "multipart/form-data") kind = BodyKind::multipart;
    MP_FUZZ_CHECK(facts.kind == kind);
    if (kind == BodyKind::json) check_json(body, facts.json);
    if (kind == BodyKind::multipart && facts.multipart.model == ModelField::string) {
        const Span s = facts.multipart.model_span;
        MP_FUZZ_CHECK(s.offset <= body.size() && s.size <= body.size() - s.offset);
        MP_FUZZ_CHECK(body.substr(s.offset, s.size) == facts.multipart.model_name);
    }
    MP_FUZZ_CHECK(facts.wants_stream() == (kind == BodyKind::json && facts.json.stream));
}

// The routing table of request/routing.hpp, row by row.
void check_route(std::string_view method, std::string_view path, const BodyFacts& facts, const config::Config& cfg,
                 const RouteDecision& decision) {
    const Refusal* refusal = std::get_if<Refusal>(&decision);
    const Forward* forward = std::get_if<Forward>(&decision);
    auto refused = [&](ClientError e) {
        MP_FUZZ_CHECK_THAT(refusal && refusal->error == e, "decide_route took another row of its table");
        MP_FUZZ_CHECK(!refusal->message.empty());
    };
    const config::Route* wildcard = nullptr;
    for (const auto& r : cfg.routes)
        if (r.wildcard) wildcard = &r;
    if (facts.kind == BodyKind::json && facts.json.shape == JsonShape::invalid) return refused(ClientError::invalid_json);
    if (facts.model() == ModelField::duplicate) return refused(ClientError::duplicate_model);
    const std::string& name = facts.model_name();
    if (method == "POST" && facts.model() == ModelField::string) {
        for (const auto& r : cfg.routes)
            for (const auto& m : r.models)
                if (m.name == name) {
                    MP_FUZZ_CHECK(forward && forward->route == &r && forward->model == &m);
                    MP_FUZZ_CHECK(forward->client_model == name);
                    if (m.upstream_model == name) MP_FUZZ_CHECK(!forward->upstream_model);
                    else MP_FUZZ_CHECK(forward->upstream_model == m.upstream_model);
                    return;
                }
        if (!wildcard) return refused(ClientError::model_not_found);
        MP_FUZZ_CHECK(forward && forward->route == wildcard && !forward->model && !forward->upstream_model);
        MP_FUZZ_CHECK(forward->client_model == name);
        return;
    }
    if (wildcard) {
        MP_FUZZ_CHECK(forward && forward->route == wildcard && !forward->model && !forward->upstream_model);
        MP_FUZZ_CHECK(forward->client_model == (facts.model() == ModelField::string ? name : std::string()));
        return;
    }
    if (path == "/v1/models" || (path.starts_with("/v1/models/") && path.size() > 11))
        return refused(ClientError::method_not_allowed);
    // (A JSON body naming a model in a request other than POST is no_route.)
    if (facts.kind == BodyKind::json && facts.model() != ModelField::string)
        return refused(ClientError::missing_model);
    refused(ClientError::no_route);
}

// upstream_body replaces the model's bytes and nothing else.
void check_rewrite(std::string_view content_type, std::string_view body, const BodyFacts& facts,
                   std::string_view upstream_model) {
    const std::string out = upstream_body(body, facts, upstream_model);
    if (facts.model() != ModelField::string) {
        MP_FUZZ_CHECK(out == body);
        return;
    }
    const Span s = facts.kind == BodyKind::json ? facts.json.model_span : facts.multipart.model_span;
    MP_FUZZ_CHECK(out.substr(0, s.offset) == body.substr(0, s.offset));
    const std::size_t tail = body.size() - s.offset - s.size;
    MP_FUZZ_CHECK(out.size() >= s.offset + tail && out.substr(out.size() - tail) == body.substr(s.offset + s.size));
    const BodyFacts again = inspect_body(content_type, out);
    MP_FUZZ_CHECK_THAT(again.model() == ModelField::string && again.model_name() == upstream_model,
                       "the rewritten body does not name the upstream model");
    MP_FUZZ_CHECK(again.wants_stream() == facts.wants_stream());
}

void check_upstream_target(const config::Route& route, const Target& t) {
    std::string base = route.upstream.base_path;
    while (!base.empty() && base.back() == '/') base.pop_back();
    std::string want = base + std::string(t.path.substr(3));
    if (want.empty()) want = "/";
    std::string query(t.query);
    for (const auto& [k, v] : route.query) {
        if (!query.empty()) query += '&';
        query += percent_encode(k) + "=" + percent_encode(v);
    }
    if (!query.empty()) want += "?" + query;
    MP_FUZZ_CHECK(upstream_target(route, t.path, t.query) == want);
    std::string reused = "a longer target left over from an earlier request?q=" + std::string(t.path);
    upstream_target(reused, route, t.path, t.query);
    MP_FUZZ_CHECK(reused == want);
}

void check_headers(std::string_view line) {
    const std::size_t colon = line.find(':');
    const std::string_view name = trim(line.substr(0, colon));
    const std::string_view value = colon == std::string_view::npos ? std::string_view() : trim(line.substr(colon + 1));
    // The Connection tokens, as an independent oracle: split at commas,
    // optional whitespace trimmed, empty ones dropped, lower-cased.
    std::vector<std::string> tokens;
    for (std::string_view rest = value; !rest.empty();) {
        const std::size_t comma = std::min(rest.find(','), rest.size());
        const std::string_view tok = trim(rest.substr(0, comma));
        if (!tok.empty()) tokens.push_back(lowered(tok));
        rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
    const std::string lname = lowered(name);
    bool hop = lname.starts_with("proxy-");
    for (std::string_view h : {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"})
        hop = hop || lname == h;
    MP_FUZZ_CHECK(is_hop_by_hop(name) == hop);
    const bool owned = hop || lname == "host" || lname == "content-length" || lname == "expect" ||
                       lname == "accept-encoding" || lname.starts_with("x-modelproxy-");
    bool named = false;
    for (const std::string& tok : tokens) named = named || tok == lname;
    const ConnectionListed listed = connection_lists(value, name);
    MP_FUZZ_CHECK((listed == ConnectionListed::yes) == named);
    for (const CredentialRule rule : {CredentialRule{}, CredentialRule{"x-goog-api-key", "authorization"},
                                      CredentialRule{"authorization", "x-api-key"}}) {
        if (!forward_request_header(name, listed, rule)) continue;
        MP_FUZZ_CHECK_THAT(!owned && !named, "a hop-by-hop or proxy-owned request header is forwarded");
        MP_FUZZ_CHECK(rule.client_token_header.empty() || lname != rule.client_token_header);
        if (!rule.injected_key_header.empty())
            MP_FUZZ_CHECK_THAT(!is_client_credential(name) && lname != rule.injected_key_header,
                               "a client credential is forwarded although the route injects a key");
    }
    if (forward_response_header(name, listed))
        MP_FUZZ_CHECK(!is_hop_by_hop(name) && !named && lname != "content-length" && lname != "content-encoding" &&
                      !lname.starts_with("x-modelproxy-"));
    const std::vector<std::string> client_tokens{"tok-1", "tok-2", ""};
    const ClientAuth auth = authorize_client(value, value, client_tokens);
    const std::string_view bare = trim(value);
    if (auth == ClientAuth::api_key) MP_FUZZ_CHECK(bare == "tok-1" || bare == "tok-2");
    if (auth == ClientAuth::bearer) MP_FUZZ_CHECK(lowered(bare).starts_with("bearer "));
    if (bare.empty()) MP_FUZZ_CHECK_THAT(auth == ClientAuth::refused, "an empty credential matched an empty token");
    MP_FUZZ_CHECK(authorize_client(std::nullopt, std::nullopt, client_tokens) == ClientAuth::refused);
    MP_FUZZ_CHECK(authorize_client(value, std::nullopt, {}) == ClientAuth::open);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    std::string_view rest(reinterpret_cast<const char*>(bytes), size);
    const std::string_view method = next_line(rest);
    const std::string_view target = next_line(rest);
    const std::string_view content_type = next_line(rest);
    const std::string_view header_line = next_line(rest);
    const std::string_view body = rest;

    check_headers(header_line);
    const Target t = check_path(target);
    check_target(target, t);
    if (t.status != TargetStatus::ok) return 0;
    const Dispatch d = dispatch(method, t.path);
    check_dispatch(method, t.path, d);
    if (d == Dispatch::model_object) {
        const auto id = model_id_from_path(t.path);
        if (id) {
            const LocalAnswer a = model_object(wildcard_config(), *id);
            MP_FUZZ_CHECK(a.status == 200 || a.status == 404);
        }
    }
    if (d != Dispatch::forward) return 0;

    const BodyFacts facts = inspect_body(content_type, body);
    check_facts(content_type, body, facts);
    for (const config::Config* cfg : {&named_config(), &wildcard_config()}) {
        const RouteDecision decision = decide_route(method, t.path, facts, *cfg);
        check_route(method, t.path, facts, *cfg, decision);
        if (const Forward* f = std::get_if<Forward>(&decision)) {
            check_upstream_target(*f->route, t);
            if (f->upstream_model) check_rewrite(content_type, body, facts, *f->upstream_model);
        }
    }
    check_rewrite(content_type, body, facts, "gpt-4o-mini");
    check_rewrite(content_type, body, facts, "quote\"and\\back\x01\xC3\xA9");
    return 0;
}
