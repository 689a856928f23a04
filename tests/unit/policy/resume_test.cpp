// docs/behaviour.md section 16: when a cut stream is continued, and where.
#include "policy/resume.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace modelproxy::policy;

namespace {

// A turn on candidate 0 of [0: the model, 1: another deployment, 2: a fallback], all usable.
struct Turn {
    std::vector<ResumeCandidate> list{{true, true, true}, {true, true, true}, {false, true, true}};
    ResumeFacts facts;
    Turn() {
        facts.readable = true;
        facts.published = 100;
        facts.max_offset = 4096;
        facts.max_resumes = 1;
        facts.bounds_allow = true;
        facts.attempts_per_candidate = 2;
        facts.attempts_on_current = 1;
    }
    std::optional<std::size_t> target() {
        facts.candidates = list;
        return resume_target(facts);
    }
};

}  // namespace

TEST_CASE("resume target: the same candidate while it has attempts left", "[resume]") {
    Turn t;
    CHECK(t.target() == 0u);
    t.facts.per_candidate = true;
    CHECK(t.target() == 0u);
    t.facts.attempts_on_current = 2;
    CHECK(t.target() == 1u);  // the next deployment of the model
    t.facts.per_candidate = false;
    CHECK(t.target() == 0u);  // without a models entry only the turn's bounds count
}

TEST_CASE("resume target: never a fallback model, never an unusable deployment", "[resume]") {
    Turn t;
    t.list[0].breaker_usable = false;
    CHECK(t.target() == 1u);
    t.list[1].usable = false;
    CHECK(t.target() == std::nullopt);  // candidate 2 serves another model
    t.list[1].usable = true;
    t.facts.current = 1;
    t.list[1].breaker_usable = false;
    CHECK(t.target() == std::nullopt);  // nothing of the model after it
}

TEST_CASE("resume target: each rule of the break rules it out on its own", "[resume]") {
    const auto ruled_out = [](auto change) {
        Turn t;
        change(t.facts);
        return !t.target().has_value();
    };
    CHECK(ruled_out([](ResumeFacts& f) { f.readable = false; }));
    CHECK(ruled_out([](ResumeFacts& f) { f.one_choice = false; }));
    CHECK(ruled_out([](ResumeFacts& f) { f.published = 0; }));
    CHECK(ruled_out([](ResumeFacts& f) { f.published = 4097; }));
    CHECK_FALSE(ruled_out([](ResumeFacts& f) { f.published = 4096; }));
    CHECK(ruled_out([](ResumeFacts& f) { f.tries = 1; }));
    CHECK_FALSE(ruled_out([](ResumeFacts& f) { f.tries = 1, f.max_resumes = 2; }));
    CHECK(ruled_out([](ResumeFacts& f) { f.bounds_allow = false; }));
}
