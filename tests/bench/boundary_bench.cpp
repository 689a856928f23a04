// Micro-benchmark of the per-event response boundary checks (SPEC section 8)
// on a typical ~200-byte chat chunk. Not built by default:
//
//   cmake --build build-boundary --target mp_sse
//   g++ -std=c++20 -O2 -DNDEBUG -I. tests/bench/boundary_bench.cpp
//       build-boundary/sse/libmp_sse.a build-boundary/policy/libmp_policy.a
//       $(pkg-config --cflags --libs libhs simdjson) -o build-boundary/boundary_bench
//   build-boundary/boundary_bench [events]
//
// (one command line). Times are this thread's CPU time, the best of five
// runs, so a loaded machine inflates them less than wall-clock time would.
//
// Prints ns per event for: identity alone (on an inspected line), the
// credential stream scan alone (raw bytes + answer-text channel), both
// together, and the Inspector's own parse plus both (the relay's whole
// per-event cost at the boundary).
#include "sse/credentials.hpp"
#include "sse/identity.hpp"
#include "sse/inspect.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <string>
#include <vector>

using namespace modelproxy::sse;
using modelproxy::policy::Endpoint;

namespace {

int sink = 0;

double cpu_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

template <class F>
double ns_per_event(std::size_t events, F&& f) {
    double best = 1e300;
    for (int run = 0; run < 5; ++run) {
        const double start = cpu_ns();
        for (std::size_t i = 0; i < events; ++i) f(i);
        best = std::min(best, (cpu_ns() - start) / static_cast<double>(events));
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;

    // A few different words so the text is not one repeated byte pattern.
    const std::vector<std::string> words = {" the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog"};
    std::vector<std::string> lines, raws;
    for (const std::string& w : words) {
        lines.push_back(R"({"id":"chatcmpl-9xYzAbCdEfGh","object":"chat.completion.chunk","created":1720000000,)"
                        R"("model":"gpt-4o-2024-08-06","system_fingerprint":"fp_abc123","choices":[{"index":0,)"
                        R"("delta":{"content":")" + w + R"("},"logprobs":null,"finish_reason":null}]})");
        raws.push_back("data: " + lines.back() + "\n\n");
    }
    std::printf("chunk: %zu raw bytes\n", raws[0].size());

    const std::vector<std::string> keys = {"sk-proj-Zq7LmN3pR8sT1vW4xY6zA9bC2dE5fG8hJ0kL3mN6pQ9rS2tU5vW8xY1zA4"};
    auto built = CredentialScanner::build(keys, std::vector<std::string>{"corp-[0-9]{8}"}, true);
    if (auto* error = std::get_if<std::string>(&built)) {
        std::fprintf(stderr, "%s\n", error->c_str());
        return 1;
    }
    const CredentialScanner& scanner = std::get<CredentialScanner>(built);
    const IdentityRule rule = IdentityRule::wildcard_for("gpt-4o");

    Inspector inspector;
    std::vector<DataInfo> infos;  // copies: views point at `lines`
    for (const std::string& line : lines) infos.push_back(inspector.inspect(line, Endpoint::chat_completions));

    StreamIdentity identity(rule);
    const double id_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(identity.on_line(infos[i % infos.size()]));
    });

    StreamScan scan = scanner.stream_scan();
    const double raw_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(scan.feed_bytes(raws[i % raws.size()]));
    });
    scan.reset();
    AnswerTextExtractor extractor;
    const double extract_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(extractor.extract(lines[i % lines.size()], Endpoint::chat_completions).size());
    });
    const double inspect_ns = ns_per_event(events, [&](std::size_t i) {
        sink += inspector.inspect(lines[i % lines.size()], Endpoint::chat_completions).answer_text;
    });
    const double cred_ns = ns_per_event(events, [&](std::size_t i) {
        const std::size_t k = i % lines.size();
        scan.feed_bytes(raws[k]);
        sink += static_cast<int>(scan.feed_data_line(lines[k], Endpoint::chat_completions));
    });

    identity.reset();
    scan.reset();
    const double both_ns = ns_per_event(events, [&](std::size_t i) {
        const std::size_t k = i % lines.size();
        sink += static_cast<int>(identity.on_line(infos[k]));
        scan.feed_bytes(raws[k]);
        sink += static_cast<int>(scan.feed_data_line(lines[k], Endpoint::chat_completions));
    });

    identity.reset();
    scan.reset();
    const double all_ns = ns_per_event(events, [&](std::size_t i) {
        const std::size_t k = i % lines.size();
        sink += static_cast<int>(identity.on_line(inspector.inspect(lines[k], Endpoint::chat_completions)));
        scan.feed_bytes(raws[k]);
        sink += static_cast<int>(scan.feed_data_line(lines[k], Endpoint::chat_completions));
    });

    const std::size_t attempts = events / 100 + 1;
    const double open_ns = ns_per_event(attempts, [&](std::size_t) {
        StreamScan fresh = scanner.stream_scan();
        sink += static_cast<int>(fresh.feed_bytes(raws[0]));
    });

    std::string body;
    for (int i = 0; i < 20; ++i) body += lines[static_cast<std::size_t>(i) % lines.size()];
    BodyScan block = scanner.body_scan();
    const double body_ns = ns_per_event(events / 10 + 1, [&](std::size_t) { sink += block.contains_secret(body); });

    if (scan.verdict() != CredentialVerdict::clean || identity.finish() != IdentityVerdict::ok) {
        std::fprintf(stderr, "unexpected refusal: %.*s\n", static_cast<int>(scan.matched_rule().size()),
                     scan.matched_rule().data());
        return 1;
    }
    std::printf("events: %zu\n", events);
    std::printf("identity (StreamIdentity::on_line)             %7.1f ns/event\n", id_ns);
    std::printf("  raw bytes stream scan alone                  %7.1f ns/event\n", raw_ns);
    std::printf("  answer-text extraction alone (simdjson)      %7.1f ns/event\n", extract_ns);
    std::printf("Inspector::inspect alone (existing, reference) %7.1f ns/event\n", inspect_ns);
    std::printf("credentials (raw + answer-text stream scan)    %7.1f ns/event\n", cred_ns);
    std::printf("identity + credentials                         %7.1f ns/event\n", both_ns);
    std::printf("Inspector::inspect + identity + credentials    %7.1f ns/event\n", all_ns);
    std::printf("StreamScan per attempt (clone scratch, open)   %7.1f ns\n", open_ns);
    std::printf("BodyScan::contains_secret, %zu-byte body      %7.1f ns\n", body.size(), body_ns);
    return 0;
}
