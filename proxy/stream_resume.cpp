// Continuing a cut stream (docs/behaviour.md section 16): the answer the
// client has, read from each published line while a resume may still
// follow; at a break after publication, whether a resume continues it and
// on which candidate; and a resume's attempt read without publishing until
// its answer has reproduced what the client has (sse/resume.hpp's seam), then
// forwarded from the seam on under the ids the client first saw. The seam,
// the pieces and the rewrite are sse/'s pure functions; this file keeps the
// turn's part: records, metrics, the bounds and the candidates.
#include "policy/classify.hpp"
#include "policy/resume.hpp"
#include "proxy/stream_relay.hpp"
#include "proxy/turn_run.hpp"

namespace modelproxy::proxy {

using K = policy::FailureKind;
using metrics::ResumeResult;

namespace {

bool resumable_endpoint(policy::Endpoint e) {
    return e == policy::Endpoint::chat_completions || e == policy::Endpoint::completions ||
           e == policy::Endpoint::messages;
}

}  // namespace

// At a stream's start: whether its published lines are read (a turn's first
// stream), or, for a resume's attempt, its seam search against them.
void TurnRun::start_resume(StreamRelay& relay) {
    const config::Resume& rc = route_->resume;
    if (!relay.resume) {
        if (!rc.enabled) return;  // nothing to read or search: no state (StreamRelay::resume)
        relay.resume = std::make_unique<StreamRelay::Resume>();
    }
    StreamRelay::Resume& s = *relay.resume;
    if (resume_attempt_) {
        // The published answer stays: this attempt must reproduce it.
        s.seam.emplace(s.published);
        s.reached = false;
        return;
    }
    s.clear();
    s.track = rc.enabled && relay.rules && resumable_endpoint(plan_.endpoint) && plan_.one_choice &&
              (!rc.only_deterministic || plan_.deterministic);
}

// An event the client gets (held, then published, or forwarded), read into
// the answer it has while a resume may still follow.
void TurnRun::track_published(const sse::Event& event) {
    if (!plan_.stream.resume) return;
    StreamRelay::Resume& s = *plan_.stream.resume;
    if (!s.track || s.spent) return;
    sse::ResumeReader& reader = worker_.resume_reader();
    for (const std::string_view data : event.data) {
        const sse::ResumeLine& line = reader.read(data, plan_.endpoint);
        if (!line.json && !line.done) {
            s.spent = true;
            return;
        }
        s.published.add(line);
    }
    // Past max_offset no resume can follow: reading more would cost for nothing.
    if (s.published.code_points() > static_cast<std::uint64_t>(route_->resume.max_offset)) s.spent = true;
}

// After publication, an event of a resume's attempt: dropped before the seam,
// cut at it, rewritten to the first stream's ids after it; a line that
// contradicts the published answer abandons the resume.
RelayStep TurnRun::resume_event(const sse::Event& event) {
    StreamRelay& r = plan_.stream;
    StreamRelay::Resume& s = *r.resume;  // made: a seam or a resumable break needs it
    sse::ResumeReader& reader = worker_.resume_reader();
    s.event.clear();
    bool any = false;
    for (const std::string_view data : event.data) {
        const sse::ResumeLine& line = reader.read(data, plan_.endpoint);
        if (!line.json && !line.done) return abandon_resume(ResumeResult::diverged);
        sse::Seam::Verdict verdict{sse::Seam::Step::forward, {}};
        if (!s.reached) {
            // The answer ended before it said everything the client has.
            if (line.done) return abandon_resume(ResumeResult::diverged);
            verdict = s.seam->judge(line);
            if (verdict.step == sse::Seam::Step::diverged) return abandon_resume(ResumeResult::diverged);
            if (s.seam->reached()) {
                s.reached = true;
                ++resumes_;
                count_resume(ResumeResult::continued);
            }
            if (verdict.step == sse::Seam::Step::drop) continue;
        }
        s.line.clear();
        if (!reader.rewrite(data, plan_.endpoint, verdict.cut, s.published.ids(), s.line))
            return abandon_resume(ResumeResult::diverged);
        if (!any && !event.name.empty()) s.event.append("event: ").append(event.name).append("\n");
        s.event.append("data: ").append(s.line).append("\n");
        any = true;
        // What the client now has, for a later resume of this stream.
        if (s.track && !s.spent) {
            s.published.add(reader.read(s.line, plan_.endpoint));
            if (s.published.code_points() > static_cast<std::uint64_t>(route_->resume.max_offset)) s.spent = true;
        }
    }
    if (any) {
        s.event.append("\n");
        r.out.add_copy(s.event);
    }
    return RelayStep::read_on;
}

// A break after publication that a resume may continue: true when one does
// (the attempt is recorded with decision resume, resume_to_ names the
// candidate, `failed` is the cut the turn ends on if the resume cannot go).
bool TurnRun::resume_break(Failed& failed) {
    StreamRelay& r = plan_.stream;
    StreamRelay::Resume& s = *r.resume;  // made: a seam or a resumable break needs it
    s.resumable = false;
    const config::Resume& rc = route_->resume;
    if (!rc.enabled) return false;
    resume_slot_ = slot_;
    const auto skip = [&] {
        count_resume(ResumeResult::skipped);
        return false;
    };
    const std::uint64_t offset = s.published.code_points();
    const auto now = clock_.now();
    policy::ResumeFacts facts;
    facts.readable = s.track && !s.spent;
    facts.one_choice = s.published.one_choice();
    facts.published = offset;
    facts.max_offset = rc.max_offset;
    facts.tries = resume_tries_;
    facts.max_resumes = rc.max_resumes;
    // One more attempt within the turn's bounds, min_attempt_ms before the
    // deadline included, sent at once.
    facts.bounds_allow = replays_.fall_over(policy::failure_of(r.close.classification, 0, std::nullopt), now).verdict ==
                         policy::Verdict::retry;
    // A model without a `models` entry has the defaults' policy, unnamed.
    facts.per_candidate = plan_.candidates && plan_.candidates->policy && !plan_.candidates->policy->name.empty();
    facts.attempts_on_current = current().attempts;
    facts.attempts_per_candidate = attempts_per_candidate();
    facts.current = cur_;
    boost::container::small_vector<policy::ResumeCandidate, 4> list;
    for (std::size_t i = 0; i < order_.size(); ++i)
        list.push_back({order_[i].ref->client_model == current().ref->client_model, i > cur_ && usable(i, now, false),
                        i == cur_ && usable(i, now, true)});
    facts.candidates = list;
    const std::optional<std::size_t> to = policy::resume_target(facts);
    if (!to) return skip();
    // A replay on the same candidate must fit its retry budget (section 14).
    release_replay();
    if (*to == cur_ && !reserve_replay()) return skip();
    // The tokens this attempt streamed were spent: the quota keeps them.
    settle_quota(true);
    resume_offset_ = static_cast<std::int64_t>(offset);
    resume_cut_ = r.close.classification;
    settle_recorded(200, &r.close.classification, "resume");
    record_attempt(200, &r.close.classification, policy::row(K::stream_cut).code, "resume", 0);
    ++resume_tries_;
    resume_open_ = true;
    resume_to_ = to;
    s.error_event.clear();
    failed = failure(K::stream_cut, resume_cut_);
    return true;
}

// A resume's attempt ended before its seam (diverged, or broken): the
// client's stream ends as the cut it tried to continue would have.
RelayStep TurnRun::abandon_resume(ResumeResult result) {
    StreamRelay::Resume& s = *plan_.stream.resume;  // made: only a resume's attempt is abandoned
    count_resume(result);
    s.seam.reset();
    s.spent = true;  // never a second try from a stream that did not reach its seam
    s.resumable = false;
    s.error_event.clear();
    return close_with(resume_cut_, K::stream_cut);
}

// A resume's attempt failed before its stream could be read through.
Task<bool> TurnRun::resume_failed(Failed& failed) {
    // Recorded as its own failure; the turn ends as the cut it tried to continue.
    settle_recorded(failed.record_status(), &failed.classification, "terminal");
    record_attempt(failed.record_status(), &failed.classification, failed.code(), "terminal", 0);
    if (failed.attempt.exchange && failed.attempt.exchange->reusable()) give_back(failed.attempt);
    count_resume(ResumeResult::broken);
    if (plan_.stream.resume) plan_.stream.resume->seam.reset();
    Failed cut = failure(K::stream_cut, resume_cut_);
    co_return co_await end_turn(cut, policy::Decision{policy::Verdict::terminal, policy::Bound::none, 0, "resume"},
                                true);
}

// A resume's attempt on the current candidate: its breaker admits it, or it
// goes all the same (it was usable when the resume was decided).
void TurnRun::admit_resume(Clock::time_point now) {
    CandidateState& s = *current().ref->state;
    std::optional<policy::BreakerTransition> moved;
    {
        std::lock_guard lock(s.mutex);
        admitted_ = s.breaker.admit(now, false, moved);
        if (admitted_ == policy::Admit::held) admitted_ = s.breaker.admit(now, true, moved);
    }
    settled_ = false;
    if (moved) record_breaker(s, *moved);
}

void TurnRun::count_resume(ResumeResult result) {
    if (result != ResumeResult::skipped) resume_open_ = false;
    worker_.counters(resume_slot_).resumes[static_cast<std::size_t>(result)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace modelproxy::proxy
