// `modelproxy doctor [--config FILE] [--json]` (docs/behaviour.md sections 2, 6,
// 13 and 14), run as the real binary: the retry envelope, retry budget and
// admission per route, then the candidate plan of each model with several
// candidates, on stdout; warnings on stderr; exit 0; a bad or missing config
// exits 2.
#include "support/proxy_process.hpp"

#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <sstream>

using namespace modelproxy::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Lines = std::vector<std::string>;

namespace {

Lines lines_of(const std::string& text) {
    Lines lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::int64_t> waits_of(const boost::json::value& schedule) {
    std::vector<std::int64_t> waits;
    for (const auto& w : schedule.at("waits_ms").as_array()) waits.push_back(w.to_number<std::int64_t>());
    return waits;
}

std::string text_of(const boost::json::value& v) {
    return std::string(v.as_string());
}

// The --json message is the stderr line less its "modelproxy: warning: " lead.
std::string without_lead(const std::string& line) {
    constexpr std::string_view lead = "modelproxy: warning: ";
    REQUIRE(line.rfind(lead, 0) == 0);
    return line.substr(lead.size());
}

const std::string default_general_line =
    "  general: 8 attempts, waits 500 1000 2000 4000 8000 16000 20000 = 51500 ms (cap 60000)";
const std::string default_throttled_line =
    "  throttled: 24 attempts, waits 500 1000 2000 4000 8000 16000 20000x17 = 371500 ms (cap 380000)";
// Section 14's two lines, as every route without overrides shows them.
const std::string default_budget_line =
    "  retry budget: budget_ratio 0.2, budget_min_concurrency 3 (replays in flight to a candidate at most max(3, "
    "0.2 x its turns in flight))";
const std::string admission_off_line = "  admission: off";
constexpr std::size_t route_lines = 7;  // the envelope's five, then the budget and admission
// Section 15's last line, for every config without fleet.redis.
const std::string per_replica_line = "fleet: per replica (no fleet.redis)";

const Lines default_warnings{
    "modelproxy: warning: route openai: throttled_max_attempts 24 can never be reached: "
    "timeout_ms 300000 ends a turn of instant 429s after 20 attempts",
    "modelproxy: warning: route openai: throttled_max_total_delay_ms 380000 can never be reached: "
    "under timeout_ms 300000 the waits of one turn sum to at most 299000 ms (min_attempt_ms 1000)",
};

// Two routes; the second overrides max_attempts. Its key is required but
// unset: doctor reads no environment, so that is no error here.
constexpr const char* two_routes_yaml = R"(routes:
  - name: openai
    upstream: https://api.openai.com/v1
    models: [gpt-4o-mini]
  - name: local
    upstream: http://127.0.0.1:9/v1
    api_key_env: MODELPROXY_DOCTOR_TEST_KEY
    api_key_required: true
    models: [llama]
    retry: {max_attempts: 3}
)";

// gpt-4o has two deployments (east, west) and the fallback mini, served by
// west under another upstream name.
constexpr const char* deployments_yaml = R"(routes:
  - name: east
    upstream: http://127.0.0.1:9/v1
    first_byte_timeout_ms: 2000
    first_token_timeout_ms: 8000
    models: [gpt-4o]
  - name: west
    upstream: http://127.0.0.1:9/v1
    first_byte_timeout_ms: 2000
    first_token_timeout_ms: 8000
    models:
      - gpt-4o
      - {name: mini, upstream_model: gpt-4o-mini}
models:
  - name: gpt-4o
    fallbacks: [mini]
)";

const Lines deployment_plan_lines{
    "model gpt-4o: 3 candidates, balance ordered, 2 attempts per candidate",
    "  fallback_on: network, timeout, server, rate-limit, stream-incomplete",
    "  candidate 0: route east, upstream model gpt-4o",
    "  candidate 1: route west, upstream model gpt-4o",
    "  candidate 2: route west, upstream model gpt-4o-mini (fallback mini)",
    "  turn bounds from route east (the first deployment): timeout_ms 300000, max_attempts 8",
    "  worst case, through every candidate: 300000 ms (the turn deadline)",
    // 2 candidates * 2 attempts * (5000 connect + 2000 + 8000) + 2 waits of at most 20000
    "  a stream turn reaches candidate 2 within 100000 ms when every earlier candidate hangs",
    "model mini: 1 candidate, balance ordered, 2 attempts per candidate",
    "  fallback_on: network, timeout, server, rate-limit, stream-incomplete",
    "  candidate 0: route west, upstream model gpt-4o-mini",
    "  turn bounds from route west (the first deployment): timeout_ms 300000, max_attempts 8",
    "  worst case, through every candidate: 300000 ms (the turn deadline)",
};

const Lines deployment_plan_warnings{
    "modelproxy: warning: model gpt-4o: first_token_timeout_ms 8000 of candidate 2 (route west) never applies: "
    "no later candidate",
    "modelproxy: warning: model mini: first_token_timeout_ms 8000 of candidate 0 (route west) never applies: "
    "no later candidate",
};

}  // namespace

TEST_CASE("doctor prints the embedded default's envelope and warns on stderr", "[doctor]") {
    const CommandResult r = run_modelproxy({"doctor"});
    CAPTURE(r.out, r.err);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);  // warnings do not change the exit code
    CHECK(lines_of(r.out) == Lines{
        "route openai: timeout_ms 300000, min_attempt_ms 1000, jitter none",
        default_general_line,
        default_throttled_line,
        "  under the deadline, instant failures make 8 attempts (general, max_attempts), "
        "20 attempts (throttled, deadline)",
        "  worst case one turn: 300000 ms before anything is published (timeout_ms)",
        default_budget_line,
        admission_off_line,
        per_replica_line,
    });
    CHECK(lines_of(r.err) == default_warnings);
}

TEST_CASE("doctor --json prints one object with the exact numbers", "[doctor]") {
    const CommandResult r = run_modelproxy({"doctor", "--json"});
    CAPTURE(r.out, r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE(lines_of(r.out).size() == 1);  // exactly one JSON object, one line

    boost::json::error_code ec;
    const boost::json::value doc = boost::json::parse(r.out, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(doc.as_object().size() == 3);
    CHECK(doc.at("models").as_array().empty());  // one "*" route: no candidates to show
    CHECK(doc.at("fleet").is_null());            // no fleet.redis
    const auto& routes = doc.at("routes").as_array();
    REQUIRE(routes.size() == 1);
    const auto& route = routes[0];

    CHECK(route.at("name") == "openai");
    CHECK(route.at("max_attempts") == 8);
    CHECK(route.at("max_total_delay_ms") == 60000);
    CHECK(route.at("throttled_max_attempts") == 24);
    CHECK(route.at("throttled_max_total_delay_ms") == 380000);
    CHECK(route.at("deadline") == 300000);
    CHECK(route.at("min_attempt_ms") == 1000);
    CHECK(route.at("jitter") == "none");
    CHECK(route.at("worst_case_ms") == 300000);
    const auto& budget = route.at("retry_budget");
    CHECK(budget.at("ratio").to_number<double>() == Approx(0.2));
    CHECK(budget.at("min_concurrency") == 3);
    CHECK(budget.at("replays_off") == false);
    const auto& admission = route.at("admission");
    CHECK(admission.at("enabled") == false);
    CHECK(admission.at("initial_limit") == 64);
    CHECK(admission.at("min_limit") == 1);
    CHECK(admission.at("max_limit") == 1024);
    CHECK(admission.at("decrease").to_number<double>() == Approx(0.7));
    CHECK(admission.at("backpressure") == boost::json::object{{"rate-limit", 1}, {"overload", 3}, {"server", 0}});
    CHECK(admission.at("queue_timeout_ms") == 5000);
    CHECK(admission.at("honour_ratelimit_headers") == true);
    CHECK(route.at("quota").is_null());

    const auto& general = route.at("general");
    CHECK(waits_of(general) == std::vector<std::int64_t>{500, 1000, 2000, 4000, 8000, 16000, 20000});
    CHECK(general.at("sum_ms") == 51500);
    CHECK(general.at("unclamped_sum_ms") == 51500);
    CHECK(general.at("cap_ms") == 60000);
    CHECK(general.at("attempts") == 8);
    CHECK(general.at("ends_with") == "max_attempts");
    CHECK(general.at("attempts_under_deadline") == 8);
    CHECK(general.at("ends_with_under_deadline") == "max_attempts");

    std::vector<std::int64_t> throttled_waits{500, 1000, 2000, 4000, 8000, 16000};
    throttled_waits.insert(throttled_waits.end(), 17, 20000);
    const auto& throttled = route.at("throttled");
    CHECK(waits_of(throttled) == throttled_waits);
    CHECK(throttled.at("sum_ms") == 371500);
    CHECK(throttled.at("unclamped_sum_ms") == 371500);
    CHECK(throttled.at("cap_ms") == 380000);
    CHECK(throttled.at("attempts") == 24);
    CHECK(throttled.at("ends_with") == "throttled_max_attempts");
    CHECK(throttled.at("attempts_under_deadline") == 20);
    CHECK(throttled.at("ends_with_under_deadline") == "deadline");

    const auto& warnings = route.at("warnings").as_array();
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0].at("kind") == "bound_unreachable_under_deadline");
    CHECK(text_of(warnings[0].at("message")) == without_lead(default_warnings[0]));
    CHECK(warnings[1].at("kind") == "cap_unreachable_under_deadline");
    CHECK(text_of(warnings[1].at("message")) == without_lead(default_warnings[1]));

    // Warnings still go to stderr as lines; stdout holds only the object.
    CHECK(lines_of(r.err) == default_warnings);
}

TEST_CASE("doctor shows a per-route retry override", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("two.yaml", two_routes_yaml);
    const CommandResult r = run_modelproxy({"doctor", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    const Lines out = lines_of(r.out);
    REQUIRE(out.size() == 2 * route_lines + 1);
    CHECK(out.back() == per_replica_line);
    CHECK(out[0] == "route openai: timeout_ms 300000, min_attempt_ms 1000, jitter none");
    CHECK(out[1] == default_general_line);
    CHECK(out[7] == "route local: timeout_ms 300000, min_attempt_ms 1000, jitter none");
    CHECK(out[8] == "  general: 3 attempts, waits 500 1000 = 1500 ms (cap 60000)");
    CHECK(out[9] == default_throttled_line);  // the override touches max_attempts only
    CHECK(out[12] == default_budget_line);
    // Both routes keep the default throttled bounds, so both are warned about.
    const Lines err = lines_of(r.err);
    REQUIRE(err.size() == 4);
    CHECK_THAT(err[0], StartsWith("modelproxy: warning: route openai: "));
    CHECK_THAT(err[2], StartsWith("modelproxy: warning: route local: "));

    const CommandResult j = run_modelproxy({"doctor", "--config", path.string(), "--json"});
    CAPTURE(j.out, j.err);
    REQUIRE(j.exit_code == 0);
    const boost::json::value doc = boost::json::parse(j.out);
    const auto& routes = doc.at("routes").as_array();
    REQUIRE(routes.size() == 2);
    CHECK(routes[0].at("name") == "openai");
    CHECK(routes[1].at("name") == "local");
    CHECK(routes[1].at("max_attempts") == 3);
    CHECK(waits_of(routes[1].at("general")) == std::vector<std::int64_t>{500, 1000});
    CHECK(routes[1].at("general").at("sum_ms") == 1500);
    CHECK(routes[1].at("general").at("attempts") == 3);
}

TEST_CASE("doctor shows each route's retry budget and admission, catalog and overrides merged", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("load.yaml", R"(retry: {budget_ratio: 0, budget_min_concurrency: 0}
admission: {enabled: true, backpressure: {server: 2}}
routes:
  - name: quiet
    upstream: http://127.0.0.1:9/v1
    models: [a]
    admission: {enabled: false}
  - name: paced
    upstream: http://127.0.0.1:9/v1
    models: [b]
    retry: {budget_ratio: 0.5, budget_min_concurrency: 1}
    admission: {initial_limit: 16, min_limit: 2, max_limit: 256, decrease: 0.8, backpressure: {overload: 5},
                queue_timeout_ms: 0, honour_ratelimit_headers: false}
)");
    const CommandResult r = run_modelproxy({"doctor", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    const Lines out = lines_of(r.out);
    REQUIRE(out.size() == 2 * route_lines + 1);
    CHECK(Lines(out.begin() + 5, out.begin() + 7) ==
          Lines{"  retry budget: replays off (budget_ratio 0, budget_min_concurrency 0)", admission_off_line});
    CHECK(Lines(out.begin() + 12, out.end() - 1) ==
          Lines{"  retry budget: budget_ratio 0.5, budget_min_concurrency 1 (replays in flight to a candidate at "
                "most max(1, 0.5 x its turns in flight))",
                "  admission: on, initial_limit 16, min_limit 2, max_limit 256, decrease 0.8, backpressure "
                "rate-limit 1 overload 5 server 2, queue_timeout_ms 0 (the turn deadline), pacing on rate-limit "
                "headers no"});

    const CommandResult j = run_modelproxy({"doctor", "--config", path.string(), "--json"});
    CAPTURE(j.out, j.err);
    REQUIRE(j.exit_code == 0);
    const boost::json::value doc = boost::json::parse(j.out);
    const auto& routes = doc.at("routes").as_array();
    REQUIRE(routes.size() == 2);
    CHECK(routes[0].at("retry_budget").at("replays_off") == true);
    CHECK(routes[0].at("admission").at("enabled") == false);
    CHECK(routes[0].at("admission").at("backpressure").at("server") == 2);  // the catalog's, merged
    const auto& paced = routes[1];
    CHECK(paced.at("retry_budget") ==
          boost::json::object{{"ratio", 0.5}, {"min_concurrency", 1}, {"replays_off", false}});
    // Decimals compared apart: a parsed double may differ from the written one in its last bit.
    boost::json::object admission = paced.at("admission").as_object();
    CHECK(admission.at("decrease").to_number<double>() == Approx(0.8));
    admission.erase("decrease");
    CHECK(admission == boost::json::object{{"enabled", true},
                                           {"initial_limit", 16},
                                           {"min_limit", 2},
                                           {"max_limit", 256},
                                           {"backpressure", {{"rate-limit", 1}, {"overload", 5}, {"server", 2}}},
                                           {"queue_timeout_ms", 0},
                                           {"honour_ratelimit_headers", false}});
}

TEST_CASE("doctor prints each model's candidates, attempts and worst case after the routes", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("deployments.yaml", deployments_yaml);
    const CommandResult r = run_modelproxy({"doctor", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);  // warnings do not change the exit code
    const Lines out = lines_of(r.out);
    REQUIRE(out.size() == 2 * route_lines + deployment_plan_lines.size() + 1);  // two routes first, the fleet last
    CHECK(out[0] == "route east: timeout_ms 300000, min_attempt_ms 1000, jitter none");
    CHECK(out[route_lines] == "route west: timeout_ms 300000, min_attempt_ms 1000, jitter none");
    CHECK(Lines(out.begin() + 2 * route_lines, out.end() - 1) == deployment_plan_lines);
    CHECK(out.back() == per_replica_line);
    const Lines err = lines_of(r.err);
    REQUIRE(err.size() == 4 + deployment_plan_warnings.size());  // the envelopes' warnings first
    CHECK(Lines(err.begin() + 4, err.end()) == deployment_plan_warnings);
}

TEST_CASE("doctor --json carries each model's candidate plan", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("deployments.yaml", deployments_yaml);
    const CommandResult r = run_modelproxy({"doctor", "--config", path.string(), "--json"});
    CAPTURE(r.out, r.err);
    REQUIRE(r.exit_code == 0);
    const boost::json::value doc = boost::json::parse(r.out);
    CHECK(doc.at("routes").as_array().size() == 2);
    const auto& models = doc.at("models").as_array();
    REQUIRE(models.size() == 2);

    const auto& gpt = models[0];
    CHECK(gpt.at("name") == "gpt-4o");
    CHECK(gpt.at("balance") == "ordered");
    CHECK(gpt.at("attempts_per_candidate") == 2);
    const auto& on = gpt.at("fallback_on").as_array();
    REQUIRE(on.size() == 5);
    CHECK(on[0] == "network");
    CHECK(on[4] == "stream-incomplete");
    const auto& candidates = gpt.at("candidates").as_array();
    REQUIRE(candidates.size() == 3);
    CHECK(candidates[0].at("index") == 0);
    CHECK(candidates[0].at("route") == "east");
    CHECK(candidates[0].at("upstream_model") == "gpt-4o");
    CHECK(candidates[0].at("model") == "gpt-4o");
    CHECK(candidates[0].at("fallback") == false);
    CHECK(candidates[2].at("index") == 2);
    CHECK(candidates[2].at("route") == "west");
    CHECK(candidates[2].at("upstream_model") == "gpt-4o-mini");
    CHECK(candidates[2].at("model") == "mini");
    CHECK(candidates[2].at("fallback") == true);
    CHECK(gpt.at("deadline_route") == "east");
    CHECK(gpt.at("deadline") == 300000);
    CHECK(gpt.at("max_attempts") == 8);
    CHECK(gpt.at("worst_case_ms") == 300000);
    CHECK(gpt.at("stream_reach_last_ms") == 100000);
    const auto& warnings = gpt.at("warnings").as_array();
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].at("kind") == "first_token_never_applies");
    CHECK(text_of(warnings[0].at("message")) == without_lead(deployment_plan_warnings[0]));

    const auto& mini = models[1];
    CHECK(mini.at("name") == "mini");
    CHECK(mini.at("candidates").as_array().size() == 1);
    CHECK(mini.at("stream_reach_last_ms").is_null());
    CHECK(text_of(mini.at("warnings").as_array().at(0).at("message")) == without_lead(deployment_plan_warnings[1]));
    // stderr still carries every warning as a line.
    const Lines err = lines_of(r.err);
    REQUIRE(err.size() == 6);
    CHECK(Lines(err.begin() + 4, err.end()) == deployment_plan_warnings);
}

TEST_CASE("doctor warns where a timer is at or above the turn deadline", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("timers.yaml", R"(routes:
  - name: short
    upstream: http://127.0.0.1:9/v1
    timeout_ms: 3000
    stream_idle_timeout_ms: 1000
    models: [m]
  - name: slow
    upstream: http://127.0.0.1:9/v1
    first_byte_timeout_ms: 3000
    stream_idle_timeout_ms: 5000
    models: [m]
)");
    const CommandResult r = run_modelproxy({"doctor", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    const Lines err = lines_of(r.err);
    // Turns of m end at route short's deadline, 3000 ms: slow's timers never
    // get to act in them.
    const Lines expected{
        "modelproxy: warning: model m: first_byte_timeout_ms 3000 of candidate 1 (route slow) is at or above the "
        "turn deadline (timeout_ms 3000 of route short): it can never fire",
        "modelproxy: warning: model m: stream_idle_timeout_ms 5000 of candidate 1 (route slow) is at or above the "
        "turn deadline (timeout_ms 3000 of route short): it can fire only once a stream publishes",
    };
    REQUIRE(err.size() >= expected.size());
    CHECK(Lines(err.end() - static_cast<std::ptrdiff_t>(expected.size()), err.end()) == expected);
    const Lines out = lines_of(r.out);
    REQUIRE(out.size() >= 2);
    CHECK(out.back() == per_replica_line);
    CHECK(out[out.size() - 2] == "  a hang on candidate 0 keeps a stream turn from later candidates until the deadline: "
                        "first_byte_timeout_ms is off on route short");
}

TEST_CASE("doctor shows a route's quota after its admission, and the fleet last, the password by name", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("fleet.yaml", R"(fleet:
  redis: rediss://Redis.Test:6380/2
  password_env: MP_DOCTOR_REDIS_PASSWORD
  key_prefix: "team-a:"
  timeout_ms: 20
routes:
  - name: limited
    upstream: http://127.0.0.1:9/v1
    models: [a]
    quota: {requests_per_minute: 600, tokens_per_minute: 90000}
  - name: open
    upstream: http://127.0.0.1:9/v1
    models: [b]
)");
    // The password variable is unset: doctor reads no environment.
    const CommandResult r = run_modelproxy({"doctor", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    const Lines out = lines_of(r.out);
    REQUIRE(out.size() == 2 * route_lines + 2);
    CHECK(out[route_lines] == "  quota: requests_per_minute 600, tokens_per_minute 90000, shared by the fleet");
    CHECK(out[route_lines + 1] == "route open: timeout_ms 300000, min_attempt_ms 1000, jitter none");
    CHECK(out.back() == "fleet: redis rediss://redis.test:6380/2, key_prefix team-a:, timeout_ms 20, password from "
                        "MP_DOCTOR_REDIS_PASSWORD");

    const CommandResult j = run_modelproxy({"doctor", "--config", path.string(), "--json"});
    CAPTURE(j.out, j.err);
    REQUIRE(j.exit_code == 0);
    const boost::json::value doc = boost::json::parse(j.out);
    const auto& routes = doc.at("routes").as_array();
    REQUIRE(routes.size() == 2);
    CHECK(routes[0].at("quota") == boost::json::object{{"requests_per_minute", 600}, {"tokens_per_minute", 90000}});
    CHECK(routes[1].at("quota").is_null());
    CHECK(doc.at("fleet") == boost::json::object{{"redis", "rediss://redis.test:6380/2"},
                                                 {"key_prefix", "team-a:"},
                                                 {"timeout_ms", 20},
                                                 {"password_env", "MP_DOCTOR_REDIS_PASSWORD"},
                                                 {"ca_file", ""}});
}

TEST_CASE("doctor with a bad config exits 2 naming the key path", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("bad.yaml", R"(routes:
  - name: a
    upstream: https://a.test/v1
    models: [m1]
  - name: b
    upstream: https://b.test/v1
    models: [m2]
    retry: {max_attempts: 40}
)");
    for (const bool json : {false, true}) {
        std::vector<std::string> args{"doctor", "--config", path.string()};
        if (json) args.push_back("--json");
        const CommandResult r = run_modelproxy(args);
        CAPTURE(json, r.out, r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        const Lines err = lines_of(r.err);
        REQUIRE(err.size() == 1);
        CHECK_THAT(err[0], Contains("routes[1].retry.max_attempts"));
    }
}

TEST_CASE("doctor with a missing config file exits 2", "[doctor]") {
    TempDir dir("doctor");
    const auto missing = (dir.path() / "missing.yaml").string();
    const CommandResult r = run_modelproxy({"doctor", "--config", missing});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(lines_of(r.err) == Lines{"modelproxy: cannot read " + missing});
}

TEST_CASE("doctor shows a route's resume after its load lines, and --json carries it for every route", "[doctor]") {
    TempDir dir("doctor");
    const auto path = dir.write("resume.yaml", R"(routes:
  - name: resumed
    upstream: http://127.0.0.1:9/v1
    models: [a]
    resume: {enabled: true, max_resumes: 2, max_offset: 100, only_deterministic: false}
  - name: plain
    upstream: http://127.0.0.1:9/v1
    models: [b]
)");
    const CommandResult r = run_modelproxy({"doctor", "--config", path.string()});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    const Lines out = lines_of(r.out);
    REQUIRE(out.size() == 2 * route_lines + 2);  // the fleet line last
    CHECK(out[route_lines] == "  resume: up to 2 per turn, max_offset 100 code points, any request");
    CHECK(out[route_lines + 1] == "route plain: timeout_ms 300000, min_attempt_ms 1000, jitter none");

    const CommandResult j = run_modelproxy({"doctor", "--config", path.string(), "--json"});
    CAPTURE(j.out, j.err);
    REQUIRE(j.exit_code == 0);
    const boost::json::value doc = boost::json::parse(j.out);
    const auto& routes = doc.at("routes").as_array();
    REQUIRE(routes.size() == 2);
    CHECK(routes[0].at("resume") == boost::json::object{{"enabled", true},
                                                        {"max_resumes", 2},
                                                        {"max_offset", 100},
                                                        {"only_deterministic", false}});
    CHECK(routes[1].at("resume") == boost::json::object{{"enabled", false},
                                                        {"max_resumes", 1},
                                                        {"max_offset", 4096},
                                                        {"only_deterministic", true}});
}
