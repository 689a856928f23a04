// Micro-benchmark of the SSE reader (docs/behaviour.md section 7, "Parsing") per event, on
// the stream deploy/bench serves: a 200-event chat.completion.chunk stream
// (~265 bytes per event on the wire). Not built by default; one of the
// micro_benchmarks target (tests/bench/CMakeLists.txt):
//
//   cmake --build BUILD --target sse_reader_bench && BUILD/tests/bench/sse_reader_bench [streams]
//
// Prints ns per event for the reader alone (the whole stream in one chunk; in
// 4 KiB reads, as sockets hand it over; in 100-byte reads, so most events span
// chunks and are copied once), and for the reader plus the Inspector's parse
// of each data line (the relay's per-event reading cost before the boundary
// checks, which tests/bench/boundary_bench.cpp measures).
#include "sse/inspect.hpp"
#include "sse/reader.hpp"
#include "tests/bench/bench.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

using namespace modelproxy::sse;
using modelproxy::bench::Figure;
using modelproxy::policy::Endpoint;

namespace {

std::string chunk(std::string_view delta, std::string_view finish_reason) {
    std::string line = R"(data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk",)";
    line += R"("created":1741569952,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_06737a9306",)";
    line += R"("choices":[{"index":0,"delta":)";
    line += delta;
    line += R"(,"logprobs":null,"finish_reason":)";
    line += finish_reason;
    line += "}]}\n\n";
    return line;
}

// The same shape as deploy/bench/bodies.sh's stream.sse: a role chunk, 197
// answer chunks, a finish_reason chunk and [DONE]: 200 events.
std::string stream_body() {
    const std::vector<std::string_view> words = {" the", " quick", " brown", " fox", " jumps", " over", " the",
                                                 " lazy", " dog,", " and", " then", " it", " rests."};
    std::string body = chunk(R"({"role":"assistant","content":"","refusal":null})", "null");
    for (std::size_t i = 0; i < 197; ++i)
        body += chunk(R"({"content":")" + std::string(words[i % words.size()]) + R"("})", "null");
    body += chunk("{}", R"("stop")");
    body += "data: [DONE]\n\n";
    return body;
}

// Reads the whole stream in reads of `read_size` bytes (0: one chunk) and
// returns the events read; with an inspector, every data line is inspected.
std::size_t read_stream(Reader& reader, std::string_view body, std::size_t read_size, Inspector* inspector) {
    reader.reset();
    std::size_t events = 0;
    const std::size_t step = read_size == 0 ? body.size() : read_size;
    auto drain = [&] {
        while (const Event* e = reader.next()) {
            ++events;
            if (inspector == nullptr) continue;
            for (std::size_t i = 0; i < e->data.size(); ++i)
                modelproxy::bench::keep(inspector->inspect(*e, i, Endpoint::chat_completions).answer_text);
        }
    };
    for (std::size_t at = 0; at < body.size(); at += step) {
        // What a socket read leaves after the bytes: the rest of the buffer.
        const std::size_t size = std::min(step, body.size() - at);
        reader.feed(body.substr(at, size), body.size() - at - size);
        drain();
    }
    reader.finish();
    drain();
    return events;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t streams = modelproxy::bench::ops_from(argc, argv, 1'000);
    const std::string body = stream_body();
    Reader reader;
    Inspector inspector;
    const std::size_t events = read_stream(reader, body, 0, nullptr);
    if (events != 200 || read_stream(reader, body, 100, &inspector) != 200) {
        std::fprintf(stderr, "sse_reader_bench: expected 200 events, read %zu\n", events);
        return 1;
    }
    std::printf("stream: %zu bytes, %zu events; %zu streams per run\n", body.size(), events, streams);

    auto per_event = [&](std::size_t read_size, Inspector* with) {
        Figure f = modelproxy::bench::ns_per_op(streams, [&](std::size_t) {
            modelproxy::bench::keep(read_stream(reader, body, read_size, with));
        });
        const double n = static_cast<double>(events);
        return Figure{f.median / n, f.min / n, f.max / n};
    };
    using modelproxy::bench::print;
    print("Reader, whole stream in one chunk", per_event(0, nullptr), "ns/event");
    print("Reader, 4 KiB reads", per_event(4096, nullptr), "ns/event");
    print("Reader, 100-byte reads (events span reads: one copy)", per_event(100, nullptr), "ns/event");
    print("Reader + Inspector::inspect, 4 KiB reads", per_event(4096, &inspector), "ns/event");
    return 0;
}
