#include "proxy/prepare.hpp"

#include "policy/client_deadline.hpp"
#include "proxy/fleet.hpp"
#include "proxy/metrics.hpp"
#include "proxy/request.hpp"
#include "proxy/response_head.hpp"
#include "transport/field_scan.hpp"
#include "transport/request_parser.hpp"

#include <atomic>
#include <optional>
#include <random>
#include <string_view>

namespace modelproxy::proxy {

// A body read with its declared length can be read in place by the JSON
// reader (request/json_body.hpp).
static_assert(transport::RequestParser::body_padding >= json_padding);

namespace {

namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

// A request id: the client's x-request-id, else "mp-" + 16 hex digits that
// are unique in this process and unpredictable across processes. Written
// into `out` (a reused plan string: no allocation once it has grown).
void make_request_id(std::string& out) {
    static const std::uint64_t seed = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t x = seed + counter.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    char id[20] = "mp-";
    static constexpr char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) id[3 + i] = hex[(x >> (60 - 4 * i)) & 15];
    out.assign(id, 19);
}

// The upstream request of one candidate (docs/behaviour.md sections 4 and
// 13): its target, its body (the model rewritten to its upstream model),
// the identities it may answer with, and its head (the route's Host, the
// client's end-to-end headers less credentials the route replaces, the
// route's key and static headers).
// `body` is the client's; taken (moved) when `take` says so.
void build_payload_from(ForwardPlan& plan, std::size_t route_index, const config::Model* model, std::string& body,
                        const BodyFacts& facts, bool take) {
    const config::Config& cfg = plan.runtime->config;
    const config::Route& route = cfg.routes[route_index];
    const transport::RequestHead& req = *plan.client_head;
    const transport::RequestFields& fields = *plan.client_fields;
    const Admission& admission = *plan.admission;
    const Target& target = admission.target;
    const std::string_view method = plan.method;
    plan.route_index = route_index;
    plan.model = model;
    plan.target.clear();
    upstream_target(plan.target, route, target.path, target.query);
    const std::string_view upstream_model =
        !model ? std::string_view() : model->upstream_model.empty() ? std::string_view(model->name)
                                                                   : std::string_view(model->upstream_model);
    if (model && upstream_model != facts.model_name()) {
        plan.body = upstream_body(body, facts, upstream_model);
    } else if (take) {
        plan.body = std::move(body);
    } else {
        plan.body.assign(body);
    }
    if (plan.endpoint != policy::Endpoint::other && route.dialect != config::Dialect::generic) {
        // What IdentityRule::from_accept / wildcard_for make, built over the
        // last request's rule so its strings keep their capacity.
        // A model without `accept` takes its upstream model's dated
        // snapshots by the "*" rule (docs/behaviour.md section 3).
        sse::IdentityRule& rule = plan.set_identity();
        if (model && !model->accept.empty()) {
            rule.kind = sse::IdentityRule::Kind::accept_globs;
            rule.globs.assign(model->accept.begin(), model->accept.end());
        } else {
            rule.kind = sse::IdentityRule::Kind::wildcard;
            rule.requested.assign(model ? std::string_view(model->upstream_model)
                                        : std::string_view(plan.client_model));
        }
    } else {
        plan.identity.reset();
    }
    // The upstream head: the route's Host, the client's end-to-end headers
    // less credentials the route replaces, the route's key and static headers.
    // The Connection tokens are read in place for each field, not collected;
    // all Connection fields count, the rare repeated ones found by a walk.
    const ConnectionTokens connection(fields.connection.value_or(""));
    const auto connection_listed = [&](std::string_view name) {
        if (!fields.connection_repeated) return connection.lists(name);
        for (const auto& field : req)
            if (field.name() == http::field::connection && connection_lists(field.value(), name) == ConnectionListed::yes)
                return ConnectionListed::yes;
        return ConnectionListed::no;
    };
    CredentialRule credentials;
    if (route.api_key) credentials.injected_key_header = route.api_key_header;
    credentials.client_token_header = token_header(admission.auth);
    const std::vector<std::string>& tokens = cfg.clients.tokens;
    std::string& h = plan.upstream_head;
    h.clear();
    h.reserve(1024);
    h += method;
    h += ' ';
    h += plan.target;
    h += " HTTP/1.1\r\nhost: ";
    // An IPv6 literal in brackets; appended in place (a conditional of
    // std::strings built a copy of the host, an allocation per request for
    // a name longer than 15 bytes).
    if (route.upstream.host.find(':') != std::string::npos) {
        h += '[';
        h += route.upstream.host;
        h += ']';
    } else {
        h += route.upstream.host;
    }
    if (route.upstream.port != (route.upstream.https ? 443 : 80)) {
        h += ':';
        h += std::to_string(route.upstream.port);
    }
    h += "\r\n";
    // A route's static header replaces a client header of the same name: a
    // provider reading a repeated single-value header (anthropic-version)
    // either way must not get two.
    auto overridden = [&](std::string_view name) {
        for (const auto& [static_name, value] : route.headers)
            if (iequals(static_name, name)) return true;
        return false;
    };
    for (const auto& field : req) {
        if (!forward_request_header(field.name_string(), connection_listed(field.name_string()), credentials))
            continue;
        if (overridden(field.name_string())) continue;
        // Section 4: no header that carried a client token reaches an
        // upstream, whichever its name (a stray copy in a second header).
        if (!tokens.empty() && carries_client_token(field.value(), tokens)) continue;
        append_field(h, field.name_string(), field.value());
    }
    if (route.api_key) {
        h += route.api_key_header;
        h += ": ";
        h += route.api_key_prefix;
        h += *route.api_key;
        h += "\r\n";
    }
    for (const auto& [name, value] : route.headers) append_field(h, name, value);
    h += "accept-encoding: identity\r\n";
    if (!plan.body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
        h += "content-length: ";
        h += std::to_string(plan.body.size());
        h += "\r\n";
    }
    h += "\r\n";
}

Reply prepare_from(Shared& shared, const std::shared_ptr<const Runtime>& runtime, const transport::RequestHead& req,
                   std::string& body, const transport::RequestFields& fields, const Admission& admission,
                   bool keep_alive, ForwardPlan& plan) {
    const config::Config& cfg = runtime->config;
    const std::string_view method = req.method_string();
    const bool is_head = req.method() == http::verb::head;
    const Target& target = admission.target;
    const Dispatch dispatched = admission.dispatch;

    std::optional<LocalAnswer> local;
    switch (dispatched) {
        case Dispatch::healthz: local = healthz(); break;
        case Dispatch::readyz: local = readyz(shared.draining.load() ? Readiness::draining : Readiness::ready); break;
        case Dispatch::metrics: {
            // docs/behaviour.md section 10: every worker's counters summed now; no client
            // token (section 12). Rendering is pure (metrics.hpp).
            metrics::Snapshot snapshot = shared.registry.snapshot();
            snapshot.inflight_turns = shared.inflight_turns.load(std::memory_order_relaxed);
            snapshot.client_connections = shared.connections.load(std::memory_order_relaxed);
            snapshot.version = MODELPROXY_VERSION;
            metrics::read_process(snapshot);
            std::string text;
            if (!is_head) {
                text = metrics::render(snapshot) + runtime->candidates.render_metrics(cfg, Clock::now());
                if (cfg.fleet) {
                    // Section 15: whether this replica shares through Redis now.
                    const Fleet& fleet = Fleet::process();
                    text += "# HELP modelproxy_fleet_up 1 while this replica shares its quota and breakers through "
                            "Redis, 0 while it uses its own state.\n# TYPE modelproxy_fleet_up gauge\n"
                            "modelproxy_fleet_up ";
                    text += fleet.up() ? "1\n" : "0\n";
                    text += "# HELP modelproxy_fleet_replicas The replicas this one saw in the last heartbeat "
                            "(itself included).\n# TYPE modelproxy_fleet_replicas gauge\nmodelproxy_fleet_replicas ";
                    text += std::to_string(fleet.replicas_seen()) + "\n";
                }
            }
            return Reply{Reply::Kind::metrics, {}, false, {}, {200, std::move(text)}};
        }
        case Dispatch::models_list: local = models_list(cfg); break;
        case Dispatch::model_object: {
            auto id = model_id_from_path(target.path);
            local = id ? model_object(cfg, *id) : client_error(ClientError::model_not_found);
            break;
        }
        // admit() refuses these on the head; kept so that every dispatch has its answer.
        case Dispatch::not_found: return Reply::refusal(ClientError::not_found, false);
        case Dispatch::method_not_allowed: return Reply::refusal(ClientError::method_not_allowed, false);
        case Dispatch::forward: break;
    }
    if (local) {
        if (is_head) local->body.clear();
        return Reply{Reply::Kind::local, {}, true, {}, std::move(*local)};
    }

    const std::string_view content_type = fields.content_type.value_or("");
    BodyFacts facts = inspect_body(content_type, body, body.capacity());
    RouteDecision decision = decide_route(method, target.path, facts, cfg);
    if (auto* refusal = std::get_if<Refusal>(&decision))
        return Reply::refusal(refusal->error, true, std::move(refusal->message));
    Forward& forward = std::get<Forward>(decision);

    plan.runtime = runtime;
    plan.client_model = forward.client_model;
    plan.method.assign(method);
    plan.wants_stream = facts.wants_stream();
    plan.one_choice = !facts.json.several_choices;
    plan.deterministic = facts.json.temperature_zero || facts.json.seed;
    plan.head_request = is_head;
    plan.endpoint = policy::endpoint_for_path(target.path.substr(3));
    plan.error_shape = policy::error_shape_for_target(req.target());
    if (plan.endpoint == policy::Endpoint::responses && facts.json.background) plan.endpoint = policy::Endpoint::other;
    plan.keep_alive = keep_alive;
    plan.http10 = req.version() < 11;
    plan.started = Clock::now();
    // The turn's deadline and bounds are its first deployment's
    // (docs/behaviour.md section 13); the client's own deadline only ever
    // shortens it (section 6).
    const config::Route& route = *forward.route;
    policy::ClientDeadlineHeaders deadline_headers{fields.x_modelproxy_timeout_ms, fields.x_stainless_timeout,
                                                   fields.x_stainless_read_timeout};
    plan.deadline = plan.started + std::chrono::milliseconds(policy::turn_deadline(route.timeout_ms, deadline_headers).ms);
    plan.client_head = &req;
    plan.client_fields = &fields;
    plan.admission = &admission;
    plan.candidates = forward.model ? runtime->candidates.find(forward.client_model) : nullptr;
    if (plan.candidates && plan.candidates->list.size() > 1) {
        // Another candidate's payload is built from the client's body (build_payload).
        plan.client_body.assign(body);
        plan.facts = facts;
        for (const auto& field : req)
            if (iequals(field.name_string(), "x-modelproxy-fallback") && iequals(field.value(), "off"))
                plan.fallback_off = true;
    }
    build_payload_from(plan, static_cast<std::size_t>(forward.route - cfg.routes.data()), forward.model, body, facts,
                       true);
    return Reply{Reply::Kind::forward, {}, false, {}, {}};
}

}  // namespace

void build_payload(ForwardPlan& plan, const CandidateRef& candidate) {
    build_payload_from(plan, candidate.route, candidate.model, plan.client_body, plan.facts, false);
}

void admit_request(const Runtime& runtime, const transport::RequestHead& head, const transport::RequestFields& fields,
                   const RequestHead& framing, bool over_limit, Admission& admission, ForwardPlan& plan) {
    plan.clear();
    HeadFacts facts;
    facts.target = head.target();
    facts.framing = framing;
    facts.authorization = fields.authorization;
    facts.x_api_key = fields.x_api_key;
    facts.keep_alive = transport::keep_alive(head.version(), fields);
    facts.over_limit = over_limit;
    admission = admit(facts, runtime.config.clients.tokens,
                      static_cast<std::uint64_t>(runtime.config.limits.max_request_body_bytes));
    if (admission.target.status == TargetStatus::ok && under_v1(admission.target.path)) {
        const auto& client_id = fields.x_request_id;
        if (client_id && !client_id->empty() && client_id->size() <= 200) {
            plan.request_id.assign(*client_id);
        } else {
            make_request_id(plan.request_id);
        }
    }
}

Reply prepare(Shared& shared, const std::shared_ptr<const Runtime>& runtime, const transport::RequestHead& head,
              const transport::RequestFields& fields, const Admission& admission, std::string& body,
              ForwardPlan& plan) {
    const bool keep_alive = admission.keep_alive && !shared.draining.load();
    Reply reply = prepare_from(shared, runtime, head, body, fields, admission, keep_alive, plan);
    reply.keep_alive = keep_alive;
    return reply;
}

}  // namespace modelproxy::proxy
