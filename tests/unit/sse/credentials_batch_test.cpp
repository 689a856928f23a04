// The batched answer-text scan (StreamScan::note_answer_text + settle), as
// the stream relay uses it once per upstream read, against the per-line scan
// (feed_answer_text) it replaced; and RelayBatch, the relay's bookkeeping
// that undoes the lines from a refused one on.
#include "sse/credentials.hpp"
#include "sse/inspect.hpp"
#include "sse/relay_batch.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using modelproxy::policy::Endpoint;
using modelproxy::sse::CredentialScanner;
using modelproxy::sse::CredentialVerdict;
using modelproxy::sse::Inspector;
using modelproxy::sse::RelayBatch;
using modelproxy::sse::StreamScan;
using modelproxy::sse::Usage;

namespace {

using Strings = std::vector<std::string>;

const CredentialScanner& defaults() {
    static const CredentialScanner scanner = [] {
        auto built = CredentialScanner::build({}, {}, true);
        REQUIRE(std::holds_alternative<CredentialScanner>(built));
        return std::move(std::get<CredentialScanner>(built));
    }();
    return scanner;
}

const std::string chars40 = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0";
const std::string sk = "sk-proj-" + chars40;

// One chat chunk whose choice `index` says `text`.
std::string chunk(const std::string& text, int index = 0) {
    return R"({"choices":[{"index":)" + std::to_string(index) + R"(,"delta":{"content":")" + text + R"("}}]})";
}

// `secret` cut into `parts` pieces, each a chunk, between clean ones.
Strings split_events(const std::string& secret, std::size_t parts) {
    Strings lines = {chunk("Hello"), chunk(" there, ")};
    const std::size_t step = secret.size() / parts;
    for (std::size_t i = 0; i < parts; ++i)
        lines.push_back(chunk(secret.substr(i * step, i + 1 == parts ? std::string::npos : step)));
    lines.push_back(chunk(" and more"));
    lines.push_back(chunk(" text."));
    return lines;
}

// The line the per-line scan refuses at (feed_answer_text), or -1.
int per_line(const Strings& lines) {
    Inspector inspector;
    StreamScan scan = defaults().stream_scan();
    for (std::size_t i = 0; i < lines.size(); ++i)
        if (scan.feed_answer_text(inspector.inspect(lines[i], Endpoint::chat_completions).answer_fragments) !=
            CredentialVerdict::clean)
            return static_cast<int>(i);
    return -1;
}

// The same lines noted one by one (ordinal = line index) and settled after
// line i when bit i of `settle_after` is set, and after the last: the
// ordinal the first settle that found a secret reported, or -1. Nothing is
// noted after a settle that found one (the relay stops there).
int batched(StreamScan& scan, const Strings& lines, std::uint64_t settle_after) {
    Inspector inspector;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        scan.note_answer_text(static_cast<std::uint32_t>(i),
                              inspector.inspect(lines[i], Endpoint::chat_completions).answer_fragments);
        if ((settle_after >> i & 1) || i + 1 == lines.size()) {
            if (const std::optional<std::uint32_t> at = scan.settle()) {
                CHECK(scan.verdict() == CredentialVerdict::credential_in_response);
                return static_cast<int>(*at);
            }
            CHECK(scan.verdict() == CredentialVerdict::clean);
        }
    }
    return -1;
}

}  // namespace

TEST_CASE("batched answer text: the same refused line as the per-line scan, for every settle pattern",
          "[credentials][batch]") {
    const std::size_t parts = GENERATE(2, 3, 4, 5);
    const Strings lines = split_events(sk, parts);
    const int expected = per_line(lines);
    REQUIRE(expected == static_cast<int>(2 + parts - 1));  // the line that holds the last piece
    CAPTURE(parts);
    for (std::uint64_t settle_after = 0; settle_after < (std::uint64_t{1} << (lines.size() - 1)); ++settle_after) {
        CAPTURE(settle_after);
        StreamScan scan = defaults().stream_scan();
        CHECK(batched(scan, lines, settle_after) == expected);
        CHECK(scan.matched_rule() == "default sk- key");
    }
}

TEST_CASE("batched answer text: a secret completed across a settle boundary", "[credentials][batch]") {
    Inspector inspector;
    StreamScan scan = defaults().stream_scan();
    scan.note_answer_text(0, inspector.inspect(chunk("key: sk-proj-AAAA"), Endpoint::chat_completions).answer_fragments);
    CHECK_FALSE(scan.settle());
    scan.note_answer_text(1, inspector.inspect(chunk("BBBB"), Endpoint::chat_completions).answer_fragments);
    scan.note_answer_text(2, inspector.inspect(chunk(chars40), Endpoint::chat_completions).answer_fragments);
    scan.note_answer_text(3, inspector.inspect(chunk(" bye"), Endpoint::chat_completions).answer_fragments);
    CHECK(scan.settle() == std::optional<std::uint32_t>(2));
    // The first match is final: nothing more is scanned or reported.
    scan.note_answer_text(4, inspector.inspect(chunk(" " + sk), Endpoint::chat_completions).answer_fragments);
    CHECK_FALSE(scan.settle());
    CHECK(scan.verdict() == CredentialVerdict::credential_in_response);
}

TEST_CASE("batched answer text: two choices, the earlier completion wins", "[credentials][batch]") {
    // Choice 1's key completes at line 2, choice 0's at line 4 (and the other
    // way round): one settle over all of them names the earlier line, as the
    // per-line scan would have stopped there.
    const auto lines_with = [](int early, int late) {
        return Strings{chunk("sk-proj-", late),  chunk("Hi ", early), chunk(sk, early),
                       chunk("AAAA", late),      chunk(chars40, late),        chunk("tail", early)};
    };
    for (const auto& [early, late] : {std::pair{1, 0}, std::pair{0, 1}}) {
        CAPTURE(early);
        const Strings lines = lines_with(early, late);
        REQUIRE(per_line(lines) == 2);
        StreamScan scan = defaults().stream_scan();
        CHECK(batched(scan, lines, 0) == 2);
        // Only the late one: line 4.
        Strings late_only = lines;
        late_only[2] = chunk("clean", early);
        REQUIRE(per_line(late_only) == 4);
        StreamScan other = defaults().stream_scan();
        CHECK(batched(other, late_only, 0) == 4);
    }
}

TEST_CASE("batched answer text: an answer-text match before the raw channel's refusal names its line",
          "[credentials][batch]") {
    // The relay notes an event's answer text after its event_passed: when the
    // raw channel refuses event k, the lines still to settle come before it,
    // and a secret in them is the earlier refusal.
    auto built = CredentialScanner::build(std::vector<std::string>{"upstream-KEY-0123456789"}, {}, true);
    REQUIRE(std::holds_alternative<CredentialScanner>(built));
    StreamScan scan = std::get<CredentialScanner>(built).stream_scan();
    Inspector inspector;
    const std::string first = "data: " + chunk("sk-proj-") + "\n\n";
    const std::string second = "data: " + chunk(chars40) + "\n\n";
    const std::string third = "data: {\"x\":\"upstream-KEY-0123456789\"}\n\n";
    scan.feed_read(first + second + third);
    CHECK(scan.event_passed(first.size(), true) == CredentialVerdict::clean);
    scan.note_answer_text(0, inspector.inspect(chunk("sk-proj-"), Endpoint::chat_completions).answer_fragments);
    CHECK(scan.event_passed(second.size(), true) == CredentialVerdict::clean);
    scan.note_answer_text(1, inspector.inspect(chunk(chars40), Endpoint::chat_completions).answer_fragments);
    CHECK(scan.event_passed(third.size(), true) == CredentialVerdict::credential_in_response);
    CHECK(scan.matched_rule() == "upstream key 0");
    CHECK(scan.settle() == std::optional<std::uint32_t>(1));
    CHECK(scan.matched_rule() == "default sk- key");
}

TEST_CASE("batched answer text: clean text settles to none", "[credentials][batch]") {
    const Strings lines = {chunk("sk-proj-short"), chunk(" sk-"), chunk("ghp_"), chunk("AKIAIOSFODNN7EXAMPLE"),
                           chunk("-----BEGIN PUBLIC KEY-----")};
    REQUIRE(per_line(lines) == -1);
    for (std::uint64_t settle_after : {std::uint64_t{0}, std::uint64_t{0b1010}, std::uint64_t{0b1111}}) {
        StreamScan scan = defaults().stream_scan();
        CHECK(batched(scan, lines, settle_after) == -1);
        CHECK_FALSE(scan.settle());  // nothing noted: nothing to scan
        CHECK(scan.finish() == CredentialVerdict::clean);
    }
}

TEST_CASE("batched answer text: reset loses nothing and leaks nothing", "[credentials][batch]") {
    Inspector inspector;
    const auto note = [&](StreamScan& scan, std::uint32_t at, const std::string& text) {
        scan.note_answer_text(at, inspector.inspect(chunk(text), Endpoint::chat_completions).answer_fragments);
    };
    StreamScan scan = defaults().stream_scan();
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        // Half a key settled, half noted and never settled: the next attempt
        // must not complete either.
        note(scan, 0, "sk-proj-AAAA");
        CHECK_FALSE(scan.settle());
        note(scan, 1, "BBBB");
        scan.reset();
        note(scan, 0, chars40);
        CHECK_FALSE(scan.settle());
        CHECK(scan.finish() == CredentialVerdict::clean);
        scan.reset();
        // A refused attempt, then a fresh one that still finds a whole key.
        CHECK(batched(scan, split_events(sk, 3), 0b10) == 4);
        scan.reset();
        CHECK(scan.verdict() == CredentialVerdict::clean);
        CHECK(batched(scan, {chunk("clean"), chunk(chars40)}, 0) == -1);
        scan.reset();
        CHECK(batched(scan, split_events(sk, 2), 0) == 3);
        scan.reset();
    }
}

TEST_CASE("finish scans answer text noted and not yet settled", "[credentials][batch]") {
    Inspector inspector;
    StreamScan scan = defaults().stream_scan();
    scan.note_answer_text(0, inspector.inspect(chunk(sk), Endpoint::chat_completions).answer_fragments);
    CHECK(scan.finish() == CredentialVerdict::credential_in_response);
}

TEST_CASE("relay batch: each line's buffer sizes and the usage before it", "[batch]") {
    RelayBatch batch;
    for (int round = 0; round < 2; ++round) {
        batch.clear();
        CHECK(batch.lines() == 0);
        CHECK(batch.line(0, 10) == 0);
        batch.see(Usage{.input_tokens = 5});
        CHECK(batch.line(0, 30) == 1);
        batch.see(Usage{.output_tokens = 7});
        CHECK(batch.line(0, 30) == 2);  // a second line of the same event
        batch.see(Usage{.input_tokens = 6, .output_tokens = 9});
        CHECK(batch.lines() == 3);

        CHECK(batch.at(0).held == 10);
        CHECK_FALSE(batch.at(0).usage.present());
        CHECK(batch.at(1).held == 30);
        CHECK(batch.at(1).usage.input_tokens == std::optional<std::uint64_t>(5));
        CHECK_FALSE(batch.at(1).usage.output_tokens);
        CHECK(batch.at(2).usage.input_tokens == std::optional<std::uint64_t>(5));
        CHECK(batch.at(2).usage.output_tokens == std::optional<std::uint64_t>(7));
        // Every line seen: the latest of each count.
        CHECK(batch.usage().input_tokens == std::optional<std::uint64_t>(6));
        CHECK(batch.usage().output_tokens == std::optional<std::uint64_t>(9));
    }
}
