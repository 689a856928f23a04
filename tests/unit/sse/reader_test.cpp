#include "sse/reader.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using modelproxy::sse::Event;
using modelproxy::sse::Reader;
using namespace std::string_literals;

namespace {

// An event copied out of the reader (its views die at the next call).
struct Owned {
    std::string raw;
    std::string name;
    std::string id;
    std::optional<std::uint64_t> retry;
    std::vector<std::string> data;
    bool comment_only = false;
    bool terminated = true;
    friend bool operator==(const Owned&, const Owned&) = default;
};

struct Run {
    std::vector<Owned> events;
    std::string leftover;
    std::uint64_t data_events = 0;
    std::uint64_t all_events = 0;
    std::uint64_t comment_events = 0;
    bool unterminated = false;
    friend bool operator==(const Run&, const Run&) = default;
};

Owned own(const Event& e) {
    Owned o{std::string(e.raw), std::string(e.name), std::string(e.id), e.retry, {}, e.comment_only,
            e.terminated};
    for (std::string_view d : e.data) o.data.emplace_back(d);
    return o;
}

void drain(Reader& reader, Run& run, std::size_t at_most = SIZE_MAX) {
    for (std::size_t i = 0; i < at_most; ++i) {
        const Event* e = reader.next();
        if (!e) return;
        run.events.push_back(own(*e));
    }
}

// Feeds `input` cut at `cuts` (sorted offsets). With `lazy`, drains only one
// event between feeds, so the reader must keep bytes it has not reached.
Run read_cut(std::string_view input, const std::vector<std::size_t>& cuts, bool lazy = false) {
    Reader reader;
    Run run;
    std::size_t from = 0;
    for (std::size_t cut : cuts) {
        reader.feed(input.substr(from, cut - from));
        drain(reader, run, lazy ? 1 : SIZE_MAX);
        from = cut;
    }
    reader.feed(input.substr(from));
    drain(reader, run);
    reader.finish();
    drain(reader, run);
    const auto& totals = reader.totals();
    run.leftover = std::string(totals.leftover);
    run.data_events = totals.data_events;
    run.all_events = totals.events;
    run.comment_events = totals.comment_events;
    run.unterminated = totals.unterminated;
    return run;
}

std::vector<std::size_t> random_cuts(std::size_t size, std::mt19937& rng) {
    std::vector<std::size_t> cuts;
    if (size < 2) return cuts;
    std::uniform_int_distribution<std::size_t> count(1, std::min<std::size_t>(size - 1, 12));
    std::uniform_int_distribution<std::size_t> at(1, size - 1);
    for (std::size_t n = count(rng); n > 0; --n) cuts.push_back(at(rng));
    std::sort(cuts.begin(), cuts.end());
    return cuts;
}

std::vector<std::size_t> every_byte(std::size_t size) {
    std::vector<std::size_t> cuts;
    for (std::size_t i = 1; i < size; ++i) cuts.push_back(i);
    return cuts;
}

// STYLE point 8: the whole input, byte by byte, and random splits (fixed
// seed), eagerly and lazily drained, must read the same; and the raw bytes of
// all events plus the leftover must be the input.
Run read(std::string_view input, int random_splits = 50) {
    const Run whole = read_cut(input, {});
    REQUIRE(read_cut(input, every_byte(input.size())) == whole);
    REQUIRE(read_cut(input, every_byte(input.size()), true) == whole);
    std::mt19937 rng(20240607);
    for (int i = 0; i < random_splits; ++i) {
        const auto cuts = random_cuts(input.size(), rng);
        REQUIRE(read_cut(input, cuts) == whole);
        REQUIRE(read_cut(input, cuts, true) == whole);
    }
    std::string joined;
    for (const Owned& e : whole.events) joined += e.raw;
    REQUIRE(joined + whole.leftover == input);
    return whole;
}

std::vector<std::string> data_of(const Run& run, std::size_t i) { return run.events.at(i).data; }

}  // namespace

// ---- line ends -------------------------------------------------------------

TEST_CASE("reader: LF ends lines") {
    const Run r = read("data: a\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
    CHECK(r.events[0].raw == "data: a\n\n");
}

TEST_CASE("reader: CRLF ends lines") {
    const Run r = read("data: a\r\n\r\n");
    REQUIRE(r.events.size() == 1);
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
    CHECK(r.events[0].raw == "data: a\r\n\r\n");
}

TEST_CASE("reader: a bare CR ends lines") {
    const Run r = read("data: a\r\rdata: b\r\r");
    REQUIRE(r.events.size() == 2);
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
    CHECK(data_of(r, 1) == std::vector<std::string>{"b"});
}

TEST_CASE("reader: LF then CR are two line ends") {
    const Run r = read("data: a\n\rdata: b\n\n");
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[0].raw == "data: a\n\r");
}

TEST_CASE("reader: CR at a chunk end and LF at the next chunk start are one line end") {
    const Run r = read_cut("data: a\r\n\r\ndata: b\r\n\r\n", {8});
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[0].raw == "data: a\r\n\r\n");
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
}

TEST_CASE("reader: the CR of a blank line split from its LF keeps the LF in that event") {
    const Run r = read_cut("data: a\r\n\r\ndata: b\r\n\r\n", {10});
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[0].raw == "data: a\r\n\r\n");
    CHECK(r.events[1].raw == "data: b\r\n\r\n");
}

TEST_CASE("reader: a blank-line CR at the end of a read waits for the next byte") {
    Reader reader;
    reader.feed("data: a\r\r");
    CHECK(reader.next() == nullptr);
    reader.feed("d");
    const Event* e = reader.next();
    REQUIRE(e != nullptr);
    CHECK(e->raw == "data: a\r\r");
}

TEST_CASE("reader: CR at a chunk end followed by another character is a bare CR") {
    const Run r = read_cut("data: a\rdata: b\r\r", {8});
    REQUIRE(r.events.size() == 1);
    CHECK(data_of(r, 0) == std::vector<std::string>({"a", "b"}));
}

TEST_CASE("reader: a trailing CR blank line is dispatched at end of stream") {
    const Run r = read("data: a\r\r");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].terminated);
    CHECK(r.events[0].raw == "data: a\r\r");
}

// ---- byte order marks --------------------------------------------------------

TEST_CASE("reader: a BOM at the start of the stream is dropped") {
    const Run r = read("\xEF\xBB\xBF" "data: a\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
    CHECK(r.events[0].raw == "\xEF\xBB\xBF" "data: a\n\n");
}

TEST_CASE("reader: a BOM on every line is dropped") {
    const Run r = read("\xEF\xBB\xBF" "event: x\n\xEF\xBB\xBF" "data: a\n\xEF\xBB\xBF" "data: b\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].name == "x");
    CHECK(data_of(r, 0) == std::vector<std::string>({"a", "b"}));
}

TEST_CASE("reader: several BOMs in a row are all dropped") {
    const Run r = read("\xEF\xBB\xBF\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
}

TEST_CASE("reader: a BOM split across chunks is dropped") {
    const Run r = read_cut("\xEF\xBB\xBF" "data: a\n\n", {1, 2});
    REQUIRE(r.events.size() == 1);
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
}

TEST_CASE("reader: a line of BOMs only is a blank line") {
    const Run r = read("data: a\n\xEF\xBB\xBF\n");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].terminated);
}

TEST_CASE("reader: a BOM inside a line is kept") {
    const Run r = read("data: a\xEF\xBB\xBF\n\n");
    CHECK(data_of(r, 0) == std::vector<std::string>{"a\xEF\xBB\xBF"});
}

TEST_CASE("reader: a partial BOM is not a BOM") {
    const Run r = read("\xEF\xBB" "data: a\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].data.empty());  // the field name is "\xEF\xBB" "data"
}

// ---- fields ----------------------------------------------------------------

TEST_CASE("reader: a comment-only event is flagged") {
    const Run r = read(": keep-alive\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].comment_only);
    CHECK(r.events[0].data.empty());
    CHECK(r.comment_events == 1);
    CHECK(r.all_events == 0);
}

TEST_CASE("reader: a comment beside data is not comment-only") {
    const Run r = read(": note\ndata: a\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK_FALSE(r.events[0].comment_only);
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
}

TEST_CASE("reader: data: without a space keeps the whole value") {
    const Run r = read("data:a\n\n");
    CHECK(data_of(r, 0) == std::vector<std::string>{"a"});
}

TEST_CASE("reader: only one space after the colon is removed") {
    const Run r = read("data:  a \n\n");
    CHECK(data_of(r, 0) == std::vector<std::string>{" a "});
}

TEST_CASE("reader: data with no colon is a data line with an empty value") {
    const Run r = read("data\n\n");
    CHECK(data_of(r, 0) == std::vector<std::string>{""});
    CHECK(r.data_events == 1);
}

TEST_CASE("reader: a colon inside the value is kept") {
    const Run r = read("data: {\"a\":\"b:c\"}\n\n");
    CHECK(data_of(r, 0) == std::vector<std::string>{"{\"a\":\"b:c\"}"});
}

TEST_CASE("reader: multi-line data stays one line each") {
    const Run r = read("data: {\"a\":1}\ndata: {\"b\":2}\n\n");
    CHECK(data_of(r, 0) == std::vector<std::string>({"{\"a\":1}", "{\"b\":2}"}));
}

TEST_CASE("reader: event, id and retry fields") {
    const Run r = read("event: message_start\nid: 7\nretry: 1500\ndata: x\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].name == "message_start");
    CHECK(r.events[0].id == "7");
    CHECK(r.events[0].retry == 1500u);
}

TEST_CASE("reader: the last event line wins") {
    const Run r = read("event: a\nevent: b\ndata: x\n\n");
    CHECK(r.events[0].name == "b");
}

TEST_CASE("reader: retry with a non-digit is ignored") {
    const Run r = read("retry: 15x\ndata: x\n\n");
    CHECK_FALSE(r.events[0].retry);
}

TEST_CASE("reader: an id containing NUL is ignored") {
    const Run r = read("id: a\0b\ndata: x\n\n"s);
    CHECK(r.events[0].id.empty());
}

TEST_CASE("reader: unknown fields are ignored but make an event") {
    const Run r = read("foo: bar\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK_FALSE(r.events[0].comment_only);
    CHECK(r.events[0].data.empty());
    CHECK(r.all_events == 1);
    CHECK(r.data_events == 0);
}

TEST_CASE("reader: fields do not leak into the next event") {
    const Run r = read("event: a\nid: 1\nretry: 5\ndata: x\n\ndata: y\n\n");
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[1].name.empty());
    CHECK(r.events[1].id.empty());
    CHECK_FALSE(r.events[1].retry);
}

// ---- blank lines and the end of the stream ----------------------------------

TEST_CASE("reader: blank lines with no field dispatch nothing and lead the next event") {
    const Run r = read("\n\r\n\rdata: a\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].raw == "\n\r\n\rdata: a\n\n");
}

TEST_CASE("reader: blank lines after the last event are leftover") {
    const Run r = read("data: a\n\n\n\n");
    REQUIRE(r.events.size() == 1);
    CHECK(r.leftover == "\n\n");
}

TEST_CASE("reader: an unterminated final event is yielded flagged") {
    const Run r = read("data: a\n\ndata: b\n");
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[1].data == std::vector<std::string>{"b"});
    CHECK_FALSE(r.events[1].terminated);
    CHECK(r.unterminated);
    CHECK(r.data_events == 1);  // not counted
}

TEST_CASE("reader: a final line without a line end is part of the unterminated event") {
    const Run r = read("data: a");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].data == std::vector<std::string>{"a"});
    CHECK_FALSE(r.events[0].terminated);
    CHECK(r.events[0].raw == "data: a");
}

TEST_CASE("reader: a final line ending in CR at end of stream is complete") {
    const Run r = read("data: a\r");
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].data == std::vector<std::string>{"a"});
    CHECK_FALSE(r.events[0].terminated);
}

TEST_CASE("reader: an empty stream has no events") {
    const Run r = read("");
    CHECK(r.events.empty());
    CHECK(r.data_events == 0);
    CHECK(r.leftover.empty());
    CHECK_FALSE(r.unterminated);
}

TEST_CASE("reader: a stream of comments only has no data events") {
    Reader reader;
    reader.feed(": ping\n\n: ping\n\n");
    while (reader.next()) {
    }
    reader.finish();
    CHECK(reader.next() == nullptr);
    CHECK(reader.totals().no_data_events());
    CHECK(reader.totals().comment_events == 2);
}

TEST_CASE("reader: next after the end stays null") {
    Reader reader;
    reader.feed("data: a\n\n");
    REQUIRE(reader.next());
    reader.finish();
    CHECK(reader.next() == nullptr);
    CHECK(reader.next() == nullptr);
}

TEST_CASE("reader: reset starts a fresh stream") {
    Reader reader;
    reader.feed("data: a\n");
    CHECK(reader.next() == nullptr);
    reader.reset();
    reader.feed("data: b\n\n");
    const Event* e = reader.next();
    REQUIRE(e);
    CHECK(e->raw == "data: b\n\n");
    CHECK(reader.totals().data_events == 1);
}

// ---- bytes and buffers -------------------------------------------------------

TEST_CASE("reader: raw bytes are reproduced exactly") {
    const std::string input =
        "\xEF\xBB\xBF: hi\r\n\r\nevent: e\rdata:x\r\n\ndata: y\n\xEF\xBB\xBF\n\n\nretry: 1\r\rdata: tail";
    const Run r = read(input);  // read() checks the concatenation
    CHECK(r.events.size() == 5);
}

TEST_CASE("reader: an event inside one chunk is not copied") {
    Reader reader;
    const std::string chunk = "data: a\n\ndata: b\n\n";
    reader.feed(chunk);
    const Event* e = reader.next();
    REQUIRE(e);
    CHECK(e->raw.data() == chunk.data());
    CHECK(e->data[0].data() == chunk.data() + 6);
    e = reader.next();
    REQUIRE(e);
    CHECK(e->raw.data() == chunk.data() + 9);
}

TEST_CASE("reader: readable_end covers the caller's spare bytes") {
    Reader reader;
    const std::string chunk = "data: a\n\n" + std::string(100, ' ');
    reader.feed(std::string_view(chunk).substr(0, 9), 100);
    const Event* e = reader.next();
    REQUIRE(e);
    CHECK(e->readable_end == chunk.data() + chunk.size());
}

TEST_CASE("reader: a 4 MiB event read in 16 KiB chunks") {
    const std::string payload(4 * 1024 * 1024, 'x');
    const std::string input = "data: " + payload + "\r\n\r\ndata: end\n\n";
    Reader reader;
    std::vector<std::size_t> sizes;
    std::string raw;
    for (std::size_t at = 0; at < input.size(); at += 16 * 1024) {
        reader.feed(std::string_view(input).substr(at, 16 * 1024));
        while (const Event* e = reader.next()) {
            sizes.push_back(e->data[0].size());
            raw += e->raw;
        }
    }
    reader.finish();
    CHECK(reader.next() == nullptr);
    CHECK(sizes == std::vector<std::size_t>{payload.size(), 3});
    CHECK(raw == input);
}

// ---- fragmentation invariance on realistic streams (STYLE point 8) ---------

namespace {

std::string with_line_ends(std::string_view lf_stream, std::string_view eol) {
    std::string out;
    for (char c : lf_stream) {
        if (c == '\n') out += eol;
        else out += c;
    }
    return out;
}

const std::string chat_stream =
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"c1\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n"
    ": keep-alive\n\n"
    "data: {\"id\":\"c1\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"c1\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"id\":\"c1\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11}}\n\n"
    "data: [DONE]\n\n";

const std::string responses_stream =
    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"model\":\"gpt-4o\",\"status\":\"in_progress\"}}\n\n"
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m1\",\"delta\":\"Hi\"}\n\n"
    "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"model\":\"gpt-4o\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1,\"total_tokens\":4}}}\n\n";

const std::string messages_stream =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-3-5-haiku\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
    "event: ping\ndata: {\"type\": \"ping\"}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

}  // namespace

TEST_CASE("reader: realistic streams read the same however they are split") {
    struct Case {
        const char* name;
        std::string stream;
        std::size_t events;
    };
    const std::vector<Case> cases = {
        {"chat LF", chat_stream, 7},
        {"chat CRLF", with_line_ends(chat_stream, "\r\n"), 7},
        {"chat CR", with_line_ends(chat_stream, "\r"), 7},
        {"chat BOM", "\xEF\xBB\xBF" + chat_stream, 7},
        {"responses LF", responses_stream, 3},
        {"responses CRLF", with_line_ends(responses_stream, "\r\n"), 3},
        {"messages LF", messages_stream, 7},
        {"messages CR", with_line_ends(messages_stream, "\r"), 7},
        {"messages CRLF", with_line_ends(messages_stream, "\r\n"), 7},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const Run r = read(c.stream, 300);
        CHECK(r.events.size() == c.events);
        CHECK(r.leftover.empty());
        CHECK_FALSE(r.unterminated);
        for (const Owned& e : r.events) CHECK(e.terminated);
    }
}

TEST_CASE("reader: the same stream in LF, CRLF and CR yields the same fields") {
    const auto fields = [](const Run& r) {
        std::vector<std::pair<std::string, std::vector<std::string>>> out;
        for (const Owned& e : r.events) out.emplace_back(e.name, e.data);
        return out;
    };
    const Run lf = read(messages_stream, 5);
    CHECK(fields(read(with_line_ends(messages_stream, "\r\n"), 5)) == fields(lf));
    CHECK(fields(read(with_line_ends(messages_stream, "\r"), 5)) == fields(lf));
}

TEST_CASE("reader: feeding again before draining keeps the unread events") {
    Reader reader;
    const std::string first = "data: a\n\ndata: b\n\ndata: c";
    const std::string second = "\n\n";
    reader.feed(first);
    REQUIRE(reader.next());  // "a"; "b" and the start of "c" are not reached yet
    reader.feed(second);
    const Event* b = reader.next();
    REQUIRE(b);
    CHECK(b->raw == "data: b\n\n");
    const Event* c = reader.next();
    REQUIRE(c);
    CHECK(c->raw == "data: c\n\n");
    CHECK(reader.next() == nullptr);
}

TEST_CASE("reader: in_input tells an event viewed in the input from one copied across chunks") {
    Reader reader;
    const std::string first = "data: a\n\ndata: b";
    reader.feed(first);
    const Event* e = reader.next();
    REQUIRE(e);
    CHECK(e->raw == "data: a\n\n");
    CHECK(reader.in_input(e->raw));  // a view into the chunk
    CHECK(reader.next() == nullptr);  // "data: b" is carried into the reader's buffer

    const std::string second = "\n\ndata: c";
    reader.feed(second);
    e = reader.next();
    REQUIRE(e);
    CHECK(e->raw == "data: b\n\n");
    CHECK_FALSE(reader.in_input(e->raw));  // it spans chunks: the reader's own copy
    CHECK(reader.next() == nullptr);
    reader.finish();
    e = reader.next();
    REQUIRE(e);
    CHECK(e->raw == "data: c");
    CHECK_FALSE(reader.in_input(e->raw));  // carried too
    CHECK_FALSE(reader.in_input({}));
}

// ---- limits (docs/behaviour.md section 8: one line beyond max_event_bytes is refused) ---

namespace {

struct Bounded {
    std::vector<std::string> raws;       // the events yielded before the reader stopped
    Reader::Overflow overflow = Reader::Overflow::none;
    std::size_t stopped_at = 0;          // input bytes fed when overflow() was first set (0: never)
};

// Feeds `input` cut at `cuts`, draining after each feed, under `limits`.
Bounded read_bounded(std::string_view input, Reader::Limits limits, const std::vector<std::size_t>& cuts) {
    Reader reader;
    reader.set_limits(limits);
    Bounded out;
    std::size_t from = 0;
    const auto step = [&](std::size_t to) {
        reader.feed(input.substr(from, to - from));
        from = to;
        while (const Event* e = reader.next()) out.raws.emplace_back(e->raw);
        if (reader.overflow() != Reader::Overflow::none && out.stopped_at == 0) out.stopped_at = from;
    };
    for (std::size_t cut : cuts) step(cut);
    step(input.size());
    reader.finish();
    while (const Event* e = reader.next()) out.raws.emplace_back(e->raw);
    out.overflow = reader.overflow();
    return out;
}

// The same result whole, byte by byte and at random splits.
Bounded read_bounded(std::string_view input, Reader::Limits limits) {
    const Bounded whole = read_bounded(input, limits, {});
    const Bounded bytes = read_bounded(input, limits, every_byte(input.size()));
    CHECK(bytes.raws == whole.raws);
    CHECK(bytes.overflow == whole.overflow);
    std::mt19937 rng(20240607);
    for (int i = 0; i < 30; ++i) {
        const Bounded split = read_bounded(input, limits, random_cuts(input.size(), rng));
        CHECK(split.raws == whole.raws);
        CHECK(split.overflow == whole.overflow);
    }
    return whole;
}

}  // namespace

TEST_CASE("reader limits: a line of exactly the limit is read") {
    const std::string line = "data: " + std::string(26, 'x');  // 32 bytes
    const Bounded r = read_bounded(line + "\n\n", {.line = 32});
    CHECK(r.overflow == Reader::Overflow::none);
    CHECK(r.raws == std::vector<std::string>{line + "\n\n"});
}

TEST_CASE("reader limits: a line one byte longer stops the reader after the events before it") {
    const std::string before = "data: {}\n\n";
    const std::string line = "data: " + std::string(27, 'x');  // 33 bytes
    for (const std::string end : {"\n\n", "\r\n\r\n", "\r\r", ""}) {
        CAPTURE(end);
        const Bounded r = read_bounded(before + line + end + "data: after\n\n", {.line = 32});
        CHECK(r.overflow == Reader::Overflow::line);
        CHECK(r.raws == std::vector<std::string>{before});
    }
}

TEST_CASE("reader limits: a long line stops the reader as soon as it passes the limit, not at its end") {
    // Byte by byte: the reader has stopped once the line's 33rd byte is fed,
    // though the line goes on for a megabyte and never ends.
    const std::string before = "data: {}\n\n";
    const std::string input = before + "data: " + std::string(1 << 20, 'x');
    const Bounded r = read_bounded(input, {.line = 32}, every_byte(2 * before.size() + 64));
    CHECK(r.overflow == Reader::Overflow::line);
    CHECK(r.stopped_at == before.size() + 33);
    CHECK(r.raws == std::vector<std::string>{before});
}

TEST_CASE("reader limits: a comment line and a line of BOMs count like any line") {
    CHECK(read_bounded(": " + std::string(40, 'c') + "\n\n", {.line = 32}).overflow == Reader::Overflow::line);
    std::string boms;
    for (int i = 0; i < 11; ++i) boms += "\xEF\xBB\xBF";  // 33 bytes
    CHECK(read_bounded(boms + "data: {}\n\n", {.line = 32}).overflow == Reader::Overflow::line);
}

TEST_CASE("reader limits: an event of many short lines stops at the event limit") {
    std::string event;
    for (int i = 0; i < 20; ++i) event += "data: 1\n";  // 160 bytes, each line 7
    const Bounded r = read_bounded("data: {}\n\n" + event + "\n", {.line = 32, .event = 100});
    CHECK(r.overflow == Reader::Overflow::event);
    CHECK(r.raws == std::vector<std::string>{"data: {}\n\n"});
    // Under the event limit, the same event is read.
    const Bounded fits = read_bounded(event + "\n", {.line = 32, .event = 200});
    CHECK(fits.overflow == Reader::Overflow::none);
    CHECK(fits.raws.size() == 1);
}

TEST_CASE("reader limits: blank lines before an event count toward it") {
    // Blank lines lead the next event's raw bytes: a flood of them is an
    // event that never ends.
    const Bounded r = read_bounded(std::string(200, '\n') + "data: {}\n\n", {.line = 32, .event = 100});
    CHECK(r.overflow == Reader::Overflow::event);
    CHECK(r.raws.empty());
}

TEST_CASE("reader limits: an unterminated last line is held to the limit too") {
    const Bounded r = read_bounded("data: {}\n\ndata: " + std::string(40, 'x'), {.line = 32});
    CHECK(r.overflow == Reader::Overflow::line);
    CHECK(r.raws == std::vector<std::string>{"data: {}\n\n"});
}

TEST_CASE("reader limits: reset() reads a new stream under the same limits") {
    // Each chunk must outlive the reader's reading of it.
    const std::string long_x = "data: " + std::string(20, 'x');
    const std::string long_y = "data: " + std::string(20, 'y') + "\n\n";
    Reader reader;
    reader.set_limits({.line = 16});
    reader.feed(long_x);
    CHECK(reader.next() == nullptr);
    CHECK(reader.overflow() == Reader::Overflow::line);
    reader.feed("\n\ndata: b\n\n");  // ignored: the reader stopped
    CHECK(reader.next() == nullptr);
    reader.reset();
    CHECK(reader.overflow() == Reader::Overflow::none);
    reader.feed("data: b\n\n");
    const Event* e = reader.next();
    REQUIRE(e);
    CHECK(e->raw == "data: b\n\n");
    reader.feed(long_y);
    CHECK(reader.next() == nullptr);
    CHECK(reader.overflow() == Reader::Overflow::line);
}
