#include "proxy/turn.hpp"

#include "policy/classify.hpp"
#include "policy/decision.hpp"
#include "policy/retry_after.hpp"
#include "proxy/digest.hpp"
#include "proxy/local_answers.hpp"
#include "proxy/response_head.hpp"
#include "sse/end_rule.hpp"
#include "sse/inspect.hpp"
#include "sse/reader.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <sys/socket.h>

#include <cerrno>
#include <random>

namespace modelproxy::proxy {

namespace {

using namespace boost::asio::experimental::awaitable_operators;
using transport::Fault;
using Clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::int64_t ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// What ends a turn from outside: the client hanging up (EOF or reset) or the
// drain limit. Watched with two plain callbacks, not coroutines raced with
// `||` (which spawns one coroutine per branch and posts several handlers per
// turn). Shared with those callbacks, which may run after the turn is gone.
struct TurnWatch {
    enum class Reason { none, client_left, drain_limit };
    Reason reason = Reason::none;
    bool done = false;                        // the turn has ended: callbacks do nothing
    asio::cancellation_signal turn;           // cuts the turn (its awaits complete at once)
    asio::cancellation_signal client_wait;    // withdraws the client watch
    asio::cancellation_signal drain_wait;     // withdraws the drain-limit wait

    void cut(Reason why) {
        if (done || reason != Reason::none) return;
        reason = why;
        turn.emit(asio::cancellation_type::terminal);
    }
    void finish() {
        done = true;
        client_wait.emit(asio::cancellation_type::terminal);
        drain_wait.emit(asio::cancellation_type::terminal);
    }
};

// The client is gone when its socket reads EOF or an error. Pipelined bytes
// mean it is still there: then nothing more is watched for this turn.
void watch_client(tcp::socket& client, const std::shared_ptr<TurnWatch>& watch) {
    client.async_wait(tcp::socket::wait_read,
                      asio::bind_cancellation_slot(watch->client_wait.slot(),
                                                   [watch, fd = client.native_handle()](boost::system::error_code ec) {
        if (ec || watch->done) return;
        char byte;
        ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            watch->cut(TurnWatch::Reason::client_left);
    }));
}

void watch_drain_limit(asio::steady_timer& drain_limit, const std::shared_ptr<TurnWatch>& watch) {
    // The worker's drain_limit timer never expires; end_turns() cancels it,
    // completing every wait with operation_aborted. A turn that ends first
    // withdraws its wait through drain_wait (also operation_aborted, but then
    // `done` is set).
    drain_limit.async_wait(asio::bind_cancellation_slot(watch->drain_wait.slot(),
                                                        [watch](boost::system::error_code) {
        if (!watch->done) watch->cut(TurnWatch::Reason::drain_limit);
    }));
}

policy::Transport transport_of(Fault fault) {
    switch (fault) {
        case Fault::dns_failed: return policy::Transport::dns_failed;
        case Fault::tls_verify_failed: return policy::Transport::tls_verify_failed;
        case Fault::connect_refused: return policy::Transport::connect_refused;
        case Fault::connect_timeout: return policy::Transport::connect_timeout;
        case Fault::dropped_before_head:
        case Fault::stale_connection:
        case Fault::bad_response: return policy::Transport::dropped_before_head;
        case Fault::dropped_in_body: return policy::Transport::dropped_in_body;
        case Fault::deadline: return policy::Transport::deadline_fired;
        case Fault::idle_timeout: return policy::Transport::stream_idle_fired;
        default: return policy::Transport::connect_reset;
    }
}

// The closing error event of SPEC section 7, in the endpoint's shape.
std::string closing_error_event(policy::Endpoint endpoint, std::string_view message, std::string_view type,
                                int code, std::string_view error_class, std::string_view decision,
                                std::string_view bound, int attempts) {
    boost::json::object error;
    if (endpoint == policy::Endpoint::messages) {
        error["type"] = "api_error";
        error["message"] = message;
        boost::json::object event;
        event["type"] = "error";
        event["error"] = std::move(error);
        return "event: error\ndata: " + boost::json::serialize(event) + "\n\n";
    }
    error["type"] = type;
    error["code"] = code;
    error["message"] = message;
    error["class"] = error_class;
    error["decision"] = decision;
    if (bound.empty()) {
        error["bound"] = nullptr;
    } else {
        error["bound"] = bound;
    }
    error["attempts"] = attempts;
    boost::json::object event;
    event["error"] = std::move(error);
    return "data: " + boost::json::serialize(event) + "\n\n";
}

class TurnRun {
public:
    TurnRun(Worker& worker, tcp::socket& client, ForwardPlan& plan)
        : worker_(worker),
          client_(client),
          plan_(plan),
          route_(plan.runtime->config.routes[plan.route_index]),
          limits_(plan.runtime->config.limits),
          slot_(plan.runtime->metric_slots[plan.route_index]),
          attempt_started_(plan.started),
          digest_(plan.digest) {}

    asio::awaitable<bool> run();
    // run(), and for a stream turn the hold ticker beside it.
    asio::awaitable<bool> run_with_ticker();
    asio::awaitable<void> hold_ticker();
    bool recorded() const { return recorded_; }  // the turn record is written
    asio::awaitable<void> end_at_drain_limit();
    int attempts() const { return attempts_; }
    bool published() const { return published_; }
    Clock::time_point attempt_started() const { return attempt_started_; }

private:
    struct Attempt {
        std::unique_ptr<transport::Connection> connection;
        std::optional<transport::Exchange> exchange;  // declared after `connection`: ends before it
        Fault fault = Fault::none;
        std::string detail;
        metrics::GaugeHold busy;  // the busy-connections gauge, held while `connection` is this attempt's
    };

    asio::awaitable<Attempt> open_and_send();
    struct Failed;
    // What try_attempt came to: the turn answered (with whether the client
    // connection stays open), or a failure in `failed` to decide on.
    struct AttemptEnd {
        bool answered = false;
        bool keep_alive = false;
    };
    asio::awaitable<AttemptEnd> try_attempt(Attempt& a, Failed& failed);
    struct StreamEnd;
    asio::awaitable<StreamEnd> stream_attempt(Attempt& attempt, Failed& failed);
    asio::awaitable<bool> publish_stream_head(transport::Exchange& ex);
    asio::awaitable<bool> write(std::string_view a, std::string_view b = {}, std::string_view c = {});
    asio::awaitable<bool> write_chunk(std::string_view data);
    Failed transport_failure(Fault fault);
    // True when the body is refused; `failed` then says why.
    bool check_body(transport::Exchange& ex, const std::string& body, Failed& failed);
    static Failed refusal(std::string_view rule, std::string_view code, std::string_view message,
                          policy::ErrorClass cls);
    asio::awaitable<bool> end_turn(Failed& failed, const policy::Decision& decision, bool after_wait);
    asio::awaitable<bool> answer_success(Attempt& a, const std::string& body);
    asio::awaitable<bool> digest_mismatch();
    void give_back(Attempt& a);
    // The idle gauge of this route's pool, after the pool changed.
    void note_idle(const transport::Pool& pool) {
        worker_.counters(plan_.runtime->idle_slots[plan_.route_index])
            .idle_connections.store(static_cast<std::int64_t>(pool.idle()), std::memory_order_relaxed);
    }
    static double draw();
    void record_attempt(std::optional<int> status, const policy::Classification* c, std::string_view code,
                        std::string_view decision, std::int64_t delay_ms);
    void record_turn(std::string_view outcome, std::optional<int> status, const policy::Classification* c,
                     std::string_view code, std::string_view bound);
    // The last attempt and the turn, when the attempt's end is the turn's:
    // both records in one write.
    void record_attempt_and_turn(std::optional<int> attempt_status, std::string_view decision,
                                 std::string_view outcome, std::optional<int> status,
                                 const policy::Classification* c, std::string_view code);
    AttemptRecord attempt_record(std::optional<int> status, const policy::Classification* c, std::string_view code,
                                 std::string_view decision, std::int64_t delay_ms) const;
    TurnRecord turn_record(std::string_view outcome, std::optional<int> status, const policy::Classification* c,
                           std::string_view code, std::string_view bound) const;
    bool keep_alive() const { return plan_.keep_alive && !worker_.shared().draining.load(); }
    // True once the client watcher has won the race: the turn then stops at
    // once, writes nothing more, and run_turn records it as cancelled.
    static asio::awaitable<bool> cut() {
        auto state = co_await asio::this_coro::cancellation_state;
        co_return state.cancelled() != asio::cancellation_type::none;
    }

    Worker& worker_;
    tcp::socket& client_;
    ForwardPlan& plan_;
    const config::Route& route_;
    const config::Limits& limits_;
    const std::uint16_t slot_;         // metrics slot of the route
    Clock::time_point attempt_started_;
    std::string& digest_;       // plan_.digest (scratch)
    int attempts_ = 0;
    bool published_ = false;
    bool client_gone_ = false;
    bool recorded_ = false;
    bool writing_ = false;      // a client write is in flight
    bool head_out_ = false;     // the client has the response head (hold limit or publication)
    bool answering_ = false;    // answer text is out: held events released, no replay possible
    bool ending_ = false;       // the turn is writing its final answer
    asio::steady_timer write_gate_{client_.get_executor()};
    std::optional<Clock::time_point> first_byte_at_;
};

// The turn and the hold ticker both write to the client: one write at a
// time, whole, so their bytes never interleave.
asio::awaitable<bool> TurnRun::write(std::string_view a, std::string_view b, std::string_view c) {
    while (writing_) {
        write_gate_.expires_at(asio::steady_timer::time_point::max());
        co_await write_gate_.async_wait(use_tuple);
        if (co_await cut()) co_return false;
    }
    if (client_gone_) co_return false;
    writing_ = true;
    std::array<asio::const_buffer, 3> buffers{asio::buffer(a), asio::buffer(b), asio::buffer(c)};
    auto [ec, n] = co_await asio::async_write(client_, buffers, use_tuple);
    writing_ = false;
    write_gate_.cancel();
    if (ec) client_gone_ = true;
    co_return !ec;
}

// SPEC section 7's head hold limit: a stream turn that has published nothing
// after stream_head_hold_ms (waits and throttles included) publishes its head
// and then a `: keep-alive` comment every 10 s, so load balancers and client
// header timeouts do not cut it. Events stay held: a replay is still
// invisible until answer text. Never completes by itself (it is one side of
// run_turn's race); it goes quiet once answer text is out or the turn ends.
asio::awaitable<void> TurnRun::hold_ticker() {
    co_await asio::this_coro::throw_if_cancelled(false);
    asio::steady_timer timer(client_.get_executor());
    if (plan_.wants_stream) {
        timer.expires_at(plan_.started + std::chrono::milliseconds(route_.stream_head_hold_ms));
        auto [ec] = co_await timer.async_wait(use_tuple);
        if (!ec && !head_out_ && !ending_) {
            head_out_ = true;
            ResponseHead head(200);
            head.add("content-type", "text/event-stream");
            head.add("cache-control", "no-cache");
            head.add_modelproxy(attempts_, plan_.request_id);
            head.chunked();
            if (!keep_alive()) head.add("connection", "close");
            std::string text = head.finish();
            published_ = true;
            bool ok = co_await write(text);
            while (ok && !answering_ && !ending_) {
                ok = co_await write_chunk(": keep-alive\n\n");
                if (co_await cut()) co_return;
                timer.expires_after(std::chrono::seconds(10));
                auto [tec] = co_await timer.async_wait(use_tuple);
                if (tec) break;
            }
        }
    }
    // A wait started after the race's cancellation is never cancelled: check
    // first, or the turn would never end.
    if (co_await cut()) co_return;
    timer.expires_at(asio::steady_timer::time_point::max());
    co_await timer.async_wait(use_tuple);
}

asio::awaitable<bool> TurnRun::run_with_ticker() {
    co_await asio::this_coro::throw_if_cancelled(false);
    if (!plan_.wants_stream) co_return co_await run();
    auto result = co_await (run() || hold_ticker());
    co_return result.index() == 0 && std::get<0>(result);  // the ticker never ends by itself
}

asio::awaitable<bool> TurnRun::write_chunk(std::string_view data) {
    if (data.empty()) co_return true;
    char size[24];
    int len = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    co_return co_await write(std::string_view(size, len), data, "\r\n");
}

asio::awaitable<TurnRun::Attempt> TurnRun::open_and_send() {
    Attempt a;
    transport::Target target{&route_.upstream, plan_.runtime->tls[plan_.route_index].context.get(),
                             std::chrono::milliseconds(route_.connect_timeout_ms)};
    auto& pool = worker_.pool(plan_.runtime->pool_keys[plan_.route_index]);
    a.connection = pool.take();
    note_idle(pool);
    auto& busy = worker_.counters(slot_).busy_connections;
    if (a.connection) a.busy.hold(busy);
    // A reused connection that fails before any response byte is re-sent at
    // once on a new one; that does not count as an attempt (SPEC section 4).
    for (int round = 0; round < 2; ++round) {
        if (!a.connection) {
            auto connected = co_await transport::connect(target, plan_.deadline);
            if (connected.fault != Fault::none) {
                a.fault = connected.fault;
                a.detail = std::move(connected.detail);
                co_return a;
            }
            a.connection = std::move(connected.connection);
            a.busy.hold(busy);
        }
        a.exchange.emplace(*a.connection);
        if (plan_.head_request) a.exchange->expect_no_body();
        a.fault = co_await a.exchange->send(plan_.upstream_head, plan_.body, plan_.deadline);
        if (a.fault == Fault::none) a.fault = co_await a.exchange->read_head(plan_.deadline);
        if (a.fault != Fault::stale_connection) co_return a;
        a.exchange.reset();
        a.connection.reset();
        a.busy.release();
    }
    a.fault = Fault::dropped_before_head;
    co_return a;
}

AttemptRecord TurnRun::attempt_record(std::optional<int> status, const policy::Classification* c,
                                      std::string_view code, std::string_view decision,
                                      std::int64_t delay_ms) const {
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
    r.remaining_ms = std::max<std::int64_t>(0, ms_between(Clock::now(), plan_.deadline));
    r.digest = digest_;
    return r;
}

TurnRecord TurnRun::turn_record(std::string_view outcome, std::optional<int> status,
                                const policy::Classification* c, std::string_view code,
                                std::string_view bound) const {
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
    r.duration_ms = ms_between(plan_.started, Clock::now());
    if (first_byte_at_) r.ttft_ms = ms_between(plan_.started, *first_byte_at_);
    return r;
}

void TurnRun::record_attempt(std::optional<int> status, const policy::Classification* c, std::string_view code,
                             std::string_view decision, std::int64_t delay_ms) {
    worker_.write_attempt(slot_, attempt_record(status, c, code, decision, delay_ms),
                          ms_between(attempt_started_, Clock::now()));
}

void TurnRun::record_turn(std::string_view outcome, std::optional<int> status, const policy::Classification* c,
                          std::string_view code, std::string_view bound) {
    recorded_ = true;
    worker_.write_turn(slot_, turn_record(outcome, status, c, code, bound));
}

void TurnRun::record_attempt_and_turn(std::optional<int> attempt_status, std::string_view decision,
                                      std::string_view outcome, std::optional<int> status,
                                      const policy::Classification* c, std::string_view code) {
    recorded_ = true;
    worker_.write_attempt_and_turn(slot_, attempt_record(attempt_status, c, code, decision, 0),
                                   ms_between(attempt_started_, Clock::now()),
                                   turn_record(outcome, status, c, code, ""));
}

// One attempt's failure, as the decision sees it, and what the client gets
// when the turn ends on it.
struct TurnRun::Failed {
    policy::Classification classification;
    int status = 0;                          // HTTP status, 0 for transport faults
    std::string code;                        // envelope / record code ("" for upstream answers)
    std::string message;                     // envelope message (transport faults only)
    std::optional<std::int64_t> retry_after_ms;
    Attempt attempt;                         // the upstream answer to pass on (status != 0 or a held stream)
    std::string body;
    std::optional<std::string> held_stream;  // a 200 stream's held events ending in an error event
    bool refusal = false;                    // a section 8 refusal: 502 with its code, never retried
    int stream_status = 0;                   // 200 when the failure was inside a 200 stream

    // The status an attempt record shows: the HTTP answer, if there was one.
    std::optional<int> record_status() const {
        if (status) return status;
        if (stream_status) return stream_status;
        return std::nullopt;
    }
};

// What one streamed attempt came to: the turn is over (answered), or it
// failed before any answer text was published and the decision loop decides.
struct TurnRun::StreamEnd {
    bool finished = false;
    bool keep_alive = false;
};

// The drain limit ended the turn (SPEC section 11). A stream whose head is
// out ends with the closing error event; a turn that published nothing gets
// a 503 envelope. Either way the connection closes.
asio::awaitable<void> TurnRun::end_at_drain_limit() {
    policy::Classification c{policy::ErrorClass::cancelled, false, policy::TimeoutSource::none, "drain-limit"};
    record_attempt_and_turn(std::nullopt, "cancelled", "cancelled", head_out_ ? 200 : 503, &c, "drain_limit");
    if (client_gone_ || writing_) co_return;
    if (head_out_) {
        std::string event = closing_error_event(plan_.endpoint, "the proxy is shutting down and its drain limit passed",
                                                "stream_incomplete", 502, "cancelled", "terminal", "", attempts_);
        if (co_await write_chunk(event)) co_await write("0\r\n\r\n");
        co_return;
    }
    EnvelopeDetails details;
    details.error_class = "cancelled";
    details.attempts = attempts_;
    details.decision = "terminal";
    std::string body = error_envelope("the proxy is shutting down and its drain limit passed", modelproxy_error_type,
                                      "drain_limit", details);
    ResponseHead head(503);
    head.add("content-type", "application/json");
    head.add_modelproxy(attempts_, plan_.request_id);
    head.add("x-should-retry", "false");
    head.add("connection", "close");
    head.content_length(body.size());
    std::string text = head.finish();
    co_await write(text, body);
}

asio::awaitable<bool> TurnRun::publish_stream_head(transport::Exchange& ex) {
    if (head_out_) co_return true;  // the hold limit already sent one
    head_out_ = true;
    ResponseHead head(ex.head().result_int(), ex.head().reason(), std::move(plan_.head_text));
    head.copy_upstream(ex.head());
    head.add_modelproxy(attempts_, plan_.request_id);
    head.chunked();
    if (!keep_alive()) head.add("connection", "close");
    plan_.head_text = head.finish();
    published_ = true;
    co_return co_await write(plan_.head_text);
}

// SPEC section 7. The head and the events before the first answer text are
// held; a retryable failure before then is replayed invisibly (the held bytes
// are dropped). After the first answer text every event is forwarded as it
// completes, and a break ends the client stream with one closing error event,
// never a [DONE]. Nothing after [DONE] is forwarded.
asio::awaitable<TurnRun::StreamEnd> TurnRun::stream_attempt(Attempt& a, Failed& failed) {
    transport::Exchange& ex = *a.exchange;
    const bool rules = route_.dialect != config::Dialect::generic && policy::has_stream_rules(plan_.endpoint);
    sse::Reader& reader = plan_.stream_reader;  // reused: see ForwardPlan
    reader.reset();
    sse::Inspector& inspector = worker_.inspector();
    // The plan's scratch strings (reused from turn to turn), emptied here
    // for this attempt.
    std::string& held = plan_.stream_held;  // raw bytes of the events held so far
    // After publication, the checked events of one upstream read, sent as one
    // chunk in one write: one syscall per read, not per event, and no event
    // waits for anything but the read it came in.
    std::string& out = plan_.stream_out;
    std::string& piece = plan_.stream_piece;
    held.clear();
    out.clear();
    piece.clear();
    bool& answering = answering_;
    bool saw_done = false, saw_end = false, saw_finish = false, saw_event = false;
    std::optional<policy::ProviderError> error_event;  // a structured error event, before answer text
    const auto stream_started = Clock::now();
    sse::StreamIdentity* const identity = rules && plan_.identity ? &plan_.stream_identity() : nullptr;
    std::optional<sse::StreamScan> secrets;
    if (plan_.runtime->secrets) secrets.emplace(plan_.runtime->secrets->stream_scan());
    // The stream's `usage` (section 10's token counts), counted when this
    // attempt's relay ends, however it ends.
    metrics::UsageTally usage(worker_.counters(slot_));

    // Ends the client stream after publication: the closing error event
    // (or nothing more when the upstream's own error event was forwarded).
    // `outcome` is refused for a section 8 refusal (README: refusals are
    // recorded refused, before or after publication), else terminal.
    auto close_published = [&](const policy::Classification& c, std::string_view code, bool forwarded_error,
                               std::string_view outcome = "terminal") -> asio::awaitable<StreamEnd> {
        if (!forwarded_error) {
            out += closing_error_event(plan_.endpoint, "the upstream stream broke before its end", code, 502,
                                       policy::to_string(c.cls), "terminal", "", attempts_);
        }
        if (!co_await write_chunk(out)) co_return StreamEnd{true, false};  // the checked events, then the end
        out.clear();
        record_attempt_and_turn(200, "terminal", outcome, 200, &c, code);
        const bool ok = co_await write("0\r\n\r\n");
        co_return StreamEnd{true, ok && keep_alive()};
    };

    // A section 8 refusal inside the stream, already in `failed`: before
    // publication a 502 with its code; after it, the refused event is not
    // forwarded and the stream ends with the closing error event.
    auto refuse_in_stream = [&]() -> asio::awaitable<StreamEnd> {
        if (answering) co_return co_await close_published(failed.classification, failed.code, false, "refused");
        co_return StreamEnd{};
    };

    for (;;) {
        piece.clear();
        bool done = false;
        // Before publication the turn deadline bounds the wait too; after it,
        // only stream_idle_timeout_ms and max_stream_ms end a stream.
        auto until = Clock::now() + std::chrono::milliseconds(route_.stream_idle_timeout_ms);
        Fault on_timeout = Fault::idle_timeout;
        if (!answering && plan_.deadline < until) {
            until = plan_.deadline;
            on_timeout = Fault::deadline;
        }
        bool capped = false;
        if (answering && route_.max_stream_ms > 0) {
            auto cap = stream_started + std::chrono::milliseconds(route_.max_stream_ms);
            if (cap < until) {
                until = cap;
                capped = true;
            }
        }
        Fault fault = co_await ex.read_some(piece, done, until, on_timeout);
        if (co_await cut()) co_return StreamEnd{true, false};
        if (!piece.empty()) reader.feed(piece);
        if (done || fault != Fault::none) reader.finish();

        while (const sse::Event* event = reader.next()) {
            if (!sse::event_counts(*event, fault != Fault::none)) continue;
            // Section 8's credential scan: the raw bytes here, then each data
            // line's answer text from the one Inspector walk the other checks use.
            const auto credential_refusal = [&] {
                failed = refusal("credential", "credential_in_response",
                                 "the upstream stream carried credential material", policy::ErrorClass::credential);
            };
            const auto leaked = [&](const sse::DataInfo& info) {
                return secrets && secrets->feed_answer_text(info.answer_fragments) ==
                                      sse::CredentialVerdict::credential_in_response;
            };
            if (secrets && secrets->feed_bytes(event->raw) == sse::CredentialVerdict::credential_in_response) {
                credential_refusal();
                co_return co_await refuse_in_stream();
            }
            if (saw_done) {
                // Read for section 8 (credentials, identity), never forwarded.
                bool leak = false, foreign = false;
                for (std::size_t i = 0; (secrets || identity) && i < event->data.size(); ++i) {
                    const sse::DataInfo& info = inspector.inspect(*event, i, plan_.endpoint);
                    leak = leak || leaked(info);
                    foreign = foreign || (identity && sse::refused(identity->on_line(info)));
                }
                if (leak) {
                    credential_refusal();
                    co_return co_await refuse_in_stream();
                }
                if (foreign) {
                    failed = refusal("model-identity", "model_identity_mismatch",
                                     "the upstream stream carried a model this route does not accept after [DONE]",
                                     policy::ErrorClass::identity);
                    co_return co_await refuse_in_stream();
                }
                continue;
            }
            bool answer = false, event_error = false, done_here = false;
            policy::ProviderError declared;
            for (std::size_t i = 0; i < event->data.size(); ++i) {
                const sse::DataInfo& info = inspector.inspect(*event, i, plan_.endpoint);
                if (leaked(info)) {
                    credential_refusal();
                    co_return co_await refuse_in_stream();
                }
                usage.see(info.usage);
                if (identity && sse::refused(identity->on_line(info))) {
                    failed = refusal("model-identity", "model_identity_mismatch",
                                     "the upstream stream carried a model this route does not accept",
                                     policy::ErrorClass::identity);
                    co_return co_await refuse_in_stream();
                }
                if (info.kind == sse::DataKind::done) {
                    done_here = true;
                    continue;
                }
                if (info.kind == sse::DataKind::unparseable && rules) {
                    // SPEC section 7: every data line must parse on its own.
                    policy::Classification c{policy::ErrorClass::identity, false, policy::TimeoutSource::none,
                                             "unparseable-event"};
                    if (answering) co_return co_await close_published(c, "unparseable_event", false, "refused");
                    failed.classification = c;
                    failed.code = "unparseable_event";
                    failed.message = "the upstream stream carried a data line that is not JSON";
                    failed.refusal = true;
                    co_return StreamEnd{};
                }
                saw_event = true;
                if (info.structured_error) {
                    event_error = true;
                    declared = info.error;
                }
                if (info.answer_text) answer = true;
                if (info.end_marker) saw_end = true;
                if (info.finish_reason) saw_finish = true;
            }
            if (!event->data.empty()) saw_event = true;

            if (answering) {
                if (event_error) {
                    // Forwarded as it is; it ends the client stream.
                    out += event->raw;
                    auto c = policy::classify_error_event(declared, plan_.endpoint);
                    co_return co_await close_published(c, "upstream_error_event", true);
                }
                out += event->raw;
                if (done_here) saw_done = true;
                continue;
            }
            if (event_error && !error_event) error_event = declared;
            held.append(event->raw);
            if (static_cast<std::int64_t>(held.size()) > limits_.max_response_body_bytes) {
                failed.classification = {policy::ErrorClass::network, false, policy::TimeoutSource::none,
                                         "response-too-large"};
                failed.code = "response_too_large";
                failed.message = "the upstream stream held more than max_response_body_bytes before answer text";
                failed.refusal = true;
                co_return StreamEnd{};
            }
            if (done_here) saw_done = true;
            if (answer && !error_event) {
                // The first answer text: publish the head and everything held.
                if (!first_byte_at_) first_byte_at_ = Clock::now();
                if (!co_await publish_stream_head(ex)) co_return StreamEnd{true, false};
                if (!co_await write_chunk(held)) co_return StreamEnd{true, false};
                held.clear();
                answering = true;
            }
        }

        if (!out.empty()) {
            if (!co_await write_chunk(out)) co_return StreamEnd{true, false};
            out.clear();
        }

        if (fault != Fault::none) {
            if (answering) {
                auto c = capped ? policy::Classification{policy::ErrorClass::stream_incomplete, false,
                                                         policy::TimeoutSource::none, "max-stream-ms"}
                                : policy::classify(transport_of(fault), plan_.endpoint);
                co_return co_await close_published(c, "stream_incomplete", false);
            }
            if (error_event) break;  // the error event decides, below
            failed = transport_failure(fault);
            co_return StreamEnd{};
        }
        if (!done) continue;

        // The upstream stream ended cleanly.
        if (identity && sse::refused(identity->finish())) {
            failed = refusal("model-identity", "model_identity_mismatch",
                             "the upstream stream never named an accepted model", policy::ErrorClass::identity);
            co_return co_await refuse_in_stream();
        }
        if (secrets && secrets->finish() == sse::CredentialVerdict::credential_in_response) {
            failed = refusal("credential", "credential_in_response", "the upstream stream carried credential material",
                             policy::ErrorClass::credential);
            co_return co_await refuse_in_stream();
        }
        const bool complete = sse::stream_complete(plan_.endpoint, rules, {saw_done, saw_end, saw_finish});
        if (answering) {
            if (complete) {
                record_attempt_and_turn(200, "ok", "ok", 200, nullptr, "");
                if (ex.reusable()) give_back(a);
                const bool ok = co_await write("0\r\n\r\n");
                co_return StreamEnd{true, ok && keep_alive()};
            }
            auto c = policy::classify_stream_incomplete(plan_.endpoint);
            co_return co_await close_published(c, "stream_incomplete", false);
        }
        if (!saw_event && !error_event) {
            // SPEC section 8: a 200 stream with no event at all is refused.
            failed.classification = {policy::ErrorClass::identity, false, policy::TimeoutSource::none, "empty-stream"};
            failed.code = "empty_stream";
            failed.message = "the upstream answered 200 with a stream that carried no event";
            failed.refusal = true;
            co_return StreamEnd{};
        }
        if (!error_event && complete) {
            // A complete stream with no answer text (e.g. an empty reply): a success.
            if (!first_byte_at_) first_byte_at_ = Clock::now();
            if (!co_await publish_stream_head(ex)) co_return StreamEnd{true, false};
            if (!co_await write_chunk(held)) co_return StreamEnd{true, false};
            record_attempt_and_turn(200, "ok", "ok", 200, nullptr, "");
            if (ex.reusable()) give_back(a);
            const bool ok = co_await write("0\r\n\r\n");
            co_return StreamEnd{true, ok && keep_alive()};
        }
        if (!error_event) {
            failed.classification = policy::classify_stream_incomplete(plan_.endpoint);
            failed.code = "stream_incomplete";
            failed.message = "the upstream stream ended before its end marker";
            co_return StreamEnd{};
        }
        break;
    }
    // A structured error event before any answer text: classified by section
    // 7; a retryable one is replayed, a terminal one (or the last) is passed on
    // as the 200 stream holding it.
    failed.classification = policy::classify_error_event(*error_event, plan_.endpoint);
    failed.code = "upstream_error_event";
    failed.held_stream = std::move(held);
    failed.attempt = std::move(a);
    co_return StreamEnd{};
}

// One attempt: sent, and its answer relayed (the turn is then answered) or
// read into `failed` for run()'s decision. Its own coroutine so that neither
// frame grows past the 1020 bytes Asio recycles (issue 2).
asio::awaitable<TurnRun::AttemptEnd> TurnRun::try_attempt(Attempt& a, Failed& failed) {
    a = co_await open_and_send();
    if (co_await cut()) co_return AttemptEnd{true, false};
    if (a.fault != Fault::none) {
        failed = transport_failure(a.fault);
    } else {
        transport::Exchange& ex = *a.exchange;
        const int status = static_cast<int>(ex.head().result_int());
        if (status >= 300 && status < 400) {
            failed.classification = policy::classify_http(status, {}, plan_.endpoint);
            failed.code = "upstream_redirect";
            failed.message = "the upstream answered with a redirect, which is never followed";
        } else if (status >= 200 && status < 300 && ex.event_stream()) {
            StreamEnd end = co_await stream_attempt(a, failed);
            if (end.finished) co_return AttemptEnd{true, end.keep_alive};
            failed.stream_status = 200;
        } else {
            // A whole body: read it (nothing reaches the client until it is complete).
            std::string& body = plan_.answer_body;  // reused: see ForwardPlan
            body.clear();
            Fault fault = Fault::none;
            for (bool done = false; !done;) {
                fault = co_await ex.read_some(body, done, plan_.deadline, Fault::deadline);
                if (co_await cut()) co_return AttemptEnd{true, false};
                if (fault == Fault::none &&
                    static_cast<std::int64_t>(body.size()) > limits_.max_response_body_bytes)
                    fault = Fault::body_too_large;
                if (fault != Fault::none) break;
            }
            if (fault != Fault::none) {
                failed = transport_failure(fault);
            } else if (status >= 200 && status < 300 && plan_.wants_stream &&
                       route_.dialect != config::Dialect::generic && policy::has_stream_rules(plan_.endpoint)) {
                // SPEC section 8: a 200 that is not a stream when the client asked for one.
                failed.classification = {policy::ErrorClass::identity, false, policy::TimeoutSource::none,
                                         "not-a-stream"};
                failed.code = "not_a_stream";
                failed.message = "the client asked for a stream and the upstream answered 200 without one";
                failed.refusal = true;
            } else if (status >= 200 && status < 300) {
                if (!check_body(ex, body, failed)) {
                    const bool open = co_await answer_success(a, body);
                    co_return AttemptEnd{true, open};
                }
            } else {
                auto error = sse::parse_error_body(body).value_or(policy::ProviderError{});
                failed.classification = policy::classify_http(status, error, plan_.endpoint);
                failed.status = status;
                auto header = [&](std::string_view name) -> std::optional<std::string_view> {
                    auto it = ex.head().find(name);
                    if (it == ex.head().end()) return std::nullopt;
                    return it->value();
                };
                const auto now_unix = std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count();
                failed.retry_after_ms =
                    policy::retry_after_ms(header("retry-after-ms"), header("retry-after"), now_unix);
                failed.body = std::move(body);
                failed.attempt = std::move(a);
            }
        }
    }
    co_return AttemptEnd{};
}

asio::awaitable<bool> TurnRun::run() {
    co_await asio::this_coro::throw_if_cancelled(false);
    payload_digest(digest_, plan_.method, plan_.target, plan_.body);
    std::int64_t waited_ms = 0;
    asio::steady_timer wait_timer(client_.get_executor());

    for (attempts_ = 1;; ++attempts_) {
        if (attempts_ > 1) {
            // Payload identity (SPEC section 6): a replay sends exactly what
            // attempt 1 sent, or nothing.
            if (!replay_matches(digest_, plan_.method, plan_.target, plan_.body)) co_return co_await digest_mismatch();
        }
        Failed failed;
        // Declared here, not in try_attempt: an attempt's connection stays
        // with the turn until the decision and any wait are over.
        Attempt a;
        attempt_started_ = Clock::now();
        const AttemptEnd end = co_await try_attempt(a, failed);
        if (end.answered) co_return end.keep_alive;

        if (failed.refusal) co_return co_await end_turn(failed, {policy::Verdict::terminal, policy::Bound::none, 0, "refused"}, false);
        const auto failure =
            policy::failure_of(failed.classification, failed.status, failed.retry_after_ms);
        const std::int64_t left = ms_between(Clock::now(), plan_.deadline);
        auto decision = policy::decide({attempts_, waited_ms}, failure, route_.retry, left, draw());
        if (decision.verdict == policy::Verdict::retry) {
            record_attempt(failed.record_status(), &failed.classification, failed.code, "retry", decision.wait_ms);
            // An upstream answer read whole leaves its connection reusable.
            if (failed.attempt.exchange && failed.attempt.exchange->reusable()) give_back(failed.attempt);
            waited_ms += decision.wait_ms;
            wait_timer.expires_after(std::chrono::milliseconds(decision.wait_ms));
            co_await wait_timer.async_wait(use_tuple);
            if (co_await cut()) co_return false;
            // Checked again before the send: the wait may have overrun.
            auto again = policy::recheck_before_send(ms_between(Clock::now(), plan_.deadline), route_.retry);
            if (again.verdict == policy::Verdict::retry) continue;
            // The turn ends at the deadline after the wait, on the failure it
            // waited for: no further attempt is sent.
            co_return co_await end_turn(failed, again, true);
        }
        co_return co_await end_turn(failed, decision, false);
    }
}

TurnRun::Failed TurnRun::transport_failure(Fault fault) {
    Failed f;
    if (fault == Fault::unsupported_encoding) {
        f.classification = {policy::ErrorClass::network, false, policy::TimeoutSource::none, "unsupported-encoding"};
        f.code = "unsupported_encoding";
        f.message = "the upstream answered with a content coding other than identity, gzip or deflate";
        return f;
    }
    if (fault == Fault::body_too_large) {
        f.classification = {policy::ErrorClass::network, false, policy::TimeoutSource::none, "response-too-large"};
        f.code = "response_too_large";
        f.message = "the upstream answer is larger than max_response_body_bytes";
        return f;
    }
    f.classification = policy::classify(transport_of(fault), plan_.endpoint);
    switch (fault) {
        case Fault::deadline:
            f.code = "deadline";
            f.message = "the upstream did not answer before the turn deadline";
            break;
        case Fault::tls_verify_failed:
            f.code = "tls_verification_failed";
            f.message = "the upstream's TLS certificate could not be verified";
            break;
        case Fault::dns_failed:
            f.code = "dns_failed";
            f.message = "the upstream host name does not resolve";
            break;
        case Fault::connect_refused:
        case Fault::connect_reset:
        case Fault::connect_timeout:
            f.code = "connect_failed";
            f.message = "the upstream could not be reached";
            break;
        default:
            f.code = "connection_dropped";
            f.message = "the upstream dropped the connection before its answer was complete";
            break;
    }
    return f;
}

TurnRun::Failed TurnRun::refusal(std::string_view rule, std::string_view code, std::string_view message,
                                 policy::ErrorClass cls) {
    Failed f;
    f.classification = {cls, false, policy::TimeoutSource::none, rule};
    f.code = std::string(code);
    f.message = std::string(message);
    f.refusal = true;
    return f;
}

// SPEC section 8 on a whole 200 body, before any byte reaches the client:
// model identity (on the endpoints that name one) and the credential scan
// (text bodies).
bool TurnRun::check_body(transport::Exchange& ex, const std::string& body, Failed& failed) {
    // The body's `usage` counts whatever the verdict: the upstream spent the
    // tokens. The identity walk reads it; without one, one more parse.
    if (plan_.identity) {
        const sse::BodyIdentity& seen = worker_.inspector().body_identity(body, plan_.endpoint);
        metrics::count_usage(worker_.counters(slot_), seen.usage);
        if (sse::refused(sse::check_body_identity(seen, *plan_.identity))) {
            failed = refusal("model-identity", "model_identity_mismatch",
                             "the upstream answered with a model this route does not accept",
                             policy::ErrorClass::identity);
            return true;
        }
    } else if (plan_.endpoint != policy::Endpoint::other) {
        metrics::count_usage(worker_.counters(slot_), worker_.inspector().inspect(body, plan_.endpoint).usage);
    }
    const auto type = ex.head()[transport::http::field::content_type];
    const bool text = type.empty() || type.find("json") != std::string_view::npos ||
                      type.substr(0, 5) == "text/" || type.find("event-stream") != std::string_view::npos;
    if (text && plan_.runtime->secrets && plan_.runtime->secrets->contains_secret(body)) {
        failed = refusal("credential", "credential_in_response", "the upstream answer carried credential material",
                         policy::ErrorClass::credential);
        return true;
    }
    return false;
}

asio::awaitable<bool> TurnRun::end_turn(Failed& failed, const policy::Decision& decision, bool after_wait) {
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
        bool ok = true;
        if (failed.held_stream) {
            ok = co_await write_chunk(*failed.held_stream);
        } else {
            std::string type = failed.refusal || shown.cls == policy::ErrorClass::stream_incomplete
                                   ? failed.code
                                   : std::string(cls);
            if (shown.cls == policy::ErrorClass::stream_incomplete) type = "stream_incomplete";
            const int code = failed.refusal || shown.cls == policy::ErrorClass::stream_incomplete ? 502
                             : failed.status                                                    ? failed.status
                             : shown.cls == policy::ErrorClass::timeout                         ? 504
                                                                                                : 502;
            std::string event = closing_error_event(plan_.endpoint, failed.message.empty() ? "the upstream failed" : failed.message,
                                                    type, code, cls, failed.refusal ? "terminal" : verdict, bound,
                                                    attempts_);
            ok = co_await write_chunk(event);
        }
        if (ok) ok = co_await write("0\r\n\r\n");
        co_return ok && keep_alive();
    }
    if (failed.held_stream) {
        // A 200 stream whose events before answer text end in an error event:
        // passed on as the 200 stream holding that event (SPEC section 7).
        transport::Exchange& ex = *failed.attempt.exchange;
        ResponseHead head(ex.head().result_int(), ex.head().reason());
        head.copy_upstream(ex.head());
        head.add_modelproxy(attempts_, plan_.request_id);
        head.add_failure(cls, verdict, bound);
        head.chunked();
        if (!keep_alive()) head.add("connection", "close");
        published_ = true;
        record_turn(outcome, 200, &shown, failed.code, bound);
        std::string text = head.finish();
        bool ok = co_await write(text);
        if (ok) ok = co_await write_chunk(*failed.held_stream);
        if (ok) ok = co_await write("0\r\n\r\n");
        co_return ok && keep_alive();
    }
    if (failed.status != 0) {
        // The upstream answered: its status, body and end-to-end headers.
        transport::Exchange& ex = *failed.attempt.exchange;
        ResponseHead head(static_cast<unsigned>(failed.status), ex.head().reason());
        head.copy_upstream(ex.head());
        head.add_modelproxy(attempts_, plan_.request_id);
        head.add_failure(cls, verdict, bound);
        if (!plan_.head_request) head.content_length(failed.body.size());
        if (!keep_alive()) head.add("connection", "close");
        if (ex.reusable()) give_back(failed.attempt);
        published_ = true;
        record_turn(outcome, failed.status, &shown, failed.code, bound);
        std::string text = head.finish();
        const bool ok = co_await write(text, plan_.head_request ? std::string_view{} : std::string_view(failed.body));
        co_return ok && keep_alive();
    }
    // No upstream answer to pass on: the section 9 envelope (a section 8
    // refusal is a 502 with its code, outcome refused).
    const unsigned status = shown.cls == policy::ErrorClass::timeout ? 504 : 502;
    EnvelopeDetails details;
    details.error_class = cls;
    details.attempts = attempts_;
    details.decision = verdict;
    if (!bound.empty()) details.bound = bound;
    std::string body = error_envelope(failed.message, modelproxy_error_type, failed.code, details);
    ResponseHead head(status);
    head.add("content-type", "application/json");
    head.add_modelproxy(attempts_, plan_.request_id);
    head.add_failure(cls, verdict, bound);
    head.content_length(body.size());
    if (!keep_alive()) head.add("connection", "close");
    record_turn(outcome, static_cast<int>(status), &shown, failed.code, bound);
    std::string text = head.finish();
    const bool ok = co_await write(text, body);
    co_return ok && keep_alive();
}

asio::awaitable<bool> TurnRun::digest_mismatch() {
    policy::Classification c{policy::ErrorClass::client, false, policy::TimeoutSource::none, "digest-mismatch"};
    record_attempt_and_turn(std::nullopt, "terminal", "terminal", 500, &c, "replay_digest_mismatch");
    EnvelopeDetails details;
    details.attempts = attempts_ - 1;
    details.decision = "terminal";
    std::string body = error_envelope("the replay's payload differs from the first attempt's; it was not sent",
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

asio::awaitable<bool> TurnRun::answer_success(Attempt& a, const std::string& body) {
    transport::Exchange& ex = *a.exchange;
    if (head_out_) {
        // The hold limit sent a stream head; a whole-body answer cannot follow it.
        Failed refused;
        refused.classification = {policy::ErrorClass::identity, false, policy::TimeoutSource::none, "not-a-stream"};
        refused.code = "not_a_stream";
        refused.message = "the upstream answered 200 without a stream";
        refused.refusal = true;
        co_return co_await end_turn(refused, {policy::Verdict::terminal, policy::Bound::none, 0, "refused"}, false);
    }
    ending_ = true;
    first_byte_at_ = Clock::now();
    ResponseHead head(ex.head().result_int(), ex.head().reason(), std::move(plan_.head_text));
    head.copy_upstream(ex.head());
    head.add_modelproxy(attempts_, plan_.request_id);
    if (!plan_.head_request) head.content_length(body.size());
    if (!keep_alive()) head.add("connection", "close");
    const int status = static_cast<int>(ex.head().result_int());
    if (ex.reusable()) give_back(a);  // destroys the exchange: `ex` is not used after this
    published_ = true;
    record_attempt_and_turn(status, "ok", "ok", status, nullptr, "");
    plan_.head_text = head.finish();
    const std::string_view body_out = plan_.head_request ? std::string_view{} : std::string_view(body);
    const bool ok = co_await write(plan_.head_text, body_out);
    co_return ok && keep_alive();
}

void TurnRun::give_back(Attempt& a) {
    a.exchange.reset();
    a.busy.release();
    // A turn of a config generation that a reload replaced finds its pool
    // gone: the connection closes instead of refilling a pool nothing uses.
    transport::Pool* pool = worker_.pool_if_kept(plan_.runtime->pool_keys[plan_.route_index]);
    if (!pool) {
        a.connection.reset();
        return;
    }
    pool->give_back(std::move(a.connection));
    note_idle(*pool);
}

double TurnRun::draw() {
    thread_local std::mt19937_64 random{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(random);
}

// A turn the client cut by hanging up: recorded as cancelled, not as a
// provider failure. A plain function, so the records are on the stack and
// not in run_turn's coroutine frame (kept small enough for Asio to recycle).
void record_client_left(Worker& worker, const ForwardPlan& plan, const TurnRun& turn) {
    AttemptRecord a;
    a.request_id = plan.request_id;
    a.route = plan.runtime->config.routes[plan.route_index].name;
    a.model = plan.client_model;
    a.attempt = std::max(1, turn.attempts());
    a.error_class = "cancelled";
    a.decision = "cancelled";
    a.remaining_ms = std::max<std::int64_t>(0, ms_between(Clock::now(), plan.deadline));
    TurnRecord r;
    r.attempts = std::max(1, turn.attempts());
    r.request_id = plan.request_id;
    r.route = plan.runtime->config.routes[plan.route_index].name;
    r.model = plan.client_model;
    r.outcome = "cancelled";
    r.error_class = "cancelled";
    r.stream = plan.wants_stream;
    r.duration_ms = ms_between(plan.started, Clock::now());
    const std::uint16_t slot = plan.runtime->metric_slots[plan.route_index];
    worker.write_attempt_and_turn(slot, a, ms_between(turn.attempt_started(), Clock::now()), r);
}

}  // namespace

void ForwardPlan::clear() {
    runtime.reset();
    route_index = 0;
    client_model.clear();
    method.clear();
    target.clear();
    upstream_head.clear();
    body.clear();
    wants_stream = false;
    head_request = false;
    endpoint = policy::Endpoint::other;
    if (identity) {
        spare_identity_ = std::move(*identity);
        identity.reset();
    }
    request_id.clear();
    keep_alive = true;
    started = {};
    deadline = {};
    answer_body.clear();
    digest.clear();
    head_text.clear();
    stream_held.clear();
    stream_out.clear();
    stream_piece.clear();
}

sse::IdentityRule& ForwardPlan::set_identity() {
    if (!identity) identity.emplace(std::move(spare_identity_));
    sse::IdentityRule& rule = *identity;
    rule.kind = sse::IdentityRule::Kind::accept_globs;
    rule.globs.clear();
    rule.requested.clear();
    return rule;
}

sse::StreamIdentity& ForwardPlan::stream_identity() {
    if (stream_identity_) {
        stream_identity_->reset(*identity);
    } else {
        stream_identity_.emplace(*identity);
    }
    return *stream_identity_;
}

void RequestSlot::clear() {
    head_parser.reset();
    parser.reset();
    plan.clear();
    // One large request must not leave every spare slot large: what grew
    // past the usual sizes is released (the next request of that size pays
    // for it again).
    buffer.clear();
    if (buffer.capacity() > 16 * 1024) buffer.shrink_to_fit();
    for (std::string* kept : {&plan.body, &plan.answer_body, &plan.stream_held, &plan.stream_out, &plan.stream_piece})
        if (kept->capacity() > 64 * 1024) std::string().swap(*kept);
    if (plan.head_text.capacity() > 16 * 1024) std::string().swap(plan.head_text);
    if (plan.upstream_head.capacity() > 16 * 1024) std::string().swap(plan.upstream_head);
    plan.stream_reader.reset();  // releases buffers grown past its own limit
}

asio::awaitable<bool> run_turn(Worker& worker, tcp::socket& client, ForwardPlan& plan) {
    worker.shared().inflight_turns.fetch_add(1);
    struct Done {
        Shared& shared;
        ~Done() { shared.inflight_turns.fetch_sub(1); }
    } done{worker.shared()};

    TurnRun turn(worker, client, plan);
    // A client that hangs up ends the turn at once, aborting the upstream
    // request (SPEC section 6); so does the drain limit. The turn runs as its
    // own coroutine so that either can cut it through its cancellation slot.
    // Recycled memory (recycling.hpp): a turn costs no allocation for it.
    auto watch = std::allocate_shared<TurnWatch>(transport::RecyclingAllocator<TurnWatch>());
    watch_client(client, watch);
    watch_drain_limit(worker.drain_limit(), watch);
    auto [failure, answered] = co_await asio::co_spawn(
        client.get_executor(), turn.run_with_ticker(),
        asio::bind_cancellation_slot(watch->turn.slot(), use_tuple));
    const TurnWatch::Reason reason = turn.recorded() ? TurnWatch::Reason::none : watch->reason;
    watch->finish();
    if (failure) std::rethrow_exception(failure);
    if (reason == TurnWatch::Reason::none) co_return answered;
    if (reason == TurnWatch::Reason::drain_limit) {
        co_await turn.end_at_drain_limit();
        co_return false;
    }
    // The client hung up: the turn was cut.
    record_client_left(worker, plan, turn);
    co_return false;
}

}  // namespace modelproxy::proxy
