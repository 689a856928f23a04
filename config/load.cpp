// load_config: the document, listen, workers, limits, clients, the retry
// catalog and boundary. The admission catalog is read by admission.cpp,
// routes in routes.cpp, the models block in models_block.cpp, the fleet
// block in fleet.cpp.
#include "config/config.hpp"
#include "config/loader.hpp"
#include "config/syntax.hpp"

#include <yaml-cpp/eventhandler.h>

#include <exception>
#include <optional>
#include <sstream>

namespace modelproxy::config::detail {
namespace {

std::string syntax_why(const YAML::Exception& error) {
    if (error.mark.is_null()) {
        return "YAML syntax error: " + error.msg;
    }
    return "YAML syntax error at line " + std::to_string(error.mark.line + 1) + ", column " +
           std::to_string(error.mark.column + 1) + ": " + error.msg;
}

// Where each document starts; every other event is dropped.
class DocumentStarts : public YAML::EventHandler {
public:
    std::vector<YAML::Mark> starts;
    void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

// yaml-cpp 0.7 cannot get past some malformed input (a ',' where a document
// should start): its parser then yields empty documents at the same place
// forever, and YAML::LoadAll allocates one node per document until memory
// runs out (found by tests/fuzz/config_fuzz). So the documents are walked
// first, without building nodes; where one starts at the same place as the
// one before, that place is the syntax error. Throws what the parser throws.
std::optional<YAML::Mark> stuck_at(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts handler;
    while (parser.HandleNextDocument(handler)) {
        const auto& s = handler.starts;
        if (s.size() >= 2 && s[s.size() - 1].pos == s[s.size() - 2].pos) {
            return s.back();
        }
    }
    return std::nullopt;
}

void read_listen(MapReader& top, Config& config) {
    std::string text;
    if (!top.string("listen", text)) {
        return;
    }
    const auto listen = parse_listen(text);
    if (!listen) {
        top.problem("listen", "must be HOST:PORT with a port 0..65535 (IPv6 as [::1]:8080), got \"" + text + "\"");
        return;
    }
    config.listen_host = listen->first;
    config.listen_port = listen->second;
}

void read_limits(const YAML::Node& node, Limits& limits, Problems& problems) {
    if (!expect_map(node, "limits", problems)) {
        return;
    }
    MapReader reader(node, "limits", "limits", problems);
    reader.integer("max_request_body_bytes", limits.max_request_body_bytes);
    reader.integer("max_header_bytes", limits.max_header_bytes);
    reader.integer("max_response_body_bytes", limits.max_response_body_bytes);
    reader.integer("max_event_bytes", limits.max_event_bytes);
    reader.integer("header_timeout_ms", limits.header_timeout_ms);
    reader.integer("idle_timeout_ms", limits.idle_timeout_ms);
    reader.integer("max_connections", limits.max_connections);
    reader.integer("drain_ms", limits.drain_ms);
}

void read_clients(const YAML::Node& node, Clients& clients, Problems& problems) {
    if (!expect_map(node, "clients", problems)) {
        return;
    }
    MapReader reader(node, "clients", "clients", problems);
    std::string tokens_env;
    if (reader.string("tokens_env", tokens_env)) {
        // "" is unset, so templated deployments can leave it empty.
        if (!tokens_env.empty() && !is_env_name(tokens_env)) {
            // Never echo the value: it may be a token pasted by mistake.
            reader.problem("tokens_env", "must be the name of an environment variable, not its value");
        } else {
            clients.tokens_env = tokens_env;
        }
    }
    reader.boolean("allow_unauthenticated", clients.allow_unauthenticated);
}

void read_boundary(const YAML::Node& node, Boundary& boundary, Problems& problems) {
    if (!expect_map(node, "boundary", problems)) {
        return;
    }
    MapReader reader(node, "boundary", "boundary", problems);
    std::vector<std::string> patterns;
    if (reader.string_list("secret_patterns", patterns)) {
        bool ok = true;
        for (std::size_t i = 0; i < patterns.size(); ++i) {
            if (patterns[i].empty()) {
                // An empty expression matches every body and refuses them all.
                problems.add((*reader.find("secret_patterns"))[i],
                             join_index(reader.path_of("secret_patterns"), i),
                             "must not be empty: it would match every body");
                ok = false;
            }
        }
        if (ok) {
            boundary.secret_patterns = std::move(patterns);
        }
    }
    reader.boolean("default_patterns", boundary.default_patterns);
}

void read_document(const YAML::Node& root, Config& config, Problems& problems) {
    MapReader top(root, "", "", problems);
    read_listen(top, config);
    top.integer("workers", config.workers);
    if (const YAML::Node* limits = top.find("limits")) {
        read_limits(*limits, config.limits, problems);
    }
    if (const YAML::Node* clients = top.find("clients")) {
        read_clients(*clients, config.clients, problems);
    }
    if (const YAML::Node* retry = top.find("retry"); retry != nullptr && expect_map(*retry, "retry", problems)) {
        MapReader reader(*retry, "retry", "retry", problems);
        read_retry(reader, config.retry);
        check_delays(reader, config.retry, problems);
        check_budget(reader, config.retry, problems);
    }
    std::optional<YAML::Node> queue_timeout;
    if (const YAML::Node* admission = top.find("admission");
        admission != nullptr && expect_map(*admission, "admission", problems)) {
        MapReader reader(*admission, "admission", "admission", problems);
        read_admission(reader, config.admission, problems);
        check_limits(reader, config.admission, problems);
        if (const YAML::Node* value = reader.find("queue_timeout_ms");
            value != nullptr && !problems.has("admission.queue_timeout_ms")) {
            queue_timeout = *value;
        }
    }
    if (const YAML::Node* boundary = top.find("boundary")) {
        read_boundary(*boundary, config.boundary, problems);
    }
    if (const YAML::Node* fleet = top.find("fleet")) {
        config.fleet = read_fleet(*fleet, problems);
    }
    const YAML::Node* routes = top.find("routes");
    if (routes == nullptr) {
        top.problem("routes", "is required (list at least one route)");
    } else {
        config.routes = read_routes(*routes, Catalogs{config.retry, config.admission, queue_timeout}, problems);
    }
    if (const YAML::Node* models = top.find("models")) {
        // Without a list of routes, every name would be "not listed": one
        // problem (at routes) says enough.
        const bool routes_read = routes != nullptr && routes->IsSequence();
        const std::vector<std::string> listed = routes_read ? listed_model_names(*routes) : std::vector<std::string>{};
        config.models = read_models_block(*models, routes_read ? &listed : nullptr, problems);
    }
}

}  // namespace

void read_retry(MapReader& reader, policy::RetryConfig& retry) {
    reader.integer("max_attempts", retry.max_attempts);
    reader.integer("base_delay_ms", retry.base_delay_ms);
    reader.integer("max_delay_ms", retry.max_delay_ms);
    reader.integer("max_total_delay_ms", retry.max_total_delay_ms);
    reader.integer("throttled_max_attempts", retry.throttled_max_attempts);
    reader.integer("throttled_max_total_delay_ms", retry.throttled_max_total_delay_ms);
    std::string jitter;
    if (reader.string("jitter", jitter)) {
        if (jitter == "none") {
            retry.jitter = policy::Jitter::none;
        } else if (jitter == "full") {
            retry.jitter = policy::Jitter::full;
        } else {
            reader.problem("jitter", "must be none or full, got \"" + jitter + "\"");
        }
    }
    reader.integer("min_attempt_ms", retry.min_attempt_ms);
    reader.decimal("budget_ratio", retry.budget_ratio);
    reader.integer("budget_min_concurrency", retry.budget_min_concurrency);
}

void check_delays(const MapReader& reader, const policy::RetryConfig& retry, Problems& problems) {
    const bool has_base = reader.has("base_delay_ms");
    const bool has_max = reader.has("max_delay_ms");
    if (!has_base && !has_max) {
        return;  // nothing set here; the catalog was checked on its own
    }
    for (const char* key : {"base_delay_ms", "max_delay_ms"}) {
        if (problems.has(reader.path_of(key)) || problems.has(join_key("retry", key))) {
            return;  // a refused value would only repeat as a second problem
        }
    }
    if (retry.base_delay_ms <= retry.max_delay_ms) {
        return;
    }
    if (has_base) {
        problems.add(*reader.find("base_delay_ms"), reader.path_of("base_delay_ms"),
                     "must be <= max_delay_ms (" + std::to_string(retry.max_delay_ms) + "), got " +
                         std::to_string(retry.base_delay_ms));
    } else {
        problems.add(*reader.find("max_delay_ms"), reader.path_of("max_delay_ms"),
                     "must be >= base_delay_ms (" + std::to_string(retry.base_delay_ms) + "), got " +
                         std::to_string(retry.max_delay_ms));
    }
}

void check_budget(const MapReader& reader, const policy::RetryConfig& retry, Problems& problems) {
    const bool has_minimum = reader.has("budget_min_concurrency");
    const bool has_ratio = reader.has("budget_ratio");
    if (!has_minimum && !has_ratio) {
        return;  // nothing set here; the catalog was checked on its own
    }
    for (const char* key : {"budget_ratio", "budget_min_concurrency"}) {
        if (problems.has(reader.path_of(key)) || problems.has(join_key("retry", key))) {
            return;
        }
    }
    // A minimum of 0 with a ratio above 0 gives a candidate with one turn in
    // flight no replay at all (docs/behaviour.md section 14).
    if (retry.budget_min_concurrency > 0 || retry.budget_ratio <= 0) {
        return;
    }
    if (has_minimum) {
        problems.add(*reader.find("budget_min_concurrency"), reader.path_of("budget_min_concurrency"),
                     "must be at least 1 while budget_ratio is above 0 (a lone client would get no replays); "
                     "set both to 0 to turn replays off");
    } else {
        problems.add(*reader.find("budget_ratio"), reader.path_of("budget_ratio"),
                     "must be 0 while budget_min_concurrency is 0 (a lone client would get no replays); "
                     "set budget_min_concurrency to at least 1, or leave both 0 to turn replays off");
    }
}

}  // namespace modelproxy::config::detail

namespace modelproxy::config {

LoadResult load_config(std::string_view yaml_text) {
    LoadResult result;
    std::vector<YAML::Node> documents;
    try {
        const std::string text(yaml_text);
        if (const auto mark = detail::stuck_at(text)) {
            result.problems.push_back(Problem{"", "YAML syntax error at line " + std::to_string(mark->line + 1) +
                                                      ", column " + std::to_string(mark->column + 1) +
                                                      ": unexpected text where a document should start"});
            return result;
        }
        documents = YAML::LoadAll(text);
    } catch (const YAML::Exception& error) {
        result.problems.push_back(Problem{"", detail::syntax_why(error)});
        return result;
    } catch (const std::exception& error) {
        result.problems.push_back(Problem{"", std::string("cannot read the document: ") + error.what()});
        return result;
    }
    if (documents.size() > 1) {
        result.problems.push_back(
            Problem{"", "must hold one YAML document, found " + std::to_string(documents.size())});
        return result;
    }
    YAML::Node root = documents.empty() ? YAML::Node(YAML::NodeType::Map) : documents.front();
    if (root.IsNull()) {
        root = YAML::Node(YAML::NodeType::Map);  // an empty file: only "routes is required"
    }
    if (!root.IsMap()) {
        result.problems.push_back(Problem{"", "the document must be a map of settings"});
        return result;
    }
    detail::Problems problems;
    Config config;
    try {
        detail::read_document(root, config, problems);
    } catch (const std::exception& error) {
        // yaml-cpp throws on malformed trees it built itself; never let it out.
        problems.add(root, "", std::string("cannot read the document: ") + error.what());
    }
    result.problems = problems.sorted();
    if (result.problems.empty()) {
        result.config = std::move(config);
    }
    return result;
}

}  // namespace modelproxy::config
