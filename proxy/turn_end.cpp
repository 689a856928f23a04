// How a turn ends: its answers to the client (success, the upstream's
// failure, the section 9 envelope, the drain limit), its records, and the
// client writes every answer goes through.
#include "proxy/request.hpp"
#include "proxy/response_head.hpp"
#include "proxy/turn_run.hpp"
#include "transport/write_now.hpp"

#include <boost/asio/write.hpp>

#include <array>
#include <cstdio>

namespace modelproxy::proxy {

// The turn and the hold ticker both write to the client: one write at a
// time, whole, so their bytes never interleave.
Task<bool> TurnRun::write(std::string_view a, std::string_view b, std::string_view c, std::string_view d,
                          std::string_view e, std::string_view f, std::string_view g) {
    std::array<asio::const_buffer, 7> buffers{asio::buffer(a), asio::buffer(b), asio::buffer(c), asio::buffer(d),
                                              asio::buffer(e), asio::buffer(f), asio::buffer(g)};
    std::size_t taken = 0;
    if (auto settled = write_at_once(buffers, taken)) co_return *settled;
    co_return co_await finish_write(buffers, taken);
}

template <std::size_t N>
std::optional<bool> TurnRun::write_at_once(const std::array<asio::const_buffer, N>& buffers, std::size_t& taken) {
    if (writing_ || client_gone_) {
        taken = not_started;
        return std::nullopt;
    }
    writing_ = true;
    taken = 0;
    if (auto settled = transport::write_at_once(client_, buffers, taken)) return wrote(settled->first);
    return std::nullopt;
}

template <std::size_t N>
Task<bool> TurnRun::finish_write(std::array<asio::const_buffer, N> buffers, std::size_t taken) {
    if (taken == not_started) {
        while (writing_) {
            if (!write_gate_) write_gate_.emplace(client_.get_executor());
            write_gate_->expires_at(Timer::time_point::max());
            co_await write_gate_->async_wait(use_tuple);
            if (co_await cut()) co_return false;
        }
        if (client_gone_) co_return false;
        writing_ = true;
        taken = 0;
        if (auto settled = transport::write_at_once(client_, buffers, taken)) co_return wrote(settled->first);
    }
    auto [ec, n] = co_await transport::write_rest(client_, buffers, taken);
    co_return wrote(ec);
}

// The whole-body answer's rest (try_attempt, in turn.cpp).
template Task<bool> TurnRun::finish_write<2>(std::array<asio::const_buffer, 2> buffers, std::size_t taken);

bool TurnRun::wrote(const boost::system::error_code& ec) {
    writing_ = false;
    if (write_gate_) write_gate_->cancel();
    // A failed client write is the client gone, as the watch would find it
    // (SPEC section 6): told to the watch, so that run_turn records the turn
    // as cancelled even when the write failed before the watch's own
    // completion ran (it then finds the turn done and does nothing).
    if (ec) {
        client_gone_ = true;
        watch_.cut(TurnWatch::Reason::client_left);
    }
    return !ec;
}

void TurnRun::stream_framing(ResponseHead& head) const {
    if (!plan_.http10) head.chunked();
    if (!keep_alive()) head.add("connection", "close");
}

Task<bool> TurnRun::write_chunk(std::string_view data, std::string_view data_more, std::string_view head,
                                std::string_view head_body, std::string_view after) {
    if (plan_.http10) after = {};  // no chunks: the stream ends with the connection
    if (data.empty() && data_more.empty() && head.empty() && head_body.empty() && after.empty()) co_return true;
    char size[24];
    std::string_view size_line, crlf;
    if (!plan_.http10 && (!data.empty() || !data_more.empty())) {
        const int len = std::snprintf(size, sizeof size, "%zx\r\n", data.size() + data_more.size());
        size_line = std::string_view(size, static_cast<std::size_t>(len));
        crlf = "\r\n";
    }
    co_return co_await write(head, head_body, size_line, data, data_more, crlf, after);
}

AttemptRecord TurnRun::attempt_record(std::optional<int> status, const policy::Classification* c,
                                      std::string_view code, std::string_view decision, std::int64_t delay_ms,
                                      Clock::time_point now) const {
    AttemptRecord r;
    r.request_id = plan_.request_id;
    r.route = route_.name;
    r.model = plan_.client_model;
    r.attempt = attempts_;
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
    r.remaining_ms = std::max<std::int64_t>(0, ms_between(now, plan_.deadline));
    r.digest = digest_;
    if (plan_.identity_refused && code == "model_identity_mismatch") {
        r.answered_model = plan_.identity_refusal.answered;
        r.accepted_models = &plan_.identity_refusal.accepted;
    }
    return r;
}

TurnRecord TurnRun::turn_record(std::string_view outcome, std::optional<int> status,
                                const policy::Classification* c, std::string_view code, std::string_view bound,
                                Clock::time_point now) const {
    TurnRecord r;
    r.request_id = plan_.request_id;
    r.route = route_.name;
    r.model = plan_.client_model;
    r.attempts = attempts_;
    r.outcome = outcome;
    if (c) r.error_class = policy::to_string(c->cls);
    r.code = code;
    r.bound = bound;
    r.status = status;
    r.stream = plan_.wants_stream;
    r.published = published_;
    r.duration_ms = ms_between(plan_.started, now);
    if (first_byte_at_) r.ttft_ms = ms_between(plan_.started, *first_byte_at_);
    return r;
}

void TurnRun::record_attempt(std::optional<int> status, const policy::Classification* c, std::string_view code,
                             std::string_view decision, std::int64_t delay_ms) {
    const auto now = Clock::now();
    worker_.write_attempt(slot_, attempt_record(status, c, code, decision, delay_ms, now),
                          ms_between(attempt_started_, now));
}

void TurnRun::record_turn(std::string_view outcome, std::optional<int> status, const policy::Classification* c,
                          std::string_view code, std::string_view bound) {
    recorded_ = true;
    worker_.write_turn(slot_, turn_record(outcome, status, c, code, bound, Clock::now()));
}

void TurnRun::record_attempt_and_turn(std::optional<int> attempt_status, std::string_view decision,
                                      std::string_view outcome, std::optional<int> status,
                                      const policy::Classification* c, std::string_view code,
                                      Clock::time_point now) {
    recorded_ = true;
    worker_.write_attempt_and_turn(slot_, attempt_record(attempt_status, c, code, decision, 0, now),
                                   ms_between(attempt_started_, now), turn_record(outcome, status, c, code, "", now));
}

// The drain limit ended the turn (SPEC section 11). A stream whose head is
// out ends with the closing error event; a turn that published nothing gets
// a 503 envelope. Either way the connection closes.
Task<void> TurnRun::end_at_drain_limit() {
    policy::Classification c{policy::ErrorClass::cancelled, false, policy::TimeoutSource::none, "drain-limit"};
    record_attempt_and_turn(std::nullopt, "cancelled", "cancelled", head_out_ ? 200 : 503, &c, "drain_limit");
    if (client_gone_ || writing_) co_return;
    if (head_out_) {
        ClosingError closing{"the proxy is shutting down and its drain limit passed", "stream_incomplete", 502,
                             "cancelled", "terminal", "", attempts_, next_sequence_number()};
        std::string event = closing_error_event(plan_.endpoint, plan_.error_shape, closing);
        co_await write_chunk(event, {}, {}, {}, "0\r\n\r\n");
        co_return;
    }
    EnvelopeDetails details;
    details.error_class = "cancelled";
    details.attempts = attempts_;
    details.decision = "terminal";
    std::string body = error_envelope(plan_.error_shape, 503, "the proxy is shutting down and its drain limit passed",
                                      modelproxy_error_type, "drain_limit", details);
    ResponseHead head(503);
    head.add("content-type", "application/json");
    head.add_modelproxy(attempts_, plan_.request_id);
    head.add("x-should-retry", "false");
    head.add("connection", "close");
    head.content_length(body.size());
    std::string text = head.finish();
    co_await write(text, body);
}

// The turn ends on `failed`. The work is end_answer's; this coroutine only
// writes, so that its frame stays under the 1020 bytes Asio recycles (issue 2).
Task<bool> TurnRun::end_turn(Failed& failed, const policy::Decision& decision, bool after_wait) {
    Ending end;
    end_answer(end, failed, decision, after_wait);
    bool ok = true;
    if (end.stream) {
        ok = co_await write_chunk(end.chunk, {}, end.head, end.body, "0\r\n\r\n");
    } else if (!end.head.empty()) {
        ok = co_await write(end.head, end.body);
    }
    co_return ok && keep_alive();
}

void TurnRun::end_answer(Ending& end, Failed& failed, const policy::Decision& decision, bool after_wait) {
    const std::string_view verdict = policy::to_string(decision.verdict);
    // A section 8 refusal is recorded as outcome refused (decision terminal).
    const std::string_view outcome = failed.refusal ? std::string_view("refused") : verdict;
    const std::string_view bound = decision.bound == policy::Bound::none ? "" : policy::to_string(decision.bound);
    if (!after_wait)
        record_attempt(failed.record_status(), &failed.classification, failed.code, verdict, 0);
    // A deadline that ended the turn is a timeout to the client, whatever the
    // last attempt's class (SPEC section 6: 504, decision and bound deadline).
    policy::Classification shown = failed.classification;
    if (decision.verdict == policy::Verdict::deadline && failed.status == 0) shown.cls = policy::ErrorClass::timeout;
    const std::string_view cls = policy::to_string(shown.cls);

    ending_ = true;
    if (head_out_) {
        // The hold limit already sent a 200 stream head: the turn ends inside
        // that stream (SPEC section 7's closing error event), never with a
        // second head. A held error event is passed on as it is.
        record_turn(outcome, 200, &shown, failed.code, bound);
        end.stream = true;
        if (failed.held_stream) {
            end.chunk = *failed.held_stream;
        } else {
            std::string type = failed.refusal || shown.cls == policy::ErrorClass::stream_incomplete
                                   ? failed.code
                                   : std::string(cls);
            if (shown.cls == policy::ErrorClass::stream_incomplete) type = "stream_incomplete";
            const int code = failed.refusal || shown.cls == policy::ErrorClass::stream_incomplete ? 502
                             : failed.status                                                    ? failed.status
                             : shown.cls == policy::ErrorClass::timeout                         ? 504
                                                                                                : 502;
            const ClosingError closing{failed.message.empty() ? std::string_view("the upstream failed")
                                                              : std::string_view(failed.message),
                                       type, code, cls, failed.refusal ? "terminal" : verdict, bound, attempts_,
                                       next_sequence_number()};
            end.text = closing_error_event(plan_.endpoint, plan_.error_shape, closing);
            end.chunk = end.text;
        }
        return;
    }
    if (failed.held_stream) {
        // A 200 stream whose events before answer text end in an error event:
        // passed on as the 200 stream holding that event (SPEC section 7).
        transport::Exchange& ex = *failed.attempt.exchange;
        ResponseHead head(ex.head().result_int(), ex.head().reason());
        head.copy_upstream(ex);
        head.add_modelproxy(attempts_, plan_.request_id);
        head.add_failure(cls, verdict, bound);
        stream_framing(head);
        published_ = true;
        record_turn(outcome, 200, &shown, failed.code, bound);
        end.head = head.finish();
        end.stream = true;
        end.chunk = *failed.held_stream;
        return;
    }
    if (failed.status != 0 && !failed.key_echoed) {
        // The upstream answered: its status, body and end-to-end headers.
        transport::Exchange& ex = *failed.attempt.exchange;
        ResponseHead head(static_cast<unsigned>(failed.status), ex.head().reason());
        head.copy_upstream(ex);
        head.add_modelproxy(attempts_, plan_.request_id);
        head.add_failure(cls, verdict, bound);
        if (!plan_.head_request) head.content_length(failed.body.size());
        if (!keep_alive()) head.add("connection", "close");
        if (ex.reusable()) give_back(failed.attempt);
        published_ = true;
        record_turn(outcome, failed.status, &shown, failed.code, bound);
        end.head = head.finish();
        if (!plan_.head_request) end.body = failed.body;
        return;
    }
    // No upstream answer to pass on: the section 9 envelope (a section 8
    // refusal is a 502 with its code, outcome refused). An upstream answer
    // that echoed a key keeps its status, and none of its headers or body
    // (SPEC section 8).
    if (failed.key_echoed && failed.attempt.exchange && failed.attempt.exchange->reusable()) give_back(failed.attempt);
    const unsigned status = failed.key_echoed                         ? static_cast<unsigned>(failed.status)
                            : shown.cls == policy::ErrorClass::timeout ? 504
                                                                       : 502;
    EnvelopeDetails details;
    details.error_class = cls;
    details.attempts = attempts_;
    details.decision = verdict;
    if (!bound.empty()) details.bound = bound;
    end.text = error_envelope(plan_.error_shape, status, failed.message, modelproxy_error_type, failed.code, details);
    ResponseHead head(status);
    head.add("content-type", "application/json");
    head.add_modelproxy(attempts_, plan_.request_id);
    head.add_failure(cls, verdict, bound);
    head.content_length(end.text.size());
    if (!keep_alive()) head.add("connection", "close");
    record_turn(outcome, static_cast<int>(status), &shown, failed.code, bound);
    end.head = head.finish();
    end.body = end.text;
}

Task<bool> TurnRun::digest_mismatch() {
    policy::Classification c{policy::ErrorClass::client, false, policy::TimeoutSource::none, "digest-mismatch"};
    record_attempt_and_turn(std::nullopt, "terminal", "terminal", 500, &c, "replay_digest_mismatch");
    EnvelopeDetails details;
    details.attempts = attempts_ - 1;
    details.decision = "terminal";
    std::string body = error_envelope(plan_.error_shape, 500,
                                      "the replay's payload differs from the first attempt's; it was not sent",
                                      modelproxy_error_type, "replay_digest_mismatch", details);
    ResponseHead head(500);
    head.add("content-type", "application/json");
    head.add_modelproxy(attempts_ - 1, plan_.request_id);
    head.add("x-should-retry", "false");
    head.content_length(body.size());
    if (!keep_alive()) head.add("connection", "close");
    std::string text = head.finish();
    const bool ok = co_await write(text, body);
    co_return ok && keep_alive();
}

Task<bool> TurnRun::refuse_after_hold() {
    Failed refused = refusal("not-a-stream", "not_a_stream", "the upstream answered 200 without a stream",
                             policy::ErrorClass::identity);
    co_return co_await end_turn(refused, {policy::Verdict::terminal, policy::Bound::none, 0, "refused"}, false);
}

std::array<asio::const_buffer, 2> TurnRun::answer_buffers(const std::string& body) const {
    return {asio::buffer(plan_.head_text), asio::buffer(plan_.head_request ? std::string_view{} : std::string_view(body))};
}

std::optional<bool> TurnRun::answer_success(Attempt& a, const std::string& body, std::size_t& taken) {
    transport::Exchange& ex = *a.exchange;
    ending_ = true;
    // One clock reading for the answer's first byte, the connection's idle
    // start and both records: they are the same moment to a microsecond.
    const auto now = Clock::now();
    first_byte_at_ = now;
    ResponseHead head(ex.head().result_int(), ex.head().reason(), std::move(plan_.head_text));
    head.copy_upstream(ex);
    head.add_modelproxy(attempts_, plan_.request_id);
    if (!plan_.head_request) head.content_length(body.size());
    if (!keep_alive()) head.add("connection", "close");
    const int status = static_cast<int>(ex.head().result_int());
    if (ex.reusable()) give_back(a, now);  // destroys the exchange: `ex` is not used after this
    published_ = true;
    recorded_ = true;
    const AttemptRecord attempt = attempt_record(status, nullptr, "", "ok", 0, now);
    const TurnRecord turn = turn_record("ok", status, nullptr, "", "", now);
    // Counted before the answer goes out, so /metrics agrees with it once
    // the client has it; the two lines written to the log after it has gone
    // out, or begun to: the client waits for its answer, not for the log
    // line (issue 7). A write that fails here changes neither, as before.
    worker_.count_attempt_and_turn(slot_, attempt, ms_between(attempt_started_, now), turn);
    plan_.head_text = head.finish();
    const auto settled = write_at_once(answer_buffers(body), taken);
    worker_.log_attempt_and_turn(attempt, turn);
    if (!settled) return std::nullopt;
    return *settled && keep_alive();
}

}  // namespace modelproxy::proxy
