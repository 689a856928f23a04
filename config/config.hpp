// The configuration of docs/behaviour.md section 3 as plain values, its YAML loader and
// validator, and the embedded default (config/modelproxy.yaml, compiled in).
//
// Loading never throws: every problem is returned with its key path counted
// from 0 (`routes[1].retry.max_attempts`) and a reason, all of them, not only
// the first. Environment variables are read in a separate step
// (resolve_environment), after the command line's overrides, so that a file
// can be judged alone (`doctor` reads none).
#pragma once

#include "policy/admission.hpp"
#include "policy/breaker.hpp"
#include "policy/candidates.hpp"
#include "policy/retry_config.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace modelproxy::config {

enum class Dialect { openai, anthropic, generic };

struct Limits {
    std::int64_t max_request_body_bytes = 33554432;   // larger -> 413
    std::int64_t max_header_bytes = 16384;            // larger -> 431
    std::int64_t max_response_body_bytes = 67108864;  // larger -> 502
    std::int64_t max_event_bytes = 1048576;           // one longer SSE line -> refused (section 8)
    std::int64_t header_timeout_ms = 10000;           // request head not complete -> 408
    std::int64_t idle_timeout_ms = 75000;             // idle keep-alive client connection closed
    std::int64_t max_connections = 10000;             // beyond -> 503
    std::int64_t drain_ms = 30000;                    // SIGTERM drain limit
};

struct Clients {
    std::string tokens_env;              // empty: unset
    bool allow_unauthenticated = false;
    std::vector<std::string> tokens;     // filled by resolve_environment
};

struct Boundary {
    std::vector<std::string> secret_patterns;
    bool default_patterns = true;
};

struct Model {
    std::string name;                    // what clients send in "model"
    std::string upstream_model;          // rewritten into the upstream body
    // Identities accepted (glob *), as listed. Empty: none listed, and the
    // default applies: upstream_model and its dated snapshots, by the "*"
    // route's rule (docs/behaviour.md section 3, sse::wildcard_accepts).
    std::vector<std::string> accept;
};

struct Tls {
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
};

struct Upstream {
    bool https = false;
    std::string host;                    // without brackets for IPv6
    std::uint16_t port = 0;              // explicit or the scheme's default
    std::string base_path;               // "" or "/v1" (no trailing '/')
};

// routes[].quota (docs/behaviour.md section 15): the provider key's own
// limits per minute. 0 = no limit on that dimension; a present `quota` sets
// at least one.
struct Quota {
    std::int64_t requests_per_minute = 0;  // 1..100000000
    std::int64_t tokens_per_minute = 0;    // 1..10000000000
    friend bool operator==(const Quota&, const Quota&) = default;
};

// routes[].resume (docs/behaviour.md section 16): a stream cut after its
// answer text was published is continued by one more attempt on a deployment
// of the same client model, whose stream is read, not published, until it has
// reproduced that text. Off unless the route enables it.
struct Resume {
    bool enabled = false;
    int max_resumes = 1;                 // 1..3 per turn
    std::int64_t max_offset = 4096;      // 1..1000000 code points of published answer text a resume may catch up
    bool only_deterministic = true;      // only requests that set temperature 0 or a seed
    friend bool operator==(const Resume&, const Resume&) = default;
};

struct Route {
    std::string name;
    std::string upstream_url;            // as written
    Upstream upstream;                   // parsed (Boost.URL)
    std::string api_key_env;
    std::string api_key_header = "authorization";   // lower-case
    std::string api_key_prefix;          // "Bearer " for authorization unless set
    bool api_key_required = false;
    std::vector<std::pair<std::string, std::string>> headers;  // static upstream headers, in file order
    std::vector<std::pair<std::string, std::string>> query;    // static query parameters, in file order
    Tls tls;
    Dialect dialect = Dialect::openai;
    std::int64_t connect_timeout_ms = 5000;
    std::int64_t timeout_ms = 300000;
    std::int64_t stream_idle_timeout_ms = 60000;
    std::int64_t stream_head_hold_ms = 10000;
    std::int64_t max_stream_ms = 0;
    int weight = 1;                          // share among a model's deployments (section 13)
    std::int64_t first_byte_timeout_ms = 0;  // 0 = off; streams only
    std::int64_t first_token_timeout_ms = 0; // 0 = off; streams only
    policy::BreakerConfig breaker;
    std::vector<Model> models;           // the "*" entry is not in here
    bool wildcard = false;               // lists "*"
    policy::RetryConfig retry;           // catalog merged with the route's override
    policy::AdmissionConfig admission;   // catalog merged with the route's override (section 14)
    std::optional<Quota> quota;          // section 15; nullopt: no quota
    Resume resume;                       // docs/behaviour.md section 16; the defaults (off) without a `resume` block
    std::optional<std::string> api_key;  // filled by resolve_environment; nullopt = pass client credentials through
};

// One entry of the top-level `models` block (docs/behaviour.md section 13):
// how a client model name's candidates are tried. A name without an entry
// takes the defaults.
struct ModelPolicy {
    std::string name;
    policy::Balance balance = policy::Balance::ordered;
    int attempts_per_candidate = 2;       // 1..16
    std::vector<std::string> fallbacks;   // other client model names, in order
    policy::FallbackOn fallback_on;       // the five classes by default
};

// The `fleet` block (docs/behaviour.md section 15): the Redis server
// replicas share state through. Config::fleet is set only when `redis` is;
// the URL holds no user or password (the loader refuses them).
struct Fleet {
    std::string redis_url;               // as written: redis://HOST[:PORT][/DB] or rediss://
    bool tls = false;                    // rediss://
    std::string host;                    // parsed; without brackets for IPv6
    std::uint16_t port = 6379;           // explicit or 6379
    int db = 0;                          // 0..15, from the path
    std::string password_env;            // empty: no AUTH
    std::optional<std::string> password; // filled by resolve_environment from password_env
    std::string ca_file;                 // rediss:// only; empty: the system trust store
    std::string key_prefix = "modelproxy:";
    std::int64_t timeout_ms = 50;        // a Redis call slower than this counts as failed
};

struct Config {
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 8080;
    int workers = 0;                     // 0 = one event loop per core
    Limits limits;
    Clients clients;
    policy::RetryConfig retry;           // the catalog
    policy::AdmissionConfig admission;   // the catalog (section 14)
    Boundary boundary;
    std::vector<Route> routes;
    std::vector<ModelPolicy> models;     // the `models` block, in file order
    std::optional<Fleet> fleet;          // section 15; nullopt: state per replica
};

struct Problem {
    std::string path;                    // "routes[1].retry.max_attempts"; "" for the document itself
    std::string why;
    // "routes[1].retry.max_attempts: must be 1..16, got 40"; one line: a CR,
    // LF or other control character (not tab) echoed from the file is escaped.
    std::string line() const;
};

struct LoadResult {
    std::optional<Config> config;        // set only when problems is empty
    std::vector<Problem> problems;
};

// Parses and validates a YAML document. Never throws.
LoadResult load_config(std::string_view yaml_text);

// The embedded default config/modelproxy.yaml.
std::string_view embedded_default_yaml();

// "HOST:PORT" ("[::1]:8080" for IPv6; the host is returned without brackets).
// Port 0 is allowed (the OS picks one; tests read the bound port from stderr).
// nullopt when malformed, the host is empty, or the port is above 65535.
std::optional<std::pair<std::string, std::uint16_t>> parse_listen(std::string_view text);

using Getenv = std::function<const char*(const char*)>;

struct EnvResult {
    std::vector<Problem> errors;         // fatal: exit 2
    std::vector<std::string> notices;    // one stderr line each (e.g. credentials passed through)
};

// Reads api_key_env, clients.tokens_env and fleet.password_env through
// getenv, fills Route::api_key, Clients::tokens and Fleet::password (an
// unset, empty or control-character password is an error), and applies the rules that need them: api_key_required,
// and docs/behaviour.md section 12's refusal to listen open on a non-loopback address while a
// route injects a key. Call after CLI overrides (--listen) are applied.
EnvResult resolve_environment(Config& config, const Getenv& getenv);

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

// Which route and model serve a client model name: the first route listing
// the exact name (its first deployment), else the "*" route (model ==
// nullptr then). Both null when nothing serves it.
struct ModelMatch {
    const Route* route = nullptr;
    const Model* model = nullptr;
};
ModelMatch find_model(const Config& config, std::string_view client_model);

const Route* wildcard_route(const Config& config);

// A deployment of a client model name (docs/behaviour.md section 13):
// routes[route].models[model].
struct Deployment {
    std::size_t route = 0;
    std::size_t model = 0;
    friend bool operator==(const Deployment&, const Deployment&) = default;
};
// Every route listing `name` by name, in config order (the "*" route is not
// a deployment). Empty when no route lists it.
std::vector<Deployment> deployments_of(const Config& config, std::string_view name);
// The `models` entry of `name`, or the defaults (a static ModelPolicy with an
// empty name) when it has none.
const ModelPolicy& model_policy(const Config& config, std::string_view name);

// One row of the schema of docs/behaviour.md section 3: every key the loader accepts, with
// the default and range the validator applies (the validator reads its ranges
// from the same table, so docs/configuration.md, generated from it, cannot drift).
// Paths use [] for list items: `retry.max_attempts`, `routes[].timeout_ms`,
// `routes[].models[].accept`.
struct KeyInfo {
    std::string path;
    std::string default_value;
    std::string range;
    std::string description;
};
const std::vector<KeyInfo>& schema_keys();

// The markdown table (key | default | range | meaning) of schema_keys(), one
// row per key, as docs/configuration.md holds it.
std::string schema_reference_table();

// docs/configuration.md, whole: its prose (config/reference.cpp) around
// schema_reference_table(). `modelproxy reference` prints it.
std::string reference_document();

}  // namespace modelproxy::config
