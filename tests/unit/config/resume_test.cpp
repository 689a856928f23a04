// A route's `resume` block (docs/behaviour.md section 16): its defaults, every
// key read, every refusal line, and doctor's resume line
// (config/route_load.hpp).
#include "config/config.hpp"
#include "config/route_load.hpp"

#include <catch2/catch.hpp>

#include <optional>

namespace mc = modelproxy::config;
using Lines = std::vector<std::string>;

namespace {

// One route whose flow map also holds `route` (without braces; "" for none).
std::string document(const std::string& route) {
    return "routes:\n  - {name: r, upstream: 'http://h', models: [m]" + (route.empty() ? "" : ", " + route) +
           "}\n";
}

Lines problem_lines(const std::string& yaml) {
    Lines lines;
    for (const mc::Problem& problem : mc::load_config(yaml).problems) {
        lines.push_back(problem.line());
    }
    return lines;
}

mc::Config load_ok(const std::string& yaml) {
    const mc::LoadResult result = mc::load_config(yaml);
    for (const mc::Problem& problem : result.problems) {
        UNSCOPED_INFO(problem.line());
    }
    REQUIRE(result.problems.empty());
    REQUIRE(result.config.has_value());
    return *result.config;
}

}  // namespace

TEST_CASE("without a resume block, or with an empty one, a route does not resume and has section 16's defaults") {
    const std::string route = GENERATE(as<std::string>{}, "", "resume: {}");
    CAPTURE(route);
    const mc::Config config = load_ok(document(route));
    const mc::Resume& resume = config.routes[0].resume;
    CHECK_FALSE(resume.enabled);
    CHECK(resume.max_resumes == 1);
    CHECK(resume.max_offset == 4096);
    CHECK(resume.only_deterministic);
    CHECK(resume == mc::Resume{});
}

TEST_CASE("the embedded default does not resume") {
    const mc::LoadResult result = mc::load_config(mc::embedded_default_yaml());
    REQUIRE(result.config.has_value());
    CHECK(result.config->routes[0].resume == mc::Resume{});
}

TEST_CASE("each resume key is read alone over the defaults") {
    auto [route, expected] = GENERATE(table<std::string, mc::Resume>({
        {"resume: {enabled: true}", mc::Resume{true, 1, 4096, true}},
        {"resume: {enabled: false}", mc::Resume{false, 1, 4096, true}},
        {"resume: {max_resumes: 2}", mc::Resume{false, 2, 4096, true}},
        {"resume: {max_offset: 100}", mc::Resume{false, 1, 100, true}},
        {"resume: {only_deterministic: false}", mc::Resume{false, 1, 4096, false}},
        {"resume: {enabled: true, max_resumes: 3, max_offset: 20000, only_deterministic: false}",
         mc::Resume{true, 3, 20000, false}},
    }));
    CAPTURE(route);
    CHECK(load_ok(document(route)).routes[0].resume == expected);
}

TEST_CASE("both ends of the resume ranges are accepted") {
    auto [route, resumes, offset] = GENERATE(table<std::string, int, std::int64_t>({
        {"resume: {enabled: true, max_resumes: 1, max_offset: 1}", 1, 1},
        {"resume: {enabled: true, max_resumes: 3, max_offset: 1000000}", 3, 1000000},
    }));
    CAPTURE(route);
    const mc::Config config = load_ok(document(route));
    const mc::Resume& resume = config.routes[0].resume;
    CHECK(resume.max_resumes == resumes);
    CHECK(resume.max_offset == offset);
}

TEST_CASE("each route has its own resume block") {
    const mc::Config config = load_ok(R"(routes:
  - name: a
    upstream: 'http://h'
    models: [m]
    resume:
      enabled: true
      max_offset: 512
  - {name: b, upstream: 'http://h', models: [n]}
)");
    CHECK(config.routes[0].resume == mc::Resume{true, 1, 512, true});
    CHECK(config.routes[1].resume == mc::Resume{});
}

TEST_CASE("resume values out of range or of the wrong type are refused with their path") {
    auto [route, expected] = GENERATE(table<std::string, std::string>({
        {"resume: {max_resumes: 0}", "routes[0].resume.max_resumes: must be 1..3, got 0"},
        {"resume: {max_resumes: 4}", "routes[0].resume.max_resumes: must be 1..3, got 4"},
        {"resume: {max_resumes: 5}", "routes[0].resume.max_resumes: must be 1..3, got 5"},
        {"resume: {max_resumes: -1}", "routes[0].resume.max_resumes: must be 1..3, got -1"},
        {"resume: {max_resumes: 99999999999999999999}",
         "routes[0].resume.max_resumes: must be 1..3, got 99999999999999999999"},
        {"resume: {max_resumes: 1.5}", "routes[0].resume.max_resumes: must be an integer"},
        {"resume: {max_resumes: \"2\"}", "routes[0].resume.max_resumes: must be an integer"},
        {"resume: {max_resumes: [1]}", "routes[0].resume.max_resumes: must be an integer"},
        {"resume: {max_offset: 0}", "routes[0].resume.max_offset: must be 1..1000000, got 0"},
        {"resume: {max_offset: 1000001}", "routes[0].resume.max_offset: must be 1..1000000, got 1000001"},
        {"resume: {max_offset: -4096}", "routes[0].resume.max_offset: must be 1..1000000, got -4096"},
        {"resume: {max_offset: 4k}", "routes[0].resume.max_offset: must be an integer"},
        {"resume: {enabled: yes}", "routes[0].resume.enabled: must be true or false"},
        {"resume: {enabled: 1}", "routes[0].resume.enabled: must be true or false"},
        {"resume: {enabled: \"true\"}", "routes[0].resume.enabled: must be true or false"},
        {"resume: {only_deterministic: off}", "routes[0].resume.only_deterministic: must be true or false"},
        {"resume: {only_deterministic: {}}", "routes[0].resume.only_deterministic: must be true or false"},
    }));
    CAPTURE(route);
    CHECK(problem_lines(document(route)) == Lines{expected});
}

TEST_CASE("a resume block that is not a map, or holds unknown or repeated keys, is refused") {
    auto [yaml, expected] = GENERATE(table<std::string, Lines>({
        {document("resume: true"), Lines{"routes[0].resume: must be a map"}},
        {document("resume: [enabled]"), Lines{"routes[0].resume: must be a map"}},
        {document("resume: 1"), Lines{"routes[0].resume: must be a map"}},
        {"routes:\n  - name: r\n    upstream: 'http://h'\n    models: [m]\n    resume:\n",
         Lines{"routes[0].resume: must be a map"}},
        {document("resume: {max_resume: 2}"),
         Lines{"routes[0].resume.max_resume: unknown key (did you mean max_resumes?)"}},
        {document("resume: {enable: true}"), Lines{"routes[0].resume.enable: unknown key (did you mean enabled?)"}},
        {document("resume: {max_offset_code_points: 10}"),
         Lines{"routes[0].resume.max_offset_code_points: unknown key"}},
        {document("resume: {deterministic_only: true}"), Lines{"routes[0].resume.deterministic_only: unknown key"}},
        {document("resume: {budget_ratio: 0.5}"), Lines{"routes[0].resume.budget_ratio: unknown key"}},
        {document("resumes: {enabled: true}"), Lines{"routes[0].resumes: unknown key (did you mean resume?)"}},
        {"resume: {enabled: true}\n" + document(""), Lines{"resume: unknown key"}},
        {document("resume: {enabled: true, enabled: false}"), Lines{"routes[0].resume.enabled: duplicate key"}},
    }));
    CAPTURE(yaml);
    CHECK(problem_lines(yaml) == expected);
}

TEST_CASE("every problem of a resume block is reported at once, in file order, on the route that has it") {
    const std::string yaml = R"(routes:
  - {name: a, upstream: 'http://h', models: [m]}
  - name: b
    upstream: 'http://h'
    models: [n]
    resume:
      enabled: on
      max_resumes: 5
      max_offset: 0
      only_deterministic: true
      extra: 1
)";
    CHECK(problem_lines(yaml) == Lines{"routes[1].resume.enabled: must be true or false",
                                       "routes[1].resume.max_resumes: must be 1..3, got 5",
                                       "routes[1].resume.max_offset: must be 1..1000000, got 0",
                                       "routes[1].resume.extra: unknown key"});
}

TEST_CASE("doctor's resume line for a route") {
    auto [route, expected] = GENERATE(table<std::string, std::optional<std::string>>({
        {"", std::nullopt},
        {"resume: {}", std::nullopt},
        {"resume: {enabled: false, max_resumes: 3, only_deterministic: false}", std::nullopt},
        {"resume: {enabled: true}",
         "  resume: up to 1 per turn, max_offset 4096 code points, only deterministic requests"},
        {"resume: {enabled: true, max_resumes: 3, max_offset: 1000000, only_deterministic: false}",
         "  resume: up to 3 per turn, max_offset 1000000 code points, any request"},
        {"resume: {enabled: true, max_resumes: 2, max_offset: 1}",
         "  resume: up to 2 per turn, max_offset 1 code point, only deterministic requests"},
    }));
    CAPTURE(route);
    CHECK(mc::render_route_resume(load_ok(document(route)).routes[0]) == expected);
}
