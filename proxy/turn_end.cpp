// How a turn ends: its answers to the client (success, a failure as
// policy::failure_answer says, the drain limit), and its records.
#include "proxy/request.hpp"
#include "proxy/response_head.hpp"
#include "proxy/turn_run.hpp"

namespace modelproxy::proxy {

AttemptRecord TurnRun::attempt_record(std::optional<int> status, const policy::Classification* c,
                                      std::string_view code, std::string_view decision, std::int64_t delay_ms,
                                      Clock::time_point now) const {
    AttemptRecord r;
    r.request_id = plan_.request_id;
    r.route = route_->name;
    r.model = answering_model();
    r.attempt = replays_.attempts();
    r.candidate = static_cast<int>(cur_);
    r.status = status;
    if (c) {
        r.error_class = policy::to_string(c->cls);
        r.rule = c->rule;
        if (c->timeout_source != policy::TimeoutSource::none) r.timeout_source = policy::to_string(c->timeout_source);
    } else {
        r.rule = "success";
    }
    r.code = code;
    r.decision = decision;
    r.delay_ms = delay_ms;
    r.remaining_ms = replays_.remaining_ms(now);
    r.digest = digest_;
    r.resume_offset = resume_offset_;
    if (plan_.identity_refused && code == "model_identity_mismatch") {
        r.answered_model = plan_.identity_refusal.answered;
        r.accepted_models = &plan_.identity_refusal.accepted;
    }
    return r;
}

TurnRecord TurnRun::turn_record(std::string_view outcome, std::optional<int> status, std::string_view error_class,
                                std::string_view code, std::string_view bound, bool published,
                                Clock::time_point now) const {
    TurnRecord r;
    r.request_id = plan_.request_id;
    r.route = route_->name;
    r.model = answering_model();
    r.fallback_from = fallback_from();
    r.attempts = replays_.attempts();
    r.outcome = outcome;
    r.error_class = error_class;
    r.code = code;
    r.bound = bound;
    r.status = status;
    r.stream = plan_.wants_stream;
    r.published = published;
    r.duration_ms = ms_between(plan_.started, now);
    if (first_byte_at_) r.ttft_ms = ms_between(plan_.started, *first_byte_at_);
    r.resumed = resumes_;
    return r;
}

void TurnRun::record_attempt(std::optional<int> status, const policy::Classification* c, std::string_view code,
                             std::string_view decision, std::int64_t delay_ms) {
    const auto now = clock_.now();
    worker_.write_attempt(slot_, attempt_record(status, c, code, decision, delay_ms, now),
                          ms_between(attempt_started_, now));
}

void TurnRun::record_end(const EndRecord& e) {
    if (e.with_attempt) settle_recorded(e.attempt_status, e.classification, e.decision);
    // A resume decided and never resolved (its gates, the client, the drain
    // limit ended the turn first) broke before its seam.
    if (resume_open_) count_resume(metrics::ResumeResult::broken);
    // The turn waits for its candidate no more: it leaves the in-flight count
    // before the client has its last bytes, so a client's next turn finds
    // the count without it (weighted balance).
    leave_candidate();
    const auto now = clock_.now();
    const TurnRecord turn = turn_record(e.outcome, e.status, e.error_class, e.code, e.bound, published(), now);
    if (e.with_attempt) {
        worker_.write_attempt_and_turn(slot_, attempt_record(e.attempt_status, e.classification, e.code, e.decision,
                                                             0, now),
                                       ms_between(attempt_started_, now), turn);
    } else {
        worker_.write_turn(slot_, turn);
    }
    mark_ended();
}

std::string TurnRun::closing_event(const policy::FailureAnswer& a, int attempts) const {
    const ClosingError closing{a.message,  a.type,  a.status, policy::to_string(a.cls), a.decision,
                               a.bound,    attempts, next_sequence_number()};
    return closing_error_event(plan_.endpoint, plan_.error_shape, closing);
}

void TurnRun::answer_bytes(Ending& end, const policy::FailureAnswer& a, Failed& failed, int attempts) {
    const std::string_view cls = policy::to_string(a.cls);
    switch (a.form) {
        case policy::AnswerForm::upstream_answer: {
            // The upstream answered: its status, body and end-to-end headers.
            transport::Exchange& ex = *failed.attempt.exchange;
            ResponseHead head(static_cast<unsigned>(a.status), ex.head().reason());
            head.copy_upstream(ex);
            head.add_modelproxy(attempts, plan_.request_id, answering_model(), answering_route());
            head.add_failure(cls, a.decision, a.bound);
            if (!plan_.head_request) head.content_length(failed.body.size());
            if (!keep_alive()) head.add("connection", "close");
            if (ex.reusable()) give_back(failed.attempt);
            start_answering();
            end.head = head.finish();
            if (!plan_.head_request) end.body = failed.body;
            return;
        }
        case policy::AnswerForm::held_stream: {
            // A 200 stream whose events before answer text end in an error
            // event: passed on as the 200 stream holding that event, after
            // its head unless the hold limit sent one.
            end.stream = true;
            end.chunk = *failed.held_stream;
            if (phase_ != Phase::held) return;
            transport::Exchange& ex = *failed.attempt.exchange;
            ResponseHead head(ex.head().result_int(), ex.head().reason());
            head.copy_upstream(ex);
            head.add_modelproxy(attempts, plan_.request_id, answering_model(), answering_route());
            head.add_failure(cls, a.decision, a.bound);
            stream_framing(head);
            start_answering();
            end.head = head.finish();
            return;
        }
        case policy::AnswerForm::closing_event:
            // A 200 stream head is out: the turn ends inside that stream,
            // never with a second head.
            end.stream = true;
            end.text = closing_event(a, attempts);
            end.chunk = end.text;
            return;
        case policy::AnswerForm::stream_end:
            end.stream = true;
            return;
        case policy::AnswerForm::envelope:
            break;
    }
    // No upstream answer to pass on: the envelope. An upstream answer that
    // echoed a key is not passed on, but its connection may still be reused.
    if (failed.attempt.exchange && failed.attempt.exchange->reusable()) give_back(failed.attempt);
    EnvelopeDetails details;
    details.error_class = cls;
    details.attempts = attempts;
    details.decision = a.decision;
    if (!a.bound.empty()) details.bound = a.bound;
    const auto status = static_cast<unsigned>(a.status);
    end.text = error_envelope(plan_.error_shape, status, a.message, a.type, a.code, details);
    ResponseHead head(status);
    head.add("content-type", "application/json");
    head.add_modelproxy(attempts, plan_.request_id, answering_model(), answering_route());
    head.add_failure(cls, a.decision, a.bound);
    if (retry_after_s_ >= 0) head.add("retry-after", std::to_string(retry_after_s_));
    head.content_length(end.text.size());
    if (!keep_alive()) head.add("connection", "close");
    end.head = head.finish();
    end.body = end.text;
}

void TurnRun::end_answer(Ending& end, Failed& failed, const policy::Decision& decision, bool after_wait) {
    policy::FailureFacts facts;
    facts.kind = failed.kind;
    facts.cls = failed.classification.cls;
    facts.upstream_status = failed.status;
    facts.verdict = decision.verdict;
    facts.bound = decision.bound;
    facts.client = client_has();
    facts.message = failed.detail;
    const policy::FailureAnswer a = policy::failure_answer(facts);
    answer_bytes(end, a, failed, replays_.attempts());
    record_end({failed.record_status(), &failed.classification, a.code, a.record_decision, a.outcome,
                a.record_status, policy::to_string(a.cls), a.bound, !after_wait});
}

Task<bool> TurnRun::write_ending(const Ending& end) {
    bool ok = true;
    if (end.stream) {
        ok = co_await write_chunk(end.chunk, {}, end.head, end.body, "0\r\n\r\n");
    } else if (!end.head.empty()) {
        ok = co_await write(end.head, end.body);
    }
    co_return ok && keep_alive();
}

// The turn ends on `failed`. The work is end_answer's; this coroutine only
// writes, so that its frame stays under the 1020 bytes Asio recycles.
Task<bool> TurnRun::end_turn(Failed& failed, const policy::Decision& decision, bool after_wait) {
    Ending end;
    end_answer(end, failed, decision, after_wait);
    co_return co_await write_ending(end);
}

// A turn the client cut by hanging up (docs/behaviour.md sections 6 and
// 10): recorded as cancelled, not as a provider failure. The turn record's
// status is what the client got (the head the hold limit or publication
// sent, else none); the attempt record's is the upstream's answer, when the
// attempt had one.
void TurnRun::record_cancelled() {
    const policy::Classification c{policy::ErrorClass::cancelled, false, policy::TimeoutSource::none, ""};
    const auto status = [](int s) { return s ? std::optional<int>(s) : std::nullopt; };
    record_end({status(attempt_status_), &c, "", "cancelled", "cancelled", status(client_status_), "cancelled", ""});
}

// The drain limit ended the turn (docs/behaviour.md section 11). A stream
// whose head is out ends with the closing error event; a turn that
// published nothing gets a 503 envelope. Either way the connection closes.
Task<void> TurnRun::end_at_drain_limit() {
    Ending end;
    own_failure(end, policy::FailureKind::drain_limit, replays_.attempts());
    if (client_gone_ || writing_) co_return;
    co_await write_ending(end);
}

// A replay whose payload differs from attempt 1's is not sent
// (docs/behaviour.md section 6): the client is told of the attempts made.
Task<bool> TurnRun::digest_mismatch() {
    Ending end;
    own_failure(end, policy::FailureKind::replay_digest_mismatch, replays_.attempts() - 1);
    co_return co_await write_ending(end);
}

// A failure of the proxy's own, of no upstream attempt: its answer as
// failure_answer gives it, into `end`, and the turn's record.
void TurnRun::own_failure(Ending& end, policy::FailureKind kind, int attempts) {
    Failed failed = failure(kind);
    policy::FailureFacts facts;
    facts.kind = failed.kind;
    facts.cls = failed.classification.cls;
    facts.client = client_has();
    const policy::FailureAnswer a = policy::failure_answer(facts);
    answer_bytes(end, a, failed, attempts);
    // circuit_open, admission_timeout and quota_timeout sent nothing: no attempt to record.
    record_end({std::nullopt, &failed.classification, a.code, a.record_decision, a.outcome, a.record_status,
                policy::to_string(a.cls), a.bound,
                kind != policy::FailureKind::circuit_open && kind != policy::FailureKind::admission_timeout &&
                    kind != policy::FailureKind::quota_timeout});
}

Task<std::optional<bool>> TurnRun::wait_half_open() {
    const auto now = clock_.now();
    const auto until = *fail_fast_at_;
    fail_fast_at_.reset();
    const std::int64_t wait_ms =
        until > now ? (std::chrono::duration_cast<std::chrono::microseconds>(until - now).count() + 999) / 1000 : 0;
    if (!replays_.fits_wait(wait_ms, now)) {
        // Whole seconds until that half-open, rounded up.
        retry_after_s_ = (wait_ms + 999) / 1000;
        Ending end;
        own_failure(end, policy::FailureKind::circuit_open, 0);
        co_return co_await write_ending(end);
    }
    if (wait_ms > 0) {
        replays_.add_wait(wait_ms);
        Timer timer(client_.get_executor());
        timer.expires_after(std::chrono::milliseconds(wait_ms));
        co_await timer.async_wait(use_tuple);
        if (watch_cut()) co_return false;
    }
    // Half-open now: the turn is its probe when a slot is free, else an
    // ordinary attempt on it.
    move_to(cur_, clock_.now(), false);
    co_return std::nullopt;
}

std::array<asio::const_buffer, 2> TurnRun::answer_buffers(const std::string& body) const {
    const std::string_view shown = plan_.head_request ? std::string_view{} : std::string_view(body);
    return {asio::buffer(plan_.head_text), asio::buffer(shown)};
}

std::optional<bool> TurnRun::answer_success(Attempt& a, const std::string& body, std::size_t& taken) {
    transport::Exchange& ex = *a.exchange;
    // One clock reading for the answer's first byte, the connection's idle
    // start and both records: they are the same moment to a microsecond.
    const auto now = clock_.now();
    first_byte_at_ = now;
    ResponseHead head(ex.head().result_int(), ex.head().reason(), std::move(plan_.head_text));
    head.copy_upstream(ex);
    head.add_modelproxy(replays_.attempts(), plan_.request_id, answering_model(), answering_route());
    if (!plan_.head_request) head.content_length(body.size());
    if (!keep_alive()) head.add("connection", "close");
    const int status = static_cast<int>(ex.head().result_int());
    settle(policy::BreakerFacts{.ok_2xx = true});
    leave_candidate();  // before the answer goes out, as in record_end
    if (ex.reusable()) give_back(a, now);  // destroys the exchange: `ex` is not used after this
    start_answering();
    const AttemptRecord attempt = attempt_record(status, nullptr, "", "ok", 0, now);
    const TurnRecord turn = turn_record("ok", status, "", "", "", published(), now);
    mark_ended();
    // Counted before the answer goes out, so /metrics agrees with it once
    // the client has it; the two lines written to the log after it has gone
    // out, or begun to: the client waits for its answer, not for the log
    // line. A write that fails here changes neither.
    worker_.count_attempt_and_turn(slot_, attempt, ms_between(attempt_started_, now), turn);
    plan_.head_text = head.finish();
    const auto settled = write_at_once(answer_buffers(body), taken);
    worker_.log_attempt_and_turn(attempt, turn);
    if (!settled) return std::nullopt;
    return *settled && keep_alive();
}

}  // namespace modelproxy::proxy
