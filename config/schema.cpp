#include "config/schema.hpp"

#include "config/config.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace modelproxy::config::detail {
namespace {

constexpr std::int64_t kib = 1024;
constexpr std::int64_t mib = 1024 * kib;
constexpr std::int64_t gib = 1024 * mib;
constexpr std::int64_t second = 1000;
constexpr std::int64_t minute = 60 * second;
constexpr std::int64_t hour = 60 * minute;

// The ranges of docs/behaviour.md section 3: wide enough for tests at the low end (delays
// from 1 ms, timeouts from 10 ms, byte limits from 1 KiB, connections from 1),
// and an upper end that catches a misplaced digit.
constexpr IntRange delay{1, hour, Unit::ms};
constexpr IntRange summed_delay{1, 24 * hour, Unit::ms};
constexpr IntRange timeout{10, 24 * hour, Unit::ms};
constexpr IntRange body_bytes{kib, 4 * gib, Unit::bytes};
constexpr IntRange header_bytes{kib, mib, Unit::bytes};
constexpr IntRange event_bytes{kib, 64 * mib, Unit::bytes};
constexpr IntRange connections{1, 1000000, Unit::count};
constexpr IntRange worker_count{0, 256, Unit::count};
constexpr IntRange attempts{1, 16, Unit::count};
constexpr IntRange throttled_attempts{1, 64, Unit::count};
constexpr IntRange min_attempt{1, hour, Unit::ms};  // below the largest timeout_ms, which it must stay under
constexpr IntRange stream_cap{10, 24 * hour, Unit::ms, true};
// docs/behaviour.md section 13.
constexpr IntRange route_weight{1, 1000, Unit::count};
constexpr IntRange stream_timer{10, 24 * hour, Unit::ms, true};  // and at most the route's timeout_ms
constexpr IntRange breaker_failures{1, 1000, Unit::count};
constexpr IntRange breaker_attempts{1, 100000, Unit::count};
constexpr IntRange breaker_window{100, 10 * minute, Unit::ms};
constexpr IntRange breaker_open{10, 10 * minute, Unit::ms};
constexpr IntRange breaker_max_open{10, hour, Unit::ms};  // and at least open_ms
constexpr IntRange breaker_probes{1, 100, Unit::count};
constexpr DecimalRange breaker_ratio{micro / 100, micro};
// docs/behaviour.md section 14.
constexpr DecimalRange budget_ratio{0, micro};
constexpr IntRange budget_minimum{0, 10000, Unit::count};
constexpr IntRange admission_limit{1, 100000, Unit::count};
constexpr DecimalRange admission_decrease{micro / 10, micro * 99 / 100};
constexpr IntRange backpressure_units{0, 10, Unit::count};
constexpr IntRange queue_wait{1, 24 * hour, Unit::ms, true, "the turn deadline"};  // and at most timeout_ms

// 33554432 bytes -> "32 MiB", 300000 ms -> "5 min"; "" when no unit divides it.
std::string in_units(std::int64_t value, Unit unit) {
    struct Step { std::int64_t size; const char* name; };
    static constexpr Step byte_steps[] = {{gib, "GiB"}, {mib, "MiB"}, {kib, "KiB"}};
    static constexpr Step ms_steps[] = {{hour, "h"}, {minute, "min"}, {second, "s"}, {1, "ms"}};
    if (unit == Unit::count || value == 0) {
        return "";
    }
    if (unit == Unit::bytes) {
        for (const Step& step : byte_steps) {
            if (value % step.size == 0) {
                return std::to_string(value / step.size) + " " + step.name;
            }
        }
        return std::to_string(value) + " bytes";
    }
    for (const Step& step : ms_steps) {
        if (value % step.size == 0) {
            return std::to_string(value / step.size) + " " + step.name;
        }
    }
    return "";
}

std::string shown_default(std::int64_t value, Unit unit, const char* zero_meaning) {
    std::string text = std::to_string(value);
    if (value == 0 && zero_meaning != nullptr) {
        return text + " (" + zero_meaning + ")";
    }
    const std::string human = in_units(value, unit);
    if (!human.empty() && unit == Unit::bytes) {
        text += " (" + human + ")";
    } else if (!human.empty() && value >= second) {
        text += " (" + human + ")";
    }
    return text;
}

}  // namespace

KeySpec integer_key(std::string path, std::int64_t default_value, IntRange range,
                    std::string description, const char* zero_meaning) {
    return KeySpec{std::move(path), shown_default(default_value, range.unit, zero_meaning), range,
                   std::nullopt, describe_range(range), std::move(description)};
}

KeySpec bounded_key(std::string path, std::int64_t default_value, IntRange range, std::string_view also,
                    std::string description, const char* zero_meaning) {
    KeySpec spec = integer_key(std::move(path), default_value, range, std::move(description), zero_meaning);
    spec.range += ", ";
    spec.range += also;
    return spec;
}

KeySpec decimal_key(std::string path, std::int64_t default_micro, DecimalRange range, std::string description) {
    return KeySpec{std::move(path), decimal_text(default_micro), std::nullopt, range,
                   describe_range(range) + " (a decimal)", std::move(description)};
}

KeySpec other_key(std::string path, std::string default_value, std::string range,
                  std::string description) {
    return KeySpec{std::move(path), std::move(default_value), std::nullopt, std::nullopt, std::move(range),
                   std::move(description)};
}

namespace {

// "network, timeout, ...": the classes of a fallback_on default.
std::string classes_text(const policy::FallbackOn& on) {
    std::string text;
    for (const policy::ErrorClass cls : on.classes) {
        text += text.empty() ? "" : ", ";
        text += policy::to_string(cls);
    }
    return text;
}

// A decimal default in millionths, as the table shows it.
std::int64_t in_micro(double value) {
    return static_cast<std::int64_t>(value * static_cast<double>(micro) + 0.5);
}

// The section 13 keys of a route.
std::vector<KeySpec> outage_route_specs(const Route& route) {
    const policy::BreakerConfig& breaker = route.breaker;
    return {
        integer_key("routes[].weight", route.weight, route_weight,
                    "the route's share of a model's turns among that model's deployments under `balance: weighted`"),
        bounded_key("routes[].first_byte_timeout_ms", route.first_byte_timeout_ms, stream_timer,
                    "at most the route's timeout_ms",
                    "streams only: no response head this long after the request was written ends the attempt "
                    "(timeout, first-byte); it falls over when `timeout` is in fallback_on and a later candidate "
                    "is usable",
                    "off"),
        bounded_key("routes[].first_token_timeout_ms", route.first_token_timeout_ms, stream_timer,
                    "at most the route's timeout_ms",
                    "streams only: no answer text this long after the response head ends the attempt (timeout, "
                    "first-token) and falls over; it applies only while a later candidate is usable and `timeout` "
                    "is in fallback_on",
                    "off"),
        other_key("routes[].breaker.enabled", breaker.enabled ? "true" : "false", "true or false",
                  "false: the route's candidates have no circuit breaker"),
        integer_key("routes[].breaker.consecutive_failures", breaker.consecutive_failures, breaker_failures,
                    "counted failures in a row that open the breaker"),
        decimal_key("routes[].breaker.failure_ratio", in_micro(breaker.failure_ratio), breaker_ratio,
                    "or this share of failures among the counted attempts of the last window_ms opens it ..."),
        integer_key("routes[].breaker.min_attempts", breaker.min_attempts, breaker_attempts,
                    "... when that window holds at least this many counted attempts"),
        integer_key("routes[].breaker.window_ms", breaker.window_ms, breaker_window,
                    "the window of failure_ratio"),
        integer_key("routes[].breaker.open_ms", breaker.open_ms, breaker_open,
                    "first open time; doubled on each re-open without a close in between, and at least the "
                    "Retry-After of the failure that opened it"),
        bounded_key("routes[].breaker.max_open_ms", breaker.max_open_ms, breaker_max_open, "at least open_ms",
                    "cap on the open time"),
        integer_key("routes[].breaker.probes", breaker.probes, breaker_probes,
                    "attempts in flight at once as probes while half-open"),
        other_key("routes[].breaker.fail_fast", breaker.fail_fast ? "true" : "false", "true or false",
                  "true: a turn whose every candidate is held back by breakers waits for the first half-open "
                  "inside its deadline and summed-wait bound, else gets 503 circuit_open"),
    };
}

// The retry budget and the `admission` block (section 14); a route's
// `admission` overrides any of them, `backpressure` key by key.
std::vector<KeySpec> load_specs(const policy::RetryConfig& retry) {
    const policy::AdmissionConfig admission;
    const policy::Backpressure& units = admission.backpressure;
    return {
        decimal_key("retry.budget_ratio", in_micro(retry.budget_ratio), budget_ratio,
                    "retry budget: a replay to a candidate is sent only while its replays in flight, counting it, "
                    "stay within max(budget_min_concurrency, budget_ratio x turns in flight on it)"),
        integer_key("retry.budget_min_concurrency", retry.budget_min_concurrency, budget_minimum,
                    "replays in flight to a candidate always allowed; at least 1 while budget_ratio is above 0, "
                    "both 0 turn replays off"),
        other_key("admission.enabled", admission.enabled ? "true" : "false", "true or false",
                  "true: each candidate keeps an adaptive limit on its attempts in flight"),
        integer_key("admission.initial_limit", admission.initial_limit, admission_limit,
                    "the limit a candidate starts with; min_limit <= initial_limit <= max_limit"),
        integer_key("admission.min_limit", admission.min_limit, admission_limit, "the lowest the limit falls to"),
        integer_key("admission.max_limit", admission.max_limit, admission_limit, "the highest the limit grows to"),
        decimal_key("admission.decrease", in_micro(admission.decrease), admission_decrease,
                    "a failure with u backpressure units multiplies the limit by decrease^u, at most once a second; "
                    "each success adds 1/limit, each second without backpressure adds 1"),
        integer_key("admission.backpressure.rate-limit", units.rate_limit, backpressure_units,
                    "backpressure units of an HTTP 429"),
        integer_key("admission.backpressure.overload", units.overload, backpressure_units,
                    "backpressure units of an HTTP 529 or an overloaded_error event"),
        integer_key("admission.backpressure.server", units.server, backpressure_units,
                    "backpressure units of any other server-class failure"),
        bounded_key("admission.queue_timeout_ms", admission.queue_timeout_ms, queue_wait,
                    "at most the timeout_ms of each route it applies to",
                    "longest wait for a slot, in arrival order, inside the turn deadline"),
        other_key("admission.honour_ratelimit_headers", admission.honour_ratelimit_headers ? "true" : "false",
                  "true or false",
                  "true: an answer saying the provider has 0 requests left holds new attempts to that candidate "
                  "until the reset it gives, at most max_delay_ms"),
    };
}

// The top-level `models` block (section 13).
std::vector<KeySpec> models_block_specs() {
    const ModelPolicy entry;
    return {
        other_key("models", "`[]`", "list of maps, one per client model name",
                  "how a client model's candidates are tried; a name without an entry takes the defaults"),
        other_key("models[].name", "(required)",
                  "a model some route lists by name (`\"*\"` does not count); once in `models`",
                  "the client model name the entry is for"),
        other_key("models[].balance", entry.balance == policy::Balance::ordered ? "ordered" : "weighted",
                  "ordered or weighted",
                  "ordered: a turn starts on the first usable deployment in config order; weighted: on the usable "
                  "one with the fewest turns in flight per unit of weight"),
        integer_key("models[].attempts_per_candidate", entry.attempts_per_candidate, attempts,
                    "attempts on one candidate before a replayable failure in fallback_on falls over"),
        other_key("models[].fallbacks", "`[]`",
                  "list of models some route lists by name; not the model itself; each once",
                  "other client models tried in order after this model's deployments; their own fallbacks are "
                  "not followed"),
        other_key("models[].fallback_on", classes_text(entry.fallback_on),
                  "list of network, timeout, server, rate-limit, stream-incomplete, content-filter, "
                  "invalid-request, not-found and `code:<X>`; `[]` never falls over",
                  "failures that move a turn to its next candidate; `code:X` matches a provider error whose "
                  "code (else, without a code, whose type) is X"),
    };
}

// Defaults come from the default-constructed structs of config.hpp and
// policy/retry_config.hpp, so the table shows what the loader really leaves.
std::vector<KeySpec> build_specs() {
    const Config config;
    const Limits& limits = config.limits;
    const policy::RetryConfig retry;
    const Route route;
    const char* const env_name = "environment variable name (`[A-Za-z_][A-Za-z0-9_]*`)";
    std::vector<KeySpec> specs{
        other_key("listen", config.listen_host + ":" + std::to_string(config.listen_port),
                  "HOST:PORT, IPv6 as [::1]:8080; port 0..65535 (0: any free port)",
                  "address the proxy listens on; `--listen` overrides it"),
        integer_key("workers", config.workers, worker_count,
                    "event loops; `--workers` overrides it", "one per core"),
        integer_key("limits.max_request_body_bytes", limits.max_request_body_bytes, body_bytes,
                    "larger request bodies get 413; a body is held in memory only as far as it has arrived "
                    "(plus 256 KiB), whatever its `Content-Length` announces"),
        integer_key("limits.max_header_bytes", limits.max_header_bytes, header_bytes,
                    "larger request heads get 431"),
        integer_key("limits.max_response_body_bytes", limits.max_response_body_bytes, body_bytes,
                    "a buffered upstream body or held stream bytes beyond it get 502"),
        integer_key("limits.max_event_bytes", limits.max_event_bytes, event_bytes,
                    "one SSE line longer than it (decoded bytes, after gzip or deflate) is refused: response_too_large"),
        integer_key("limits.header_timeout_ms", limits.header_timeout_ms, timeout,
                    "request head not complete by then: 408 and close"),
        integer_key("limits.idle_timeout_ms", limits.idle_timeout_ms, timeout,
                    "an idle keep-alive client connection is closed after it"),
        integer_key("limits.max_connections", limits.max_connections, connections,
                    "client connections beyond it get 503"),
        integer_key("limits.drain_ms", limits.drain_ms, timeout,
                    "how long SIGTERM lets in-flight turns finish"),
        other_key("clients.tokens_env", "(unset)", env_name,
                  "variable holding comma-separated tokens clients must present (section 12)"),
        other_key("clients.allow_unauthenticated", config.clients.allow_unauthenticated ? "true" : "false",
                  "true or false",
                  "true: serve a non-loopback address with an injected key and no client tokens"),
        integer_key("retry.max_attempts", retry.max_attempts, attempts,
                    "general bound: attempts per turn"),
        integer_key("retry.base_delay_ms", retry.base_delay_ms, delay,
                    "first wait; must be <= max_delay_ms"),
        integer_key("retry.max_delay_ms", retry.max_delay_ms, delay, "cap on one wait"),
        integer_key("retry.max_total_delay_ms", retry.max_total_delay_ms, summed_delay,
                    "summed waits per turn, general bound"),
        integer_key("retry.throttled_max_attempts", retry.throttled_max_attempts, throttled_attempts,
                    "bound when the failure decided is HTTP 429"),
        integer_key("retry.throttled_max_total_delay_ms", retry.throttled_max_total_delay_ms,
                    summed_delay, "summed waits per turn when the failure decided is HTTP 429"),
        other_key("retry.jitter", retry.jitter == policy::Jitter::none ? "none" : "full",
                  "none or full", "full: each wait is uniform in `[0, interval]`"),
        integer_key("retry.min_attempt_ms", retry.min_attempt_ms, min_attempt,
                    "no retry starts with less time than this left; must be < each route's timeout_ms"),
        other_key("boundary.secret_patterns", "`[]`", "list of non-empty regular expressions",
                  "extra secret shapes refused in 200 bodies (compiled at startup)"),
        other_key("boundary.default_patterns", config.boundary.default_patterns ? "true" : "false",
                  "true or false", "false: scan only for the configured keys and secret_patterns"),
        other_key("routes", "(required)", "list of at least one route", "where models are served"),
        other_key("routes[].name", "(required)", "letters, digits, `.`, `_`, `-`; unique",
                  "the route's name in records, metrics and messages"),
        other_key("routes[].upstream", "(required)",
                  "http:// or https:// URL with a host; no user info, query or fragment",
                  "the provider's base URL; its path is the base path"),
        other_key("routes[].api_key_env", "(unset)", env_name,
                  "variable whose value is sent upstream in place of client credentials"),
        other_key("routes[].api_key_header", route.api_key_header,
                  "HTTP header name (stored lower-case)", "header carrying the key upstream"),
        other_key("routes[].api_key_prefix", "\"Bearer \" for authorization, else \"\"",
                  "string without control characters", "written before the key in that header"),
        other_key("routes[].api_key_required", route.api_key_required ? "true" : "false",
                  "true or false; true needs api_key_env",
                  "true: an unset api_key_env fails startup instead of passing client credentials"),
        other_key("routes[].headers", "{}",
                  "map of header name to value; no hop-by-hop header, Host, Content-Length or Expect",
                  "static headers added upstream, in file order"),
        other_key("routes[].query", "{}", "map of non-empty name to value",
                  "static query parameters added upstream, in file order"),
        other_key("routes[].tls.ca_file", "\"\" (system trust store)", "file path; https upstreams only",
                  "trust roots for the upstream's certificate"),
        other_key("routes[].tls.cert_file", "\"\" (no client certificate)",
                  "file path; needs key_file; https upstreams only", "client certificate"),
        other_key("routes[].tls.key_file", "\"\"", "file path; needs cert_file; https upstreams only",
                  "client certificate's private key"),
        other_key("routes[].dialect", "openai", "openai, anthropic or generic",
                  "error and credential shapes of the upstream; generic turns off identity and end-marker rules"),
        integer_key("routes[].connect_timeout_ms", route.connect_timeout_ms, timeout,
                    "TCP connect plus TLS handshake"),
        integer_key("routes[].timeout_ms", route.timeout_ms, timeout, "turn deadline (section 6)"),
        integer_key("routes[].stream_idle_timeout_ms", route.stream_idle_timeout_ms, timeout,
                    "no upstream byte for this long: timeout"),
        integer_key("routes[].stream_head_hold_ms", route.stream_head_hold_ms, timeout,
                    "a stream turn that published nothing by then publishes its head (section 7)"),
        integer_key("routes[].max_stream_ms", route.max_stream_ms, stream_cap,
                    "cap on one published stream's length", "off"),
        other_key("routes[].models", "(required)",
                  "non-empty list of model names (shorthand) or maps; `\"*\"` as a name, in one route only",
                  "models the route serves; `\"*\"` serves every model no route names"),
        other_key("routes[].models[].name", "(required)",
                  "non-empty, no `*`, no control characters; once per route",
                  "what clients send in \"model\"; the routes listing it are its deployments, in config order"),
        other_key("routes[].models[].upstream_model", "the name", "non-empty, no `*`",
                  "rewritten into the upstream request body"),
        other_key("routes[].models[].accept",
                  "upstream_model and its dated snapshots (`-YYYY-MM-DD`, `-YYYYMMDD`, `-MMDD`; as `\"*\"` accepts)",
                  "non-empty list of globs (`*`)",
                  "response identities accepted, replacing the default; globs match the whole string, case-sensitively"),
        other_key("routes[].retry", "{} (the catalog)", "map with any key of `retry`",
                  "per-route override, merged over the catalog"),
        other_key("routes[].admission", "{} (the catalog)",
                  "map with any key of `admission`; `backpressure` merges key by key",
                  "per-route override, merged over the catalog"),
    };
    // The section 14 rows follow the retry catalog, the section 13 rows the
    // route's own timers, and the models block closes the table.
    const auto after_retry = std::find_if(specs.begin(), specs.end(),
                                          [](const KeySpec& spec) { return spec.path == "retry.min_attempt_ms"; });
    std::vector<KeySpec> load = load_specs(retry);
    specs.insert(after_retry + 1, load.begin(), load.end());
    const auto after = std::find_if(specs.begin(), specs.end(),
                                    [](const KeySpec& spec) { return spec.path == "routes[].max_stream_ms"; });
    std::vector<KeySpec> outage = outage_route_specs(route);
    specs.insert(after + 1, outage.begin(), outage.end());
    std::vector<KeySpec> models = models_block_specs();
    specs.insert(specs.end(), models.begin(), models.end());
    // Section 15: the fleet block after boundary, a route's quota after its admission.
    const auto after_boundary = std::find_if(
        specs.begin(), specs.end(), [](const KeySpec& spec) { return spec.path == "boundary.default_patterns"; });
    std::vector<KeySpec> fleet = fleet_specs();
    specs.insert(after_boundary + 1, fleet.begin(), fleet.end());
    const auto after_admission = std::find_if(
        specs.begin(), specs.end(), [](const KeySpec& spec) { return spec.path == "routes[].admission"; });
    std::vector<KeySpec> quota = quota_specs();
    specs.insert(after_admission + 1, quota.begin(), quota.end());
    // Section 16: a route's resume after its quota.
    const auto after_quota = std::find_if(specs.begin(), specs.end(), [](const KeySpec& spec) {
        return spec.path == "routes[].quota.tokens_per_minute";
    });
    std::vector<KeySpec> resume = resume_specs();
    specs.insert(after_quota + 1, resume.begin(), resume.end());
    return specs;
}

std::string_view first_segment(std::string_view rest) {
    const std::size_t end = rest.find_first_of(".[");
    return rest.substr(0, end);
}

}  // namespace

const std::vector<KeySpec>& key_specs() {
    static const std::vector<KeySpec> specs = build_specs();
    return specs;
}

const IntRange& integer_range(std::string_view path) {
    for (const KeySpec& spec : key_specs()) {
        if (spec.path == path && spec.integer) {
            return *spec.integer;
        }
    }
    std::fprintf(stderr, "modelproxy: config schema has no integer key %.*s\n",
                 static_cast<int>(path.size()), path.data());
    std::abort();
}

const DecimalRange& decimal_range(std::string_view path) {
    for (const KeySpec& spec : key_specs()) {
        if (spec.path == path && spec.decimal) {
            return *spec.decimal;
        }
    }
    std::fprintf(stderr, "modelproxy: config schema has no decimal key %.*s\n",
                 static_cast<int>(path.size()), path.data());
    std::abort();
}

std::vector<std::string> schema_children(std::string_view prefix) {
    std::vector<std::string> children;
    std::set<std::string_view> seen;
    for (const KeySpec& spec : key_specs()) {
        std::string_view rest = spec.path;
        if (!prefix.empty()) {
            if (rest.size() <= prefix.size() + 1 || rest.substr(0, prefix.size()) != prefix ||
                rest[prefix.size()] != '.') {
                continue;
            }
            rest.remove_prefix(prefix.size() + 1);
        }
        const std::string_view child = first_segment(rest);
        if (seen.insert(child).second) {
            children.emplace_back(child);
        }
    }
    return children;
}

bool is_schema_child(std::string_view prefix, std::string_view key) {
    for (const std::string& child : schema_children(prefix)) {
        if (child == key) {
            return true;
        }
    }
    return false;
}

std::string describe_range(const IntRange& range) {
    std::string text = std::to_string(range.min) + ".." + std::to_string(range.max);
    if (range.unit != Unit::count) {
        text += " (" + in_units(range.min, range.unit) + ".." + in_units(range.max, range.unit) + ")";
    }
    if (range.zero_is_off) {
        text = "0 (" + std::string(range.zero_means) + ") or " + text;
    }
    return text;
}

std::string range_violation(const IntRange& range, std::string_view got) {
    return "must be " + describe_range(range) + ", got " + std::string(got);
}

std::string decimal_text(std::int64_t value_micro) {
    std::string text = std::to_string(value_micro / micro);
    std::string fraction = std::to_string(micro + value_micro % micro).substr(1);  // six digits
    while (!fraction.empty() && fraction.back() == '0') {
        fraction.pop_back();
    }
    if (!fraction.empty()) {
        text += "." + fraction;
    }
    return text;
}

std::string describe_range(const DecimalRange& range) {
    return decimal_text(range.min_micro) + ".." + decimal_text(range.max_micro);
}

}  // namespace modelproxy::config::detail

namespace modelproxy::config {

const std::vector<KeyInfo>& schema_keys() {
    static const std::vector<KeyInfo> keys = [] {
        std::vector<KeyInfo> out;
        for (const detail::KeySpec& spec : detail::key_specs()) {
            out.push_back(KeyInfo{spec.path, spec.default_value, spec.range, spec.description});
        }
        return out;
    }();
    return keys;
}

std::string schema_reference_table() {
    std::string table = "| key | default | range | meaning |\n| --- | --- | --- | --- |\n";
    for (const KeyInfo& key : schema_keys()) {
        table += "| `" + key.path + "` | " + key.default_value + " | " + key.range + " | " +
                 key.description + " |\n";
    }
    return table;
}

}  // namespace modelproxy::config
