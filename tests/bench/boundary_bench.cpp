// Micro-benchmark of the per-event response boundary checks (SPEC section 8)
// on a typical ~200-byte chat chunk. Not built by default; one of the
// micro_benchmarks target (tests/bench/CMakeLists.txt):
//
//   cmake --build BUILD --target boundary_bench && BUILD/tests/bench/boundary_bench [events]
//   deploy/bench/run --micro                      (all of them)
//
// Times are this thread's CPU time per event, the median of seven runs with
// the min-max spread (tests/bench/bench.hpp).
//
// Prints ns per event for: identity alone (on an inspected line), the
// credential stream scan alone (raw bytes + answer-text channel), both
// together, and the Inspector's own parse plus both (the relay's whole
// per-event cost at the boundary).
#include "sse/credentials.hpp"
#include "sse/identity.hpp"
#include "sse/inspect.hpp"
#include "tests/bench/bench.hpp"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

using namespace modelproxy::sse;
using modelproxy::policy::Endpoint;

using modelproxy::bench::Figure;
using modelproxy::bench::keep;

namespace {

int sink = 0;

template <class F>
Figure ns_per_event(std::size_t events, F&& f) {
    return modelproxy::bench::ns_per_op(events, std::forward<F>(f));
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t events = modelproxy::bench::ops_from(argc, argv, 200'000);

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
    const Figure id_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(identity.on_line(infos[i % infos.size()]));
    });

    StreamScan scan = scanner.stream_scan();
    const Figure raw_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(scan.feed_bytes(raws[i % raws.size()]));
    });
    scan.reset();
    AnswerTextExtractor extractor;
    const Figure extract_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(extractor.extract(lines[i % lines.size()], Endpoint::chat_completions).size());
    });
    const Figure inspect_ns = ns_per_event(events, [&](std::size_t i) {
        sink += inspector.inspect(lines[i % lines.size()], Endpoint::chat_completions).answer_text;
    });
    const Figure cred_ns = ns_per_event(events, [&](std::size_t i) {
        const std::size_t k = i % lines.size();
        scan.feed_bytes(raws[k]);
        sink += static_cast<int>(scan.feed_data_line(lines[k], Endpoint::chat_completions));
    });

    identity.reset();
    scan.reset();
    const Figure both_ns = ns_per_event(events, [&](std::size_t i) {
        const std::size_t k = i % lines.size();
        sink += static_cast<int>(identity.on_line(infos[k]));
        scan.feed_bytes(raws[k]);
        sink += static_cast<int>(scan.feed_data_line(lines[k], Endpoint::chat_completions));
    });

    identity.reset();
    scan.reset();
    const Figure all_ns = ns_per_event(events, [&](std::size_t i) {
        const std::size_t k = i % lines.size();
        sink += static_cast<int>(identity.on_line(inspector.inspect(lines[k], Endpoint::chat_completions)));
        scan.feed_bytes(raws[k]);
        sink += static_cast<int>(scan.feed_data_line(lines[k], Endpoint::chat_completions));
    });

    const std::size_t attempts = events / 100 + 1;
    const Figure open_ns = ns_per_event(attempts, [&](std::size_t) {
        StreamScan fresh = scanner.stream_scan();
        sink += static_cast<int>(fresh.feed_bytes(raws[0]));
    });

    std::string body;
    for (int i = 0; i < 20; ++i) body += lines[static_cast<std::size_t>(i) % lines.size()];
    BodyScan block = scanner.body_scan();
    const Figure body_ns = ns_per_event(events / 10 + 1, [&](std::size_t) { sink += block.contains_secret(body); });

    if (scan.verdict() != CredentialVerdict::clean || identity.finish() != IdentityVerdict::ok) {
        std::fprintf(stderr, "unexpected refusal: %.*s\n", static_cast<int>(scan.matched_rule().size()),
                     scan.matched_rule().data());
        return 1;
    }
    keep(sink);
    std::printf("events: %zu\n", events);
    using modelproxy::bench::print;
    print("identity (StreamIdentity::on_line)", id_ns, "ns/event");
    print("  raw bytes stream scan alone", raw_ns, "ns/event");
    print("  answer-text extraction alone (simdjson)", extract_ns, "ns/event");
    print("Inspector::inspect alone (reference)", inspect_ns, "ns/event");
    print("credentials (raw + answer-text stream scan)", cred_ns, "ns/event");
    print("identity + credentials", both_ns, "ns/event");
    print("Inspector::inspect + identity + credentials", all_ns, "ns/event");
    print("StreamScan per attempt (clone scratch, open)", open_ns, "ns");
    std::printf("BodyScan::contains_secret on a %zu-byte body:\n", body.size());
    print("  one body", body_ns, "ns");
    return 0;
}
