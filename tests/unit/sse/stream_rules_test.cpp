#include "sse/stream_rules.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace modelproxy::sse;
using modelproxy::policy::Classification;
using modelproxy::policy::Endpoint;
using modelproxy::policy::ErrorClass;
using modelproxy::policy::TimeoutSource;
using modelproxy::policy::Transport;
using K = modelproxy::policy::FailureKind;
using S = EventStep;
using R = LineRefusal;

namespace {

constexpr std::size_t max_held = 1000;

// Where a stream stands, by name: the rows below read as sentences.
StreamFacts stream(const std::string& name) {
    StreamFacts s;
    s.max_held_bytes = max_held;
    if (name == "holding") return s;
    if (name == "holding-error") {
        s.error_held = true;
        return s;
    }
    if (name == "holding-after-done") {
        s.after_done = true;
        return s;
    }
    if (name == "generic") {
        s.rules = false;
        return s;
    }
    if (name == "published") {
        s.published = true;
        return s;
    }
    if (name == "published-after-done") {
        s.published = s.after_done = true;
        return s;
    }
    FAIL("unknown stream " << name);
    return s;
}

EventFacts event(R refusal, bool answer, bool error, std::size_t held = 10) { return {refusal, answer, error, held}; }

}  // namespace

// One row per rule of docs/behaviour.md sections 7 and 8 for one event.
TEST_CASE("event_rule: hold, publish, forward, end or refuse, per section 7 and 8", "[stream-rules]") {
    auto [where, facts, step, failure] = GENERATE(table<std::string, EventFacts, S, K>({
        // Before answer text every event is held; the first answer text publishes.
        {"holding", event(R::none, false, false), S::hold, K::upstream_error_event},
        {"holding", event(R::none, true, false), S::publish, K::upstream_error_event},
        // An error event before answer text is held; answer text after it (or
        // in the same event) does not publish: the stream is an error stream.
        {"holding", event(R::none, false, true), S::hold, K::upstream_error_event},
        {"holding", event(R::none, true, true), S::hold, K::upstream_error_event},
        {"holding-error", event(R::none, true, false), S::hold, K::upstream_error_event},
        // Held bytes past max_response_body_bytes: refused.
        {"holding", event(R::none, false, false, max_held), S::hold, K::upstream_error_event},
        {"holding", event(R::none, false, false, max_held + 1), S::fail, K::held_too_large},
        {"holding", event(R::none, true, false, max_held + 1), S::fail, K::held_too_large},
        // A line that is not JSON: refused before publication (502), closed after.
        {"holding", event(R::unparseable, true, false), S::fail, K::unparseable_event},
        {"published", event(R::unparseable, true, false), S::close, K::unparseable_event},
        // ... but not on the generic dialect, nor after [DONE].
        {"generic", event(R::unparseable, false, false), S::hold, K::upstream_error_event},
        {"published-after-done", event(R::unparseable, false, false), S::skip, K::upstream_error_event},
        // Another model, or a credential: refused wherever it comes, after [DONE] too.
        {"holding", event(R::identity, true, false), S::fail, K::model_identity_mismatch},
        {"published", event(R::identity, true, false), S::close, K::model_identity_mismatch},
        {"holding-after-done", event(R::identity, false, false), S::fail, K::model_identity_mismatch},
        {"published-after-done", event(R::identity, false, false), S::close, K::model_identity_mismatch},
        {"holding", event(R::credential, false, false), S::fail, K::credential_in_stream},
        {"published", event(R::credential, true, false), S::close, K::credential_in_stream},
        {"published-after-done", event(R::credential, false, false), S::close, K::credential_in_stream},
        // A refusal wins over an error event in the same event.
        {"holding", event(R::identity, false, true), S::fail, K::model_identity_mismatch},
        // After publication every event is forwarded; an error event ends the stream.
        {"published", event(R::none, true, false), S::forward, K::upstream_error_event},
        {"published", event(R::none, false, false, max_held + 1), S::forward, K::upstream_error_event},
        {"published", event(R::none, false, true), S::forward_and_end, K::upstream_error_event},
        // Nothing after [DONE] is forwarded.
        {"published-after-done", event(R::none, true, false), S::skip, K::upstream_error_event},
        {"holding-after-done", event(R::none, true, false), S::skip, K::upstream_error_event},
    }));
    CAPTURE(where, facts.refusal, facts.answer_text, facts.error_event, facts.held_bytes);
    const EventAction action = event_rule(stream(where), facts);
    CHECK(action.step == step);
    if (step == S::fail || step == S::close || step == S::forward_and_end) CHECK(action.failure == failure);
}

TEST_CASE("refuses: a line that is not JSON refuses only under the stream rules and before [DONE]",
          "[stream-rules]") {
    CHECK_FALSE(refuses(stream("holding"), R::none));
    CHECK(refuses(stream("holding"), R::unparseable));
    CHECK(refuses(stream("published"), R::unparseable));
    CHECK_FALSE(refuses(stream("generic"), R::unparseable));
    CHECK_FALSE(refuses(stream("published-after-done"), R::unparseable));
    CHECK(refuses(stream("published-after-done"), R::identity));
    CHECK(refuses(stream("generic"), R::credential));
}

namespace {

EndFacts read_more() { return {}; }
EndFacts broke(Transport fault, bool capped = false) {
    EndFacts e;
    e.read = ReadEnd::broke;
    e.fault = fault;
    e.capped = capped;
    e.saw_event = true;
    return e;
}
EndFacts clean(bool saw_event, bool complete, R refusal = R::none) {
    EndFacts e;
    e.read = ReadEnd::clean;
    e.saw_event = saw_event;
    e.complete = complete;
    e.refusal = refusal;
    return e;
}

}  // namespace

// One row per rule of sections 5, 7 and 8 for the end of an upstream read.
TEST_CASE("end_rule: read on, complete, fail, or close, per sections 5, 7 and 8", "[stream-rules]") {
    using E = EndStep;
    auto [where, facts, step, failure] = GENERATE(table<std::string, EndFacts, E, K>({
        {"holding", read_more(), E::read_on, K::stream_cut},
        {"published", read_more(), E::read_on, K::stream_cut},
        // A break before publication: the held error event decides, else the fault.
        {"holding", broke(Transport::dropped_in_body), E::fail_read, K::connection_dropped},
        {"holding", broke(Transport::stream_idle_fired), E::fail_read, K::connection_dropped},
        {"holding-error", broke(Transport::dropped_in_body), E::held_error, K::upstream_error_event},
        // A break after publication: the closing error event, stream_incomplete.
        {"published", broke(Transport::dropped_in_body), E::close, K::stream_cut},
        {"published", broke(Transport::stream_idle_fired), E::close, K::stream_cut},
        {"published", broke(Transport::stream_idle_fired, true), E::close, K::stream_cut},
        // A clean end: complete is a success, published or not (an empty reply).
        {"published", clean(true, true), E::complete, K::stream_cut},
        {"holding", clean(true, true), E::complete, K::stream_cut},
        {"generic", clean(true, true), E::complete, K::stream_cut},
        // Without the end marker: closed after publication, a failure before.
        {"published", clean(true, false), E::close, K::stream_cut},
        {"holding", clean(true, false), E::fail, K::stream_ended_early},
        // No event at all: refused empty_stream.
        {"holding", clean(false, true), E::fail, K::empty_stream},
        {"holding", clean(false, false), E::fail, K::empty_stream},
        // An error-only stream: its held error event is the failure.
        {"holding-error", clean(true, false), E::held_error, K::upstream_error_event},
        {"holding-error", clean(true, true), E::held_error, K::upstream_error_event},
        {"holding-error", clean(false, false), E::held_error, K::upstream_error_event},
        // The end's own findings refuse the stream, before or after publication.
        {"holding", clean(true, true, R::identity), E::fail, K::model_identity_mismatch},
        {"published", clean(true, true, R::identity), E::close, K::model_identity_mismatch},
        {"holding", clean(true, true, R::credential), E::fail, K::credential_in_stream},
        {"published", clean(true, false, R::credential), E::close, K::credential_in_stream},
        {"holding-error", clean(true, false, R::credential), E::fail, K::credential_in_stream},
    }));
    CAPTURE(where, static_cast<int>(facts.read), facts.saw_event, facts.complete, facts.refusal);
    const EndAction action = end_rule(stream(where), facts, Endpoint::chat_completions);
    CHECK(action.step == step);
    if (step != E::read_on && step != E::complete) CHECK(action.failure == failure);
}

TEST_CASE("end_rule: the class of a break or an incomplete end", "[stream-rules]") {
    const auto published = stream("published");
    // A reset after publication: network; the idle timer: timeout, stream-idle.
    CHECK(end_rule(published, broke(Transport::dropped_in_body), Endpoint::chat_completions).classification.cls ==
          ErrorClass::network);
    const auto idle_cut = end_rule(published, broke(Transport::stream_idle_fired), Endpoint::chat_completions);
    CHECK(idle_cut.classification.cls == ErrorClass::timeout);
    CHECK(idle_cut.classification.timeout_source == TimeoutSource::stream_idle);
    // max_stream_ms: stream-incomplete, its own rule.
    const auto capped = end_rule(published, broke(Transport::stream_idle_fired, true), Endpoint::chat_completions);
    CHECK(capped.classification ==
          Classification{ErrorClass::stream_incomplete, false, TimeoutSource::none, "max-stream-ms"});
    // A clean end without the end marker: stream-incomplete, replayed only
    // before publication (and on the endpoints that replay).
    const auto early = end_rule(stream("holding"), clean(true, false), Endpoint::chat_completions);
    CHECK(early.classification.cls == ErrorClass::stream_incomplete);
    CHECK(early.classification.retryable);
    const auto cut = end_rule(published, clean(true, false), Endpoint::chat_completions);
    CHECK(cut.classification.cls == ErrorClass::stream_incomplete);
}
