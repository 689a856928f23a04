// `modelproxy doctor [--config FILE] [--json]` (docs/behaviour.md sections 2 and 6), run
// as the real binary: the retry envelope per route on stdout, warnings on
// stderr, exit 0; a bad or missing config exits 2.
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
    REQUIRE(doc.as_object().size() == 1);
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
    REQUIRE(out.size() == 10);
    CHECK(out[0] == "route openai: timeout_ms 300000, min_attempt_ms 1000, jitter none");
    CHECK(out[1] == default_general_line);
    CHECK(out[5] == "route local: timeout_ms 300000, min_attempt_ms 1000, jitter none");
    CHECK(out[6] == "  general: 3 attempts, waits 500 1000 = 1500 ms (cap 60000)");
    CHECK(out[7] == default_throttled_line);  // the override touches max_attempts only
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
