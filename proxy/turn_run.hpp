// One turn's run, private to the files that implement it: turn.cpp (the
// attempt loop and run_turn), turn_attempt.cpp (one attempt: sent, read, its
// failure), turn_end.cpp (the answers that end a turn and its records),
// turn_write.cpp (the client writes), stream_relay.cpp and stream_events.cpp
// (a stream attempt's relay) and hold_ticker.cpp (the head hold limit).
// run_turn (turn.hpp) is the only way in.
//
// The turn is a state machine: its Phase says what the client has, and only
// the named transitions below move it, forward only. Its decisions are pure
// values from policy/ (replay or not, how long to wait, which bound ends it;
// what the client sees of a failure) and sse/ (the stream rules); the turn
// does the I/O they ask for, and sleeps.
#pragma once

#include "policy/admission.hpp"
#include "policy/breaker.hpp"
#include "policy/candidates.hpp"
#include "policy/classify.hpp"
#include "policy/decision.hpp"
#include "policy/failure_answer.hpp"
#include "policy/turn_replays.hpp"
#include "proxy/turn.hpp"
#include "proxy/turn_clock.hpp"
#include "proxy/turn_watch.hpp"
#include "sse/stream_rules.hpp"
#include "transport/upstream.hpp"

#include <boost/asio/this_coro.hpp>
#include <boost/container/small_vector.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace modelproxy::proxy {

class ResponseHead;  // response_head.hpp

using Clock = std::chrono::steady_clock;

inline std::int64_t ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

policy::Transport transport_of(transport::Fault fault);

class TurnRun {
public:
    // What the client has of the turn's answer (docs/behaviour.md section
    // 7). Only the named transitions below move it, forward only.
    enum class Phase {
        held,       // nothing: a failed attempt is replayed unseen
        head_out,   // the hold limit's head and keep-alives; events held, a replay still unseen
        answering,  // published (answer text, a complete stream, an upstream answer passed on): no replay
        ended,      // the turn's records are written; at most its last write remains
    };

    TurnRun(Worker& worker, Socket& client, ForwardPlan& plan, TurnWatch& watch, const TurnClock& clock)
        : worker_(worker),
          client_(client),
          plan_(plan),
          route_(&plan.runtime->config.routes[plan.route_index]),
          limits_(plan.runtime->config.limits),
          slot_(plan.runtime->metric_slots[plan.route_index]),
          attempt_started_(plan.started),
          digest_(plan.digest),
          watch_(watch),
          clock_(clock),
          replays_(route_->retry, plan.deadline) {}
    // However the turn ends, its last attempt's breaker slot is given back.
    ~TurnRun() {
        if (!settled_) settle(policy::BreakerFacts{.client_left = true});
        leave_candidate();
    }

    Task<bool> run();
    // run() with the hold ticker beside it: stream turns only (run_turn).
    Task<bool> run_with_ticker();
    Task<void> hold_ticker();
    Task<void> hold_head(Timer& timer);  // hold_ticker's head and keep-alives (hold_ticker.cpp)
    bool ended() const { return phase_ == Phase::ended; }
    // The drain limit cut the turn (docs/behaviour.md section 11).
    Task<void> end_at_drain_limit();
    // The client left and the watch cut the turn: its records, cancelled.
    void record_cancelled();

private:
    struct Attempt {
        std::unique_ptr<transport::Connection> connection;
        std::optional<transport::Exchange> exchange;  // declared after `connection`: ends before it
        transport::Fault fault = transport::Fault::none;
        std::string detail;
        metrics::GaugeHold busy;  // the busy-connections gauge, held while `connection` is this attempt's
    };

    // One attempt's failure, as the decision sees it, and what the client
    // gets when the turn ends on it (policy::failure_answer).
    struct Failed {
        policy::FailureKind kind = policy::FailureKind::connection_dropped;
        policy::Classification classification;
        int status = 0;                          // a non-2xx HTTP status to pass on or keep, 0 when none
        std::string_view detail;                 // the message, where the kind's row has none (plan-owned)
        std::optional<std::int64_t> retry_after_ms;
        policy::ProviderError error;             // what the answer or error event declared (fallback_on's code:)
        Attempt attempt;                         // the upstream answer to pass on (status != 0 or a held stream)
        std::string body;
        std::optional<std::string> held_stream;  // a 200 stream's held events ending in an error event
        int stream_status = 0;                   // 200 when the failure was inside a 200 stream

        bool refusal() const { return policy::row(kind).refusal; }
        std::string_view code() const { return policy::row(kind).code; }
        // The status an attempt record shows: the HTTP answer, if there was one.
        std::optional<int> record_status() const {
            if (status) return status;
            if (stream_status) return stream_status;
            return std::nullopt;
        }
    };
    // A failure of a kind with a fixed class (refusals, the proxy's own).
    static Failed failure(policy::FailureKind kind);
    // A failure whose class an observation gave.
    static Failed failure(policy::FailureKind kind, const policy::Classification& c);

    // turn_candidates.cpp: the candidates (docs/behaviour.md section 13).
    // The turn's list, in the order it tries them: the deployment chosen for
    // this turn, the model's other deployments in config order, then each
    // fallback's (none with x-modelproxy-fallback: off).
    struct TurnCandidate {
        const CandidateRef* ref = nullptr;
        int attempts = 0;   // attempts this turn sent to it
    };
    // Builds the list and starts on the first usable candidate (else the one
    // whose breaker half-opens first), admitted by its breaker; the payload
    // is built for it.
    // With fail_fast, when breakers hold back every candidate, it stops
    // short: fail_fast_at_ is set and run() waits for it (wait_half_open).
    void start_candidates();
    // fail_fast's wait for the half-open, as a section 6 wait; false when
    // the turn ended instead (circuit_open, or the client left).
    Task<std::optional<bool>> wait_half_open();
    // Whether the candidate at `index` is usable at `now` for a turn's first
    // attempt on it: its breaker lets it through and, unless
    // `breaker_only`, it is not cooling down after a 429, not held by the
    // provider's rate-limit headers, and has a free admission slot.
    bool usable(std::size_t index, Clock::time_point now, bool breaker_only) const;
    // The first usable candidate after the current one, if any.
    std::optional<std::size_t> next_usable(Clock::time_point now) const;
    // The turn moves to candidate `index` (its in-flight count, its route's
    // timers and metrics, its payload and digest) and its breaker admits
    // the attempt (`forced`: no candidate was usable).
    void move_to(std::size_t index, Clock::time_point now, bool forced);
    // Before a replay on the current candidate: its breaker admits it, or
    // holds it back; nullopt when it goes, else the later usable candidate
    // to fall over to instead (section 13: a held replay is treated like one
    // the retry budget refuses; without a later usable candidate it goes).
    std::optional<std::size_t> admit_replay(Clock::time_point now);
    void leave_candidate();
    // The running attempt's result, told its candidate's breaker once
    // (breaker_count of these facts); a transition is recorded.
    void settle(const policy::BreakerFacts& facts, std::optional<std::int64_t> retry_after_ms = std::nullopt);
    // settle() from what an attempt record says of it.
    // The Retry-After is the last decided failure's (breaker_retry_after_).
    void settle_recorded(std::optional<int> status, const policy::Classification* c, std::string_view decision);
    void record_breaker(CandidateState& state, const policy::BreakerTransition& t);
    const TurnCandidate& current() const { return order_[cur_]; }
    // The client model and route that answer the turn (x-modelproxy-model,
    // x-modelproxy-route; the records' model and route).
    std::string_view answering_model() const;
    std::string_view answering_route() const { return route_->name; }
    // The turn record's fallback_from: the requested model when another answered.
    std::string_view fallback_from() const;
    const policy::FallbackOn& fallback_on() const;
    int attempts_per_candidate() const;

    // turn_load.cpp: the turn under load (docs/behaviour.md section 14).
    // A replay on the current candidate takes a place in its retry budget;
    // false when the budget refuses it (counted).
    bool reserve_replay();
    void release_replay();  // the replay's attempt ended, or the turn left the candidate
    void release_slot();    // the attempt's admission slot goes to the queue's head
    // A failure's backpressure shrinks the candidate's admission limit.
    void note_backpressure(const Failed& failed);
    // An answer's rate-limit headers may hold new attempts to the candidate.
    void note_ratelimit(const transport::ResponseHeader& head);
    // Before a send on a candidate whose route has admission: the rate-limit
    // hold, then a slot, waited for in arrival order within the turn's
    // deadline and queue_timeout_ms. nullopt: send; else the turn ended
    // (answered, or the client left), with run()'s result. `last`: the
    // failed attempt the turn has, passed on if no slot comes in time.
    Task<std::optional<bool>> pass_admission(Failed* last);
    Task<bool> refuse_admission(Failed* last, std::int64_t retry_after_s,
                                policy::FailureKind kind = policy::FailureKind::admission_timeout);
    // The rate-limit hold: nullopt once none is in force; the turn ended
    // (refused, its slot given back, or the client left) when it ends past `until`.
    Task<std::optional<bool>> wait_hold(std::optional<Timer>& timer, Clock::time_point until, Failed* last);
    bool admission_on() const { return route_->admission.enabled; }
    // The gates before a send (section 14's hold and admission, then
    // section 15's quota), for a candidate whose route has any of them.
    bool gates_on() const { return route_->admission.enabled || route_->quota.has_value(); }
    Task<std::optional<bool>> pass_gates(Failed* last);
    // Section 15: the route's quota, reserved for the attempt (in Redis with
    // a fleet that is up, else in this replica's window), waited for like an
    // admission slot; refused with quota_timeout when it cannot come in time.
    Task<std::optional<bool>> pass_quota(Failed* last);
    // The reservation's end: an attempt without a 2xx answer gives its
    // tokens back; a 2xx one is charged its `usage` (the estimate without one).
    void settle_quota(bool answered);
    // The answer's `usage`, as the quota settles it.
    void note_usage(const sse::Usage& usage);

    // The failed attempt's decision (policy/turn_replays.hpp; a fall-over,
    // policy/candidates.hpp), at the turn clock's now, with its draw. A
    // fall-over sets `fall_to`.
    policy::Decision decide(const Failed& failed, std::optional<std::size_t>& fall_to);

    // What try_attempt came to: the turn answered (with whether the client
    // connection stays open), or a failure in `failed` to decide on.
    struct AttemptEnd {
        bool answered = false;
        bool keep_alive = false;
    };

    // When the next upstream read of a stream gives up, and as what fault.
    struct ReadLimit {
        Clock::time_point until;
        transport::Fault on_timeout = transport::Fault::idle_timeout;
        bool capped = false;  // max_stream_ms, not the idle timeout, set `until`
    };

    // The transitions of the phase, forward only.
    void release_head() {  // held -> head_out (hold limit): a 200 stream head
        phase_ = Phase::head_out;
        client_status_ = 200;
    }
    void start_answering() { phase_ = Phase::answering; }  // held | head_out -> answering (publication)
    void mark_ended() { phase_ = Phase::ended; }           // any -> ended (the turn's records)
    // Anything of the answer reached the client: a head, or the upstream's answer.
    bool published() const { return phase_ == Phase::head_out || phase_ == Phase::answering; }
    policy::ClientHas client_has() const {
        return phase_ == Phase::answering ? policy::ClientHas::answer_text
               : phase_ == Phase::head_out ? policy::ClientHas::head
                                           : policy::ClientHas::nothing;
    }

    // turn_attempt.cpp: one attempt, sent and read.
    Task<AttemptEnd> try_attempt(Attempt& a, Failed& failed);
    // Its non-2xx answer read whole, as `failed`: a plain function, its locals off try_attempt's frame.
    void answer_failure(Attempt& a, int status, std::string& body, Failed& failed);
    Failed transport_failure(transport::Fault fault);
    // True when the body is refused; `failed` then says why.
    bool check_body(transport::Exchange& ex, const std::string& body, Failed& failed);
    // docs/behaviour.md section 8: an injected upstream key in the upstream
    // answer's head (its reason phrase, field names and values), which the
    // client would get.
    bool head_carries_key(const transport::Exchange& ex) const;
    // A model_identity_mismatch (docs/behaviour.md sections 8 and 9): its
    // message names `answered` (the refused model, "" when none) and the
    // accepted names, kept in the plan for the attempt record too.
    Failed identity_refusal(sse::IdentityVerdict verdict, std::string_view answered);
    void give_back(Attempt& a, Clock::time_point now = Clock::now());
    // The idle gauge of this route's pool, after the pool changed.
    void note_idle(const transport::Pool& pool) {
        worker_.counters(plan_.runtime->idle_slots[plan_.route_index])
            .idle_connections.store(static_cast<std::int64_t>(pool.idle()), std::memory_order_relaxed);
    }

    // stream_relay.cpp: a stream attempt. The coroutine waits (reads,
    // writes); the plain relay_* functions do the work in between, as the
    // stream rules (sse/stream_rules.hpp) say.
    Task<AttemptEnd> stream_attempt(Attempt& a, Failed& failed);
    StreamRelay& start_relay();
    ReadLimit read_limit() const;
    sse::StreamFacts stream_facts() const;
    // Feeds the last read to the reader, then relay_events().
    RelayStep relay_read(bool done, transport::Fault fault, Failed& failed, metrics::UsageTally& usage);
    // The complete events read so far, up to the first that needs a wait or ends the attempt.
    RelayStep relay_events(bool at_fault, Failed& failed, metrics::UsageTally& usage);
    // One event's lines, inspected: what the stream rules judge.
    sse::EventFacts event_facts(const sse::StreamFacts& stream, const sse::Event& event,
                                sse::IdentityVerdict& verdict, bool& done, policy::ProviderError& declared);
    // After every event of a read: a fault, the stream's end, or read on.
    RelayStep relay_end(transport::Fault fault, bool done, bool capped, Failed& failed);
    RelayStep error_event_ends(Failed& failed);
    // A section 8 refusal inside the stream: before publication the attempt
    // fails with it; after it, the stream ends with its closing error event.
    RelayStep refuse_in_stream(Failed& failed, policy::FailureKind kind,
                               sse::IdentityVerdict verdict = sse::IdentityVerdict::ok);
    RelayStep close_with(const policy::Classification& c, policy::FailureKind kind, std::string_view detail = {});
    // Publication (the first answer text, or a complete stream without
    // any): the head is built and the phase moves to answering here; it
    // goes out in the same write as the held events and the rest of the
    // read (write_out).
    void publish(transport::Exchange& ex);
    // The relay's `out` as one chunk, after the head when publication left
    // one pending, and before `after` (the last chunk), in one write.
    Task<bool> write_out(std::string_view after = {});
    Task<AttemptEnd> close_published();
    // The closing error event, as plan_.stream.close says, after `out`'s
    // events, and the records. A plain function: its locals stay off
    // close_published's frame.
    void end_published();

    // stream_resume.cpp: continuing a cut stream (docs/behaviour.md section
    // 16). The published answer is read at each event the client gets
    // (track_published); a break it may continue is decided and recorded
    // (resume_break); a resume attempt's events go through the seam
    // (resume_event); an abandoned or failed resume ends as the cut would.
    void start_resume(StreamRelay& relay);
    void track_published(const sse::Event& event);
    RelayStep resume_event(const sse::Event& event);
    bool resume_break(Failed& failed);
    RelayStep abandon_resume(metrics::ResumeResult result);
    Task<bool> resume_failed(Failed& failed);
    void admit_resume(Clock::time_point now);
    void count_resume(metrics::ResumeResult result);
    bool catching_up() const { const auto* s = plan_.stream.resume.get(); return s && s->seam && !s->reached; }

    // turn_write.cpp: the client writes.
    // Up to seven pieces in one write: each client write is one syscall, and
    // a stream's head, events and last chunk go out together when they can.
    Task<bool> write(std::string_view a, std::string_view b = {}, std::string_view c = {}, std::string_view d = {},
                     std::string_view e = {}, std::string_view f = {}, std::string_view g = {});
    // write in two steps, for a caller that needs no coroutine when the
    // client takes every byte at once (the whole-body answer). write_at_once
    // starts the write when none is in flight, holding the gate, and sends
    // what the socket takes: the write's result when that settled it. Else
    // nullopt, and finish_write(buffers, taken) must be awaited: it writes the
    // rest after `taken` bytes, or, when `taken` is not_started (a write was
    // in flight, or the client is gone), the whole write as write() does.
    static constexpr std::size_t not_started = static_cast<std::size_t>(-1);
    template <std::size_t N>
    std::optional<bool> write_at_once(const std::array<asio::const_buffer, N>& buffers, std::size_t& taken);
    template <std::size_t N>
    Task<bool> finish_write(std::array<asio::const_buffer, N> buffers, std::size_t taken);
    // A client write ended with `ec`: the gate opens; an error is the client gone.
    bool wrote(const boost::system::error_code& ec);
    // `data` then `data_more` as one chunk (nothing when both are empty),
    // after `head` and `head_body` and before `after` (the last chunk), in
    // one write. To an HTTP/1.0 client, the bytes without chunk framing and
    // without `after` (stream_framing).
    Task<bool> write_chunk(std::string_view data, std::string_view data_more = {}, std::string_view head = {},
                           std::string_view head_body = {}, std::string_view after = {});

    // turn_end.cpp: what ends the turn, and its records.
    Task<bool> end_turn(Failed& failed, const policy::Decision& decision, bool after_wait);
    // What end_turn writes, once the turn's records are written: the head and
    // body in one write (no head when the client has one), then for a stream
    // its last events and the last chunk.
    struct Ending {
        std::string head;
        std::string text;        // the proxy's own envelope or closing error event
        std::string_view body;   // after the head: the upstream's body, or `text`
        std::string_view chunk;  // a stream's last events: the held ones, or `text`
        bool stream = false;
    };
    // The answer (policy::failure_answer) for the turn ending on `failed`,
    // its records (the last attempt's unless `after_wait` recorded it), and
    // its bytes in `end`.
    void end_answer(Ending& end, Failed& failed, const policy::Decision& decision, bool after_wait);
    // `answer`'s bytes into `end`; `failed` holds the upstream answer the
    // upstream_answer and held_stream forms pass on. Before the records: a
    // closing event's sequence number is read off the phase.
    void answer_bytes(Ending& end, const policy::FailureAnswer& answer, Failed& failed, int attempts);
    void own_failure(Ending& end, policy::FailureKind kind, int attempts);
    // The closing error event of `answer` (docs/behaviour.md section 7).
    std::string closing_event(const policy::FailureAnswer& answer, int attempts) const;
    // end_answer's bytes, written: the head and body, or a stream's last
    // events and its last chunk. Whether the connection stays open.
    Task<bool> write_ending(const Ending& end);
    // A whole 200 body that passed the boundary checks: its head is built,
    // the records written and the answer sent as far as the socket takes it
    // at once (write_at_once). The answer's result when that settled it, else
    // nullopt: try_attempt then awaits finish_write(answer_buffers(), taken).
    // Not a coroutine (most answers go out whole at once).
    std::optional<bool> answer_success(Attempt& a, const std::string& body, std::size_t& taken);
    std::array<asio::const_buffer, 2> answer_buffers(const std::string& body) const;
    Task<bool> digest_mismatch();
    // What the last attempt's record and the turn's say when the turn ends.
    struct EndRecord {
        std::optional<int> attempt_status;
        const policy::Classification* classification = nullptr;  // the attempt's; none on success
        std::string_view code;
        std::string_view decision;     // the attempt's
        std::string_view outcome;      // the turn's
        std::optional<int> status;     // the turn's: what the client got
        std::string_view error_class;  // the turn's ("" on success)
        std::string_view bound;
        bool with_attempt = true;      // false: the attempt was recorded before a wait
    };
    // The records of the turn's end, the attempt's and the turn's in one
    // write; the phase moves to ended.
    void record_end(const EndRecord& r);
    void record_attempt(std::optional<int> status, const policy::Classification* c, std::string_view code,
                        std::string_view decision, std::int64_t delay_ms);
    // The records as they stand at `now`.
    AttemptRecord attempt_record(std::optional<int> status, const policy::Classification* c, std::string_view code,
                                 std::string_view decision, std::int64_t delay_ms, Clock::time_point now) const;
    TurnRecord turn_record(std::string_view outcome, std::optional<int> status, std::string_view error_class,
                           std::string_view code, std::string_view bound, bool published,
                           Clock::time_point now) const;

    bool keep_alive() const { return plan_.keep_alive && !worker_.shared().draining.load(); }
    // A stream head's framing: chunked, or to an HTTP/1.0 client none, the
    // stream ending with the connection (docs/behaviour.md section 4);
    // `connection: close` when the connection ends after the answer.
    void stream_framing(ResponseHead& head) const;
    // The closing error event's sequence_number on /responses
    // (docs/behaviour.md section 7): one past the last forwarded event's; 0
    // when none was forwarded.
    std::uint64_t next_sequence_number() const {
        const auto& last = plan_.stream.last_sequence;
        return phase_ == Phase::answering && last ? *last + 1 : 0;
    }
    // True once the client watcher has won the race: the turn then stops at
    // once, writes nothing more, and run_turn records it as cancelled.
    // Asks the calling coroutine's cancellation state: the hold ticker and
    // write() use it, since the ticker is also cancelled by its race with
    // run() (run_with_ticker).
    static Task<bool> cut() {
        auto state = co_await asio::this_coro::cancellation_state;
        co_return state.cancelled() != asio::cancellation_type::none;
    }
    // The same answer inside run() and what it awaits, without a coroutine
    // frame per check (two per request): only the watch cancels run(), and
    // it cancels synchronously right after setting its reason.
    bool watch_cut() const { return watch_.reason != TurnWatch::Reason::none; }

    Worker& worker_;
    Socket& client_;
    ForwardPlan& plan_;
    const config::Route* route_;       // the current candidate's route
    const config::Limits& limits_;
    std::uint16_t slot_;               // metrics slot of route_
    Clock::time_point attempt_started_;
    std::string& digest_;       // plan_.digest (scratch)
    TurnWatch& watch_;          // run_turn's, which outlives the turn
    const TurnClock& clock_;    // the server's: now() and the jitter's draw()
    policy::TurnReplays replays_;  // the attempt counter, the summed wait, the deadline
    Phase phase_ = Phase::held;
    // Facts of the client socket, not of the turn's phase.
    bool writing_ = false;      // a client write is in flight
    bool client_gone_ = false;  // a client write failed: nothing more is written
    int attempt_status_ = 0;    // the running attempt's upstream status, once its head is read
    int client_status_ = 0;     // the status of the head the client got, once one went out
    std::string_view head_pending_;  // a published head not yet written (plan_.head_text)
    // Made on the first write that has to wait (constructing an Asio timer looks its service up under a
    // mutex), out of line: most turns never wait here, and hold a pointer rather than a timer.
    std::unique_ptr<Timer> write_gate_;
    std::optional<Clock::time_point> first_byte_at_;
    // The candidates (turn_candidates.cpp).
    boost::container::small_vector<TurnCandidate, 4> order_;
    std::size_t cur_ = 0;
    bool on_candidate_ = false;          // cur_'s in-flight count holds this turn
    bool settled_ = true;                // the running attempt's breaker result is given
    policy::Admit admitted_ = policy::Admit::pass;  // how its breaker let the running attempt go
    bool digest_fresh_ = true;           // the next send is the first to this candidate: its digest is made
    CandidateRef wildcard_;              // the "*" route's one candidate
    std::shared_ptr<CandidateState> wildcard_state_;
    const CandidateRef* head_named_ = nullptr;  // the candidate a hold-limit head names
    std::optional<std::int64_t> breaker_retry_after_;  // the last decided failure's Retry-After
    std::optional<Clock::time_point> first_token_until_;  // the running stream's first-token timer
    // fail_fast (section 13): every candidate is held back by its breaker;
    // the turn waits until this half-open, or is refused with circuit_open.
    std::optional<Clock::time_point> fail_fast_at_;
    std::int64_t retry_after_s_ = -1;  // the proxy's own envelope carries Retry-After when >= 0
    // Section 14 (turn_load.cpp).
    bool replay_held_ = false;  // a place in the current candidate's retry budget
    bool slot_held_ = false;    // an admission slot of the current candidate
    // Section 15: the running attempt's quota reservation.
    struct QuotaHeld {
        bool held = false;
        bool redis = false;       // in the fleet's Redis, else in this replica's window
        std::int64_t second = 0;  // its bucket
        std::int64_t tokens = 0;  // the tokens charged
        const config::Route* route = nullptr;
        // A Redis reservation is mirrored in this replica's own window, so
        // that the window knows this replica's last minute when Redis goes.
        bool mirrored = false;
        std::int64_t local_second = 0;
        std::int64_t local_tokens = 0;
    };
    QuotaHeld quota_;
    std::optional<std::int64_t> usage_tokens_;  // the running attempt's answer's usage
    bool fleet_probe_ = false;  // the running attempt is the fleet's half-open probe (section 15)
    int settle_status_ = 0;     // the HTTP status settle_recorded passes on to settle
    // Section 16 (stream_resume.cpp).
    int resumes_ = 0;                        // resumes continued past their seam (the turn record's resumed)
    int resume_tries_ = 0;                   // resumes decided (max_resumes)
    std::optional<std::size_t> resume_to_;   // the next attempt continues the cut stream on this candidate
    bool resume_attempt_ = false;            // the running attempt continues a cut stream
    bool resume_open_ = false;               // a resume decided and not yet continued, diverged or broken
    std::optional<std::int64_t> resume_offset_;  // the attempt records' resume_offset
    policy::Classification resume_cut_;      // the break the resume continues: what the client gets if it cannot
    std::uint16_t resume_slot_ = 0;          // the metrics slot of the route whose resume block decided
};

}  // namespace modelproxy::proxy
