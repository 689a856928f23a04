// Micro-benchmark of the per-event response boundary checks (docs/behaviour.md section 8)
// on a typical ~200-byte chat chunk. Not built by default; one of the
// micro_benchmarks target (tests/bench/CMakeLists.txt):
//
//   cmake --build BUILD --target boundary_bench && BUILD/tests/bench/boundary_bench [events]
//   deploy/bench/run --micro                      (all of them)
//
// Times are this thread's CPU time per event, the median of seven runs with
// the min-max spread (tests/bench/bench.hpp).
//
// The headline ("identity + credentials per event") is the relay's whole
// per-event boundary work, called as proxy/stream_events.cpp calls it:
// the event's raw bytes to the credential stream scan, then for its data line
// the decoded pass (a memchr: these lines hold no escape), one
// Inspector::inspect (the only JSON parse, or none when the line repeats
// the last one's shape, as these chunks do), its answer-text fragments to
// the credential scan's second channel, and the line to the identity check.
// The events are sse::Event values as the Reader yields them for one event per
// upstream read: nothing readable past the event, so the Inspector copies the
// line into its padded buffer, as it does in the relay. The parts follow.
#include "sse/credentials.hpp"
#include "sse/identity.hpp"
#include "sse/inspect.hpp"
#include "sse/reader.hpp"
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

// One event of a stream, as sse::Reader yields it.
struct Chunk {
    std::string raw;        // "data: {...}\n\n"
    std::string padded;     // the line with room after it (the in-place case)
    std::string_view line;  // into raw
    std::string_view data[1];
    Event event;
};

}  // namespace

int main(int argc, char** argv) {
    const std::size_t events = modelproxy::bench::ops_from(argc, argv, 200'000);
    constexpr Endpoint chat = Endpoint::chat_completions;

    // A few different words so the text is not one repeated byte pattern.
    const std::vector<std::string> words = {" the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog"};
    std::vector<Chunk> chunks(words.size());
    for (std::size_t k = 0; k < words.size(); ++k) {
        Chunk& c = chunks[k];
        const std::string line = R"({"id":"chatcmpl-9xYzAbCdEfGh","object":"chat.completion.chunk","created":1720000000,)"
                                 R"("model":"gpt-4o-2024-08-06","system_fingerprint":"fp_abc123","choices":[{"index":0,)"
                                 R"("delta":{"content":")" + words[k] + R"("},"logprobs":null,"finish_reason":null}]})";
        c.raw = "data: " + line + "\n\n";
        c.padded = line + std::string(64, ' ');
        c.line = std::string_view(c.raw).substr(6, line.size());
        c.data[0] = c.line;
        c.event.raw = c.raw;
        c.event.data = c.data;
        c.event.readable_end = c.raw.data() + c.raw.size();  // the read ended with the event
    }
    std::printf("chunk: %zu raw bytes, a %zu-byte data line\n", chunks[0].raw.size(), chunks[0].line.size());
    const auto at = [&](std::size_t i) -> const Chunk& { return chunks[i % chunks.size()]; };

    const std::vector<std::string> keys = {"sk-proj-Zq7LmN3pR8sT1vW4xY6zA9bC2dE5fG8hJ0kL3mN6pQ9rS2tU5vW8xY1zA4"};
    auto built = CredentialScanner::build(keys, std::vector<std::string>{"corp-[0-9]{8}"}, true);
    if (auto* error = std::get_if<std::string>(&built)) {
        std::fprintf(stderr, "%s\n", error->c_str());
        return 1;
    }
    const CredentialScanner& scanner = std::get<CredentialScanner>(built);
    const IdentityRule rule = IdentityRule::wildcard_for("gpt-4o");

    // Each line inspected once, in place: the views stay valid (they point
    // into `padded`) for the parts below that reuse them.
    std::vector<Inspector> inspectors(chunks.size());
    std::vector<const DataInfo*> infos;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
        const Chunk& c = chunks[k];
        const std::string_view line(c.padded.data(), c.line.size());
        infos.push_back(&inspectors[k].inspect(line, chat, {}, c.padded.data() + c.padded.size()));
        if (infos.back()->answer_fragments.size() != 1) {
            std::fprintf(stderr, "expected one answer-text fragment per chunk\n");
            return 1;
        }
    }

    Inspector inspector;
    LineMemo memo;  // the stream's
    StreamIdentity identity(rule);
    StreamScan scan = scanner.stream_scan();

    // The relay's per-event work (proxy/stream_events.cpp).
    const auto relay_event = [&](const Event& e) {
        sink += static_cast<int>(scan.feed_bytes(e.raw));
        for (std::size_t i = 0; i < e.data.size(); ++i) {
            sink += static_cast<int>(scan.check_decoded_line(e.data[i]));
            const DataInfo& info = inspector.inspect(e, i, chat, memo);
            sink += static_cast<int>(scan.feed_answer_text(info.answer_fragments));
            sink += static_cast<int>(identity.on_line(info));
        }
    };
    const Figure all_ns = ns_per_event(events, [&](std::size_t i) { relay_event(at(i).event); });
    if (scan.verdict() != CredentialVerdict::clean || identity.finish() != IdentityVerdict::ok) {
        std::fprintf(stderr, "unexpected refusal: %.*s\n", static_cast<int>(scan.matched_rule().size()),
                     scan.matched_rule().data());
        return 1;
    }

    // The chunks differ only in their answer text, so after the first each
    // is read from the stream's memo, without a parse (sse/repeated_shape.hpp).
    const Figure inspect_ns = ns_per_event(events, [&](std::size_t i) {
        sink += inspector.inspect(at(i).event, 0, chat, memo).answer_text;
    });
    // Parsed whole: without the stream's memo.
    const Figure parse_ns = ns_per_event(events, [&](std::size_t i) {
        sink += inspector.inspect(at(i).event, 0, chat).answer_text;
    });
    const Figure parse_in_place_ns = ns_per_event(events, [&](std::size_t i) {
        const Chunk& c = at(i);
        sink += inspector.inspect(std::string_view(c.padded.data(), c.line.size()), chat, {},
                                  c.padded.data() + c.padded.size())
                    .answer_text;
    });
    // Parsed whole and learned, as every line of a stream whose lines never
    // repeat the last one's shape: the event name alternates (it changes
    // nothing else on chat), so no line matches what the memo learned.
    const std::string_view names[] = {"", "x"};
    const Figure learn_ns = ns_per_event(events, [&](std::size_t i) {
        sink += inspector.inspect(at(i).line, chat, names[i % 2], nullptr, memo).answer_text;
    });
    identity.reset();
    const Figure id_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(identity.on_line(*infos[i % infos.size()]));
    });
    scan.reset();
    const Figure raw_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(scan.feed_bytes(at(i).raw));
    });
    scan.reset();
    const Figure text_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(scan.feed_answer_text(infos[i % infos.size()]->answer_fragments));
    });
    scan.reset();
    const Figure plain_line_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(scan.check_decoded_line(at(i).line));
    });
    // A line whose answer text holds a newline, as \n: decoded and scanned again.
    std::vector<std::string> escaped_lines;
    for (const Chunk& c : chunks) {
        std::string line(c.line);
        line.insert(line.find(R"("},"logprobs")"), R"(\n)");
        escaped_lines.push_back(std::move(line));
    }
    const Figure escaped_line_ns = ns_per_event(events, [&](std::size_t i) {
        sink += static_cast<int>(scan.check_decoded_line(escaped_lines[i % escaped_lines.size()]));
    });
    scan.reset();
    identity.reset();
    const Figure checks_ns = ns_per_event(events, [&](std::size_t i) {
        const DataInfo& info = *infos[i % infos.size()];
        sink += static_cast<int>(scan.feed_bytes(at(i).raw));
        sink += static_cast<int>(scan.feed_answer_text(info.answer_fragments));
        sink += static_cast<int>(identity.on_line(info));
    });

    const std::size_t attempts = events / 100 + 1;
    const Figure open_ns = ns_per_event(attempts, [&](std::size_t) {
        StreamScan fresh = scanner.stream_scan();
        sink += static_cast<int>(fresh.feed_bytes(chunks[0].raw));
    });

    std::string body;
    for (int i = 0; i < 20; ++i) body += chunks[static_cast<std::size_t>(i) % chunks.size()].line;
    BodyScan block = scanner.body_scan();
    const Figure body_ns = ns_per_event(events / 10 + 1, [&](std::size_t) { sink += block.contains_secret(body); });
    std::string escaped_body;
    for (int i = 0; i < 20; ++i) escaped_body += escaped_lines[static_cast<std::size_t>(i) % escaped_lines.size()];
    const Figure escaped_body_ns =
        ns_per_event(events / 10 + 1, [&](std::size_t) { sink += block.contains_secret(escaped_body); });
    // A provider's answer head (reason and fields, as AnswerHead::bytes holds them).
    std::string head = "OK";
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"date", "Tue, 02 Dec 2025 04:38:27 GMT"}, {"content-type", "application/json"},
             {"openai-organization", "org-abc123"}, {"openai-processing-ms", "412"}, {"openai-version", "2020-10-01"},
             {"x-ratelimit-limit-requests", "10000"}, {"x-ratelimit-remaining-requests", "9999"},
             {"x-ratelimit-reset-requests", "6ms"}, {"x-request-id", "req_0123456789abcdef0123456789abcdef"},
             {"strict-transport-security", "max-age=31536000; includeSubDomains; preload"},
             {"cf-cache-status", "DYNAMIC"}, {"set-cookie", "__cf_bm=abcdefghijklmnopqrstuvwxyz0123456789; path=/"},
             {"server", "cloudflare"}, {"cf-ray", "8a1b2c3d4e5f6789-AMS"}, {"alt-svc", "h3=\":443\"; ma=86400"}})
        head += name + value;
    const Figure head_ns = ns_per_event(events, [&](std::size_t) { sink += scanner.key_in_head(head); });

    if (scan.verdict() != CredentialVerdict::clean || identity.finish() != IdentityVerdict::ok) {
        std::fprintf(stderr, "unexpected refusal: %.*s\n", static_cast<int>(scan.matched_rule().size()),
                     scan.matched_rule().data());
        return 1;
    }
    keep(sink);
    std::printf("events: %zu\n", events);
    using modelproxy::bench::print;
    print("identity + credentials per event (as the relay runs them)", all_ns, "ns/event");
    print("  Inspector::inspect (a line of the stream's last shape: no parse)", inspect_ns, "ns/event");
    print("  Inspector::inspect (parsed whole, copied into its padded buffer)", parse_ns, "ns/event");
    print("  Inspector::inspect (parsed whole, in place, padding readable)", parse_in_place_ns, "ns/event");
    print("  Inspector::inspect (parsed whole, copied, and learned)", learn_ns, "ns/event");
    print("  credentials: raw bytes stream scan", raw_ns, "ns/event");
    print("  credentials: answer-text stream scan (fragments)", text_ns, "ns/event");
    print("  credentials: decoded pass, a line without an escape (memchr)", plain_line_ns, "ns/event");
    print("  credentials: decoded pass, a line with a \\n escape (decoded, scanned)", escaped_line_ns, "ns/event");
    print("  identity (StreamIdentity::on_line)", id_ns, "ns/event");
    print("  both checks on an inspected line (no parse)", checks_ns, "ns/event");
    print("StreamScan per attempt (clone scratch, open)", open_ns, "ns");
    std::printf("BodyScan::contains_secret on a %zu-byte body:\n", body.size());
    print("  one body", body_ns, "ns");
    print("  one body whose lines hold a \\n escape (scanned twice)", escaped_body_ns, "ns");
    std::printf("CredentialScanner::key_in_head on a %zu-byte head:\n", head.size());
    print("  one head", head_ns, "ns");
    return 0;
}
