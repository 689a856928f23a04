// libFuzzer target for sse::Reader (sse/reader.hpp): whatever the bytes and
// wherever the reads end, the events are the same and account for every byte.
//
// Input: one flags byte, then n piece bytes, then the stream.
//   flags bits 0-3  n, the number of piece bytes (fewer when the input is shorter)
//   flags bit 4     each chunk has 64 readable bytes after it (feed's readable_after),
//                   holding the stream's next bytes as a read buffer would
//   flags bit 5     feed junk after finish() (must be ignored)
//   flags bit 6     before the run, feed half the stream, take one event, reset()
//   piece bits 0-6  a chunk length (0 feeds an empty chunk); the pieces repeat
//                   until the stream is used up (a cycle of zeros feeds the rest)
//   piece bit 7     take at most one event before the next feed (else drain)
// Each chunk is its own exact-size allocation, freed after the next feed(), so
// ASan sees a read past a chunk or of a chunk the reader should have copied.
//
// Checked (abort() on failure): the raw bytes of all events plus
// Totals::leftover are the stream; the events (raw, name, id, retry, data,
// flags) and totals equal those of a Reader fed the whole stream at once; only
// the last event may be unterminated; totals count the events; every view lies
// inside raw and [raw, readable_end) is addressable; next() stays null after
// the end. Each data line goes through an Inspector for chat_completions, in
// place where readable_end allows and copied, with the same answer (check.hpp).
#include "check.hpp"

#include "policy/endpoint.hpp"
#include "sse/inspect.hpp"
#include "sse/reader.hpp"

#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using modelproxy::fuzz::check_info;
using modelproxy::fuzz::same_info;
using modelproxy::policy::Endpoint;
using modelproxy::sse::Event;
using modelproxy::sse::Inspector;
using modelproxy::sse::Reader;

constexpr std::size_t readable_after = 64;

// An event copied out of the reader (its views die at the next call).
struct Owned {
    std::string raw;
    std::string name;
    std::string id;
    std::optional<std::uint64_t> retry;
    std::vector<std::string> data;
    bool comment_only = false;
    bool terminated = true;
    bool operator==(const Owned&) const = default;
};

struct Run {
    std::vector<Owned> events;
    std::uint64_t total_events = 0;
    std::uint64_t data_events = 0;
    std::uint64_t comment_events = 0;
    bool unterminated = false;
    std::string leftover;
    bool operator==(const Run&) const = default;
};

bool inside(std::string_view part, std::string_view whole) {
    return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

// The chunks of one run; each lives until the feed() after the one it was fed in.
class Chunks {
public:
    Chunks(std::string_view stream, bool padded) : stream_(stream), padded_(padded) {}

    // Feeds stream[from, from + length).
    void feed(Reader& reader, std::size_t from, std::size_t length) {
        const std::size_t after = padded_ ? readable_after : 0;
        std::unique_ptr<char[]> chunk(new char[length + after]);
        for (std::size_t i = 0; i < length + after; ++i) {
            const std::size_t at = from + i;
            chunk[i] = at < stream_.size() ? stream_[at] : '\n';
        }
        reader.feed(std::string_view(chunk.get(), length), after);
        previous_ = std::move(chunk);  // frees the chunk before last
    }

private:
    std::string_view stream_;
    bool padded_;
    std::unique_ptr<char[]> previous_;
};

class Taker {
public:
    explicit Taker(bool inspect) : inspect_(inspect) {}

    // Copies one event out and checks what can be checked of it alone.
    void take(const Event& e, Run& run) {
        MP_FUZZ_CHECK(!e.raw.empty());
        MP_FUZZ_CHECK(inside(e.name, e.raw) && inside(e.id, e.raw));
        for (std::string_view line : e.data) MP_FUZZ_CHECK(inside(line, e.raw));
        // The memory the event says may be read is there (ASan knows every allocation).
        MP_FUZZ_CHECK(e.readable_end >= e.raw.data() + e.raw.size());
        MP_FUZZ_CHECK(__asan_region_is_poisoned(const_cast<char*>(e.raw.data()),
                                                static_cast<std::size_t>(e.readable_end - e.raw.data())) == nullptr);
        if (e.comment_only) MP_FUZZ_CHECK(e.data.empty() && e.name.empty() && e.id.empty() && !e.retry);

        Owned o{std::string(e.raw), std::string(e.name), std::string(e.id), e.retry, {}, e.comment_only, e.terminated};
        for (std::string_view line : e.data) o.data.emplace_back(line);
        run.events.push_back(std::move(o));

        if (!inspect_) return;
        for (std::size_t i = 0; i < e.data.size(); ++i) {
            const auto& direct = in_place_.inspect(e, i, Endpoint::chat_completions);
            const auto& copied = copying_.inspect(e.data[i], Endpoint::chat_completions, e.name);
            check_info(copied, e.data[i], Endpoint::chat_completions);
            MP_FUZZ_CHECK_THAT(same_info(direct, copied), "parsed in place and copied, the line reads differently");
        }
    }

    void drain(Reader& reader, Run& run, std::size_t at_most = SIZE_MAX) {
        for (std::size_t n = 0; n < at_most; ++n) {
            const Event* e = reader.next();
            if (!e) return;
            take(*e, run);
        }
    }

    // After finish(): the rest, then the totals.
    void end(Reader& reader, Run& run) {
        drain(reader, run);
        MP_FUZZ_CHECK(reader.next() == nullptr);
        const auto& t = reader.totals();
        run.total_events = t.events;
        run.data_events = t.data_events;
        run.comment_events = t.comment_events;
        run.unterminated = t.unterminated;
        run.leftover = std::string(t.leftover);
    }

private:
    bool inspect_;
    Inspector in_place_;
    Inspector copying_;
};

// What must hold of any run over `stream`, however it was fed.
void check_run(const Run& run, std::string_view stream) {
    std::string joined;
    std::uint64_t events = 0, data_events = 0, comment_events = 0;
    for (std::size_t i = 0; i < run.events.size(); ++i) {
        const Owned& e = run.events[i];
        joined += e.raw;
        if (!e.terminated) {
            MP_FUZZ_CHECK(i + 1 == run.events.size());
            continue;
        }
        if (e.comment_only) ++comment_events;
        else ++events;
        if (!e.data.empty()) ++data_events;
    }
    MP_FUZZ_CHECK_THAT(joined + run.leftover == stream, "raw bytes plus leftover are not the stream");
    MP_FUZZ_CHECK(run.total_events == events && run.data_events == data_events &&
                  run.comment_events == comment_events);
    MP_FUZZ_CHECK(run.unterminated == (!run.events.empty() && !run.events.back().terminated));
    // The leftover is blank lines and lines of BOMs only.
    std::string_view rest = run.leftover;
    while (!rest.empty()) {
        if (rest.starts_with("\xEF\xBB\xBF")) {
            rest.remove_prefix(3);
            continue;
        }
        MP_FUZZ_CHECK(rest.front() == '\r' || rest.front() == '\n');
        rest.remove_prefix(1);
    }
}

Run read_whole(std::string_view stream, Reader& reader) {
    Run run;
    Taker taker(false);
    const std::unique_ptr<char[]> exact(new char[stream.size()]);
    if (!stream.empty()) std::memcpy(exact.get(), stream.data(), stream.size());
    reader.feed(std::string_view(exact.get(), stream.size()));
    taker.drain(reader, run);
    reader.finish();
    taker.end(reader, run);
    return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view input(reinterpret_cast<const char*>(bytes), size);
    const unsigned flags = bytes[0];
    const std::string_view pieces = input.substr(1, flags & 0x0F);
    const std::string_view stream = input.substr(1 + pieces.size());
    const bool padded = flags & 0x10;
    const bool junk_after_finish = flags & 0x20;
    const bool reset_first = flags & 0x40;

    Reader split;
    Taker taker(true);
    if (reset_first) {
        Chunks warm_up(stream, padded);
        warm_up.feed(split, 0, stream.size() / 2);
        split.next();
        split.reset();
    }

    Run run;
    Chunks chunks(stream, padded);
    std::size_t at = 0;
    while (at < stream.size()) {
        const std::size_t cycle_start = at;
        for (std::size_t p = 0; p < pieces.size() && at < stream.size(); ++p) {
            const unsigned piece = static_cast<unsigned char>(pieces[p]);
            const std::size_t length = std::min<std::size_t>(piece & 0x7F, stream.size() - at);
            chunks.feed(split, at, length);
            at += length;
            taker.drain(split, run, piece & 0x80 ? 1 : SIZE_MAX);
        }
        if (at == cycle_start) {
            chunks.feed(split, at, stream.size() - at);
            at = stream.size();
            taker.drain(split, run);
        }
    }
    split.finish();
    // The last chunk stays alive: the reader still reads it after finish().
    if (junk_after_finish) split.feed("data: junk\n\n");
    taker.end(split, run);
    check_run(run, stream);

    Reader whole;
    const Run once = read_whole(stream, whole);
    check_run(once, stream);
    MP_FUZZ_CHECK_THAT(run == once, "fed in pieces and whole, the stream reads differently");

    // The split reader again after reset(): a fresh stream.
    split.reset();
    MP_FUZZ_CHECK(read_whole(stream, split) == once);
    return 0;
}
