// Micro-benchmark of routing on a request body (docs/behaviour.md section 4, request/body.hpp
// and request/routing.hpp): what the session does with each request before
// anything goes upstream. Not built by default; one of the micro_benchmarks
// target (tests/bench/CMakeLists.txt):
//
//   cmake --build BUILD --target routing_bench && BUILD/tests/bench/routing_bench [requests]
//
// Bodies: the 75-byte request deploy/bench's wrk sends, a ~2 KiB chat with a
// short history, and a ~64 KiB long context. The config has three routes
// (one a "*" route) and eight models, loaded from YAML as at startup.
// Prints ns per request for inspect_body (JSON validation and the top-level
// routing members), decide_route alone, upstream_body with and without a
// model rewrite, and the whole sequence the session runs (check_path,
// dispatch, inspect_body, decide_route, upstream_target, upstream_body).
#include "config/config.hpp"
#include "request/body.hpp"
#include "request/routing.hpp"
#include "request/target.hpp"
#include "tests/bench/bench.hpp"

#include <cstdio>
#include <string>
#include <variant>

using namespace modelproxy;
using modelproxy::bench::keep;
using modelproxy::bench::print;

namespace {

constexpr const char* config_yaml = R"(
routes:
  - name: openai
    upstream: https://api.openai.com/v1
    models:
      - gpt-4o
      - gpt-4o-mini
      - name: fast
        upstream_model: gpt-4o-mini
      - o3-mini
  - name: anthropic
    upstream: https://api.anthropic.com/v1
    dialect: anthropic
    models: [claude-sonnet-4-5, claude-haiku-4-5, claude-opus-4-1]
  - name: rest
    upstream: https://models.example.net/v1
    models: ["*"]
)";

std::string chat_body(std::string_view model, std::size_t history_bytes) {
    std::string body = R"({"model":")" + std::string(model) + R"(","messages":[)";
    body += R"({"role":"system","content":"You are a helpful assistant."})";
    const std::string turn = R"(,{"role":"user","content":"Tell me about reverse proxies, caching and retries in some detail."})"
                             R"(,{"role":"assistant","content":"A reverse proxy sits in front of servers and forwards requests; it can retry failed ones and cache answers."})";
    while (body.size() < history_bytes) body += turn;
    body += R"(,{"role":"user","content":"Say hello."}],"temperature":0.2,"stream":false})";
    return body;
}

void bench_body(const char* label, const std::string& body, const config::Config& config, std::size_t requests) {
    std::printf("%s: %zu bytes\n", label, body.size());
    const bench::Figure inspect = bench::ns_per_op(requests, [&](std::size_t) {
        keep(request::inspect_body("application/json", body));
    });
    print("  inspect_body (validate, read model/stream)", inspect);
    const request::BodyFacts facts = request::inspect_body("application/json", body);
    const bench::Figure route = bench::ns_per_op(requests, [&](std::size_t) {
        keep(request::decide_route("POST", "/v1/chat/completions", facts, config));
    });
    print("  decide_route", route);
    const bench::Figure rewrite = bench::ns_per_op(requests, [&](std::size_t) {
        keep(request::upstream_body(body, facts, "gpt-4o-mini-2024-07-18"));
    });
    print("  upstream_body, model rewritten", rewrite);
    const bench::Figure whole = bench::ns_per_op(requests, [&](std::size_t) {
        const request::Target target = request::check_path("/v1/chat/completions");
        keep(request::dispatch("POST", target.path));
        const request::BodyFacts f = request::inspect_body("application/json", body);
        const request::RouteDecision decision = request::decide_route("POST", target.path, f, config);
        const auto* forward = std::get_if<request::Forward>(&decision);
        if (forward == nullptr) return;
        keep(request::upstream_target(*forward->route, target.path, target.query));
        if (forward->upstream_model) keep(request::upstream_body(body, f, *forward->upstream_model));
    });
    print("  whole routing sequence", whole);
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t requests = bench::ops_from(argc, argv, 100'000);
    const config::LoadResult loaded = config::load_config(config_yaml);
    if (!loaded.config) {
        for (const config::Problem& p : loaded.problems) std::fprintf(stderr, "%s\n", p.line().c_str());
        return 1;
    }
    const config::Config& config = *loaded.config;
    const std::string small = R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]})";
    const request::RouteDecision check = request::decide_route(
        "POST", "/v1/chat/completions", request::inspect_body("application/json", small), config);
    if (!std::holds_alternative<request::Forward>(check)) {
        std::fprintf(stderr, "routing_bench: the small body is not forwarded\n");
        return 1;
    }
    std::printf("requests per run: %zu (64 KiB body: a tenth of them)\n", requests);
    bench_body("deploy/bench's request, model gpt-4o-mini", small, config, requests);
    bench_body("chat with history, model fast (rewritten)", chat_body("fast", 2048), config, requests);
    bench_body("long context, model claude-sonnet-4-5", chat_body("claude-sonnet-4-5", 65536), config,
               requests / 10 + 1);
    return 0;
}
