#include "proxy/session.hpp"

#include "policy/classify.hpp"
#include "proxy/prepare.hpp"
#include "proxy/request.hpp"
#include "proxy/response_head.hpp"
#include "proxy/turn.hpp"
#include "proxy/turn_watch.hpp"
#include "transport/body_read.hpp"
#include "transport/field_scan.hpp"
#include "transport/parse_step.hpp"
#include "transport/read_timer.hpp"
#include "transport/whole_request.hpp"
#include "transport/write_now.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

namespace modelproxy::proxy {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using transport::ReadTimer;

constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

class Session {
public:
    Session(Worker& worker, Socket socket, asio::cancellation_signal& cut)
        : worker_(worker), socket_(std::move(socket)), client_wait_(cut) {}
    ~Session() {
        if (slot_) worker_.give_back(std::move(slot_));
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    Task<void> run();

private:
    // Writes a local answer. Returns whether the connection stays open.
    Task<bool> answer(const LocalAnswer& a, bool keep_alive, std::string_view request_id = {},
                      std::string_view allow = {}, std::string_view content_type = "application/json");
    Task<bool> refuse(ClientError error, bool keep_alive, std::string_view request_id = {},
                      std::string_view message = {});
    // A request admitted and read whole; one refused on its head with the
    // connection left open for the next; or the connection's end.
    enum class ReadOutcome { request, answered, close };
    Task<ReadOutcome> read_request(RequestSlot& slot, const Runtime& runtime, ReadTimer& read_timer);
    Task<void> linger(beast::flat_buffer& buffer, const config::Limits& limits, ReadTimer& read_timer);
    // Writes the proxy's own answer to a request prepare() did not forward
    // (a refusal, a local or metrics answer). Returns whether the connection
    // stays open.
    Task<bool> answer_reply(const Reply& reply, const ForwardPlan& plan);
    void record_refusal(std::string_view request_id, std::string_view code, unsigned status);

    Worker& worker_;
    Socket socket_;
    // On socket_: a turn's watch (its TurnWatch emits the session's
    // cancellation signal to cut the turn), then the wait for the next request.
    ClientWait client_wait_;
    // Held only while a request is in progress (see RequestSlot); null while
    // the connection waits for its next request.
    std::unique_ptr<RequestSlot> slot_;
    // Beyond max_connections: read for one request's head, which is answered
    // only when it is a health probe (admission.hpp), then closed.
    bool over_limit_ = false;
};

Task<bool> Session::answer(const LocalAnswer& a, bool keep_alive, std::string_view request_id,
                           std::string_view allow, std::string_view content_type) {
    ResponseHead head(a.status);
    head.add("content-type", content_type);
    if (!request_id.empty()) head.add("x-modelproxy-request-id", request_id);
    if (!allow.empty()) head.add("allow", allow);
    if (a.status >= 300) head.add("x-should-retry", "false");
    head.content_length(a.body.size());
    if (!keep_alive) head.add("connection", "close");
    std::string text = head.finish();
    std::array<asio::const_buffer, 2> buffers{asio::buffer(text), asio::buffer(a.body)};
    auto [ec, n] = co_await transport::write_now(socket_, buffers);
    co_return !ec && keep_alive;
}

void Session::record_refusal(std::string_view request_id, std::string_view code, unsigned status) {
    TurnRecord r;
    r.request_id = request_id;
    r.outcome = "rejected";
    r.error_class = "client";
    r.code = code;
    r.status = static_cast<int>(status);
    worker_.write_turn(metrics::Registry::no_route_slot, r);
}

Task<bool> Session::refuse(ClientError error, bool keep_alive, std::string_view request_id,
                           std::string_view message) {
    if (!request_id.empty()) record_refusal(request_id, code_of(error), status_of(error));
    // Named locals, not temporaries, across co_await: g++ 12 destroys a
    // temporary of a conditional expression inside a co_await twice.
    // Shaped for the SDK of the request's path when its head was read (docs/behaviour.md section 9).
    const auto shape = slot_ ? policy::error_shape_for_target(slot_->head.target()) : policy::ErrorShape::openai;
    LocalAnswer refusal = client_error(error, shape, message);
    std::string_view allow = error == ClientError::method_not_allowed ? allowed_methods() : "";
    const bool open = co_await answer(refusal, keep_alive, request_id, allow);
    co_return open;
}

// What a failed read of a request head or body tells the client before the
// connection closes (docs/behaviour.md sections 3 and 9): nothing when the client left or
// the proxy is stopping, else the refusal naming the fault. One table for
// both reads, so the head and the body cannot drift apart.
std::optional<ClientError> read_failure_answer(boost::system::error_code ec, bool timed_out) {
    if (ec == asio::error::operation_aborted)
        return timed_out ? std::optional<ClientError>(ClientError::request_timeout) : std::nullopt;
    if (ec == http::error::header_limit) return ClientError::header_too_large;
    if (ec == http::error::body_limit) return ClientError::payload_too_large;
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset)
        return std::nullopt;
    return ClientError::bad_request;
}

// The head's verdict (admission.hpp), from the fields the proxy reads,
// found in one walk (transport/field_scan.hpp) and kept in `slot.fields` for
// prepare(), and from the framing the parser found; into slot.admission,
// with slot.plan cleared and its request id set. A plain function, so that
// its locals stay off read_request's coroutine frame. `parser` is null for a
// request read whole (transport/whole_request.hpp): not chunked, its
// Content-Length `whole_length`.
void judge_head(const Runtime& runtime, RequestSlot& slot, const RequestParser* parser,
                std::optional<std::uint64_t> whole_length, bool over_limit) {
    transport::RequestFields& fields = slot.fields;
    fields = transport::scan_request(slot.head);
    RequestHead head;
    head.method = slot.head.method_string();
    head.version = slot.head.version();
    head.host_fields = fields.host_fields;
    head.transfer_encoding = fields.transfer_encoding;
    if (parser) {
        head.chunked = parser->chunked();  // Beast refuses Content-Length beside chunked, and lengths that disagree
        if (const auto length = parser->content_length()) head.content_length = *length;
    } else if (whole_length) {
        head.content_length = *whole_length;
    }
    head.content_encoding = fields.content_encoding.value_or("");
    head.expect = fields.expect.value_or("");
    admit_request(runtime, slot.head, fields, head, over_limit, slot.admission, slot.plan);
}

// Reads one request, head then body, into slot.parser; a refusal is answered
// here. Its own coroutine, so that the connection's long-lived frame (run)
// stays small and this one is recycled by Asio.
Task<Session::ReadOutcome> Session::read_request(RequestSlot& slot, const Runtime& runtime,
                                                 ReadTimer& read_timer) {
    const config::Limits& limits = runtime.config.limits;
    beast::flat_buffer& buffer = slot.buffer;

    // The body is read into the string the last request's plan carried
    // (empty, with its capacity): no allocation for a body that fits.
    slot.body.swap(slot.plan.body);

    // A request that arrived whole in the strict common form is read in one
    // pass (transport/whole_request.hpp); any other is Beast's: one parser
    // reads its head, then its body.
    const std::optional<transport::WholeRequest> whole = transport::read_whole_request(
        transport::buffered(buffer), static_cast<std::size_t>(limits.max_header_bytes),
        static_cast<std::uint64_t>(limits.max_request_body_bytes), slot.head, slot.body);
    if (whole) buffer.consume(whole->size);
    RequestParser* parser = nullptr;
    if (!whole) {
        parser = &slot.parser.emplace(slot.head, slot.body);
        parser->header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
        parser->body_limit(static_cast<std::uint64_t>(limits.max_request_body_bytes));

        // The head, within header_timeout_ms of its first byte.
        boost::system::error_code ec;
        bool timed_out = false;
        if (!transport::parse_buffered(*parser, buffer, transport::ParseUntil::head, ec)) {
            // Armed only for a head not yet whole (most arrive in one read):
            // the same deadline, and no clock reading when none is needed.
            read_timer.arm(std::chrono::milliseconds(limits.header_timeout_ms));
            auto [read_ec, n] = co_await http::async_read_header(socket_, buffer, *parser, use_tuple);
            ec = read_ec;
            timed_out = read_timer.disarm();
        }
        if (ec) {
            if (const auto answer = read_failure_answer(ec, timed_out)) co_await refuse(*answer, false);
            co_return ReadOutcome::close;
        }
    }
    // Everything the head alone decides, before any body byte is read or
    // 100 Continue is sent (docs/behaviour.md sections 4 and 12).
    judge_head(runtime, slot, parser, whole ? whole->content_length : std::nullopt, over_limit_);
    if (const Admission& admission = slot.admission; admission.refusal) {
        const std::string_view id = admission.with_id ? std::string_view(slot.plan.request_id) : std::string_view();
        const bool keep_alive = admission.keep_alive && !worker_.shared().draining.load();
        if (co_await refuse(*admission.refusal, keep_alive, id)) co_return ReadOutcome::answered;
        if (parser && !parser->is_done() && !over_limit_) co_await linger(buffer, limits, read_timer);
        co_return ReadOutcome::close;
    }
    // Expect: 100-continue is answered here and never forwarded (section 4).
    if (slot.admission.send_continue) {
        static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
        const asio::const_buffer continue_buffer = asio::buffer(go_on);
        auto [ec, n] = co_await transport::write_now(socket_, continue_buffer);
        if (ec) co_return ReadOutcome::close;
    }
    if (whole) co_return ReadOutcome::request;

    // The body, within idle_timeout_ms (a slow upload is not a slow head).
    // A chunked body's trailer fields are dropped by the parser (section 4).
    boost::system::error_code ec;
    bool timed_out = false;
    if (!transport::parse_buffered(*parser, buffer, transport::ParseUntil::message, ec)) {
        read_timer.arm(std::chrono::milliseconds(std::max(limits.idle_timeout_ms, limits.header_timeout_ms)));
        if (const std::size_t left = transport::body_left(*parser); left > 0) {
            // The rest of a declared length goes straight into the body's
            // string; the parser is not used again for this request.
            ec = co_await transport::read_body_rest(socket_, slot.body, left);
        } else {
            auto [read_ec, n] = co_await http::async_read(socket_, buffer, *parser, use_tuple);
            ec = read_ec;
        }
        timed_out = read_timer.disarm();
    }
    if (ec) {
        if (const auto answer = read_failure_answer(ec, timed_out)) co_await refuse(*answer, false);
        co_return ReadOutcome::close;
    }
    co_return ReadOutcome::request;
}

// A refusal answered before its body was read ends the connection (docs/behaviour.md
// section 12) while the client may still be sending that body. Closing a
// socket with unread bytes sends a reset, which can destroy the answer
// before the client reads it; so the proxy ends its side first (the client
// reads the answer, then the end of the stream) and reads and drops what
// still comes, into the read buffer's spare room, until the client closes
// or header_timeout_ms passes. Nothing of it is kept.
Task<void> Session::linger(beast::flat_buffer& buffer, const config::Limits& limits, ReadTimer& read_timer) {
    boost::system::error_code ec;
    socket_.shutdown(Socket::shutdown_send, ec);
    if (ec) co_return;
    buffer.consume(buffer.size());
    const asio::mutable_buffer room = buffer.prepare(4096);  // the first read's room: no allocation
    read_timer.arm(std::chrono::milliseconds(limits.header_timeout_ms));
    for (;;) {
        auto [read_ec, n] = co_await socket_.async_read_some(room, use_tuple);
        if (read_ec) break;
    }
    read_timer.disarm();
}

Task<void> Session::run() {
    // A cut turn (run_turn) leaves this coroutine's cancellation state
    // cancelled: its awaits must go on completing, not throw.
    co_await asio::this_coro::throw_if_cancelled(false);
    Shared& shared = worker_.shared();
    struct Count {
        Shared& shared;
        ~Count() { shared.connections.fetch_sub(1); }
    } count{shared};
    const std::int64_t open = shared.connections.fetch_add(1) + 1;
    boost::system::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);

    // Non-blocking from the start: idle waits use a zero-byte wait for
    // readability, and the read that follows must not block when that
    // readiness was a spurious one; writes try the socket at once
    // (transport/write_now.hpp), which only a non-blocking socket allows.
    socket_.non_blocking(true, ignored);

    // The session's own copy (it is held across suspensions), taken again
    // only when the worker's changed: no count taken per request.
    std::shared_ptr<const Runtime> runtime = worker_.runtime();
    // Over the limit, the connection is still read for one request, so that
    // idle or slow strangers cannot make a liveness probe fail (section 12);
    // its read has the same header timeout and size limit as any.
    over_limit_ = open > runtime->config.limits.max_connections;

    ReadTimer read_timer(socket_);
    bool first = true;
    for (;;) {
        if (runtime != worker_.runtime()) runtime = worker_.runtime();
        const config::Limits& limits = runtime->config.limits;

        // Wait for the next request's first byte: header_timeout_ms on a new
        // connection, idle_timeout_ms between keep-alive requests. The wait
        // holds no buffer: the slot goes back to the worker while the
        // connection is idle, and is borrowed again once bytes are there.
        if (!slot_ || slot_->buffer.size() == 0) {
            if (slot_) worker_.give_back(std::move(slot_));
            read_timer.arm(std::chrono::milliseconds(first ? limits.header_timeout_ms : limits.idle_timeout_ms));
            // The last turn's watch, when it is still out, is this wait
            // (turn_watch.hpp); when it came during the turn, the bytes
            // are there.
            if (!client_wait_.came()) {
                client_wait_.start(socket_);
                co_await client_wait_.next(use_tuple);
            }
            boost::system::error_code ec = client_wait_.take();
            const bool late = read_timer.disarm();
            if (ec) {
                if (late && ec == asio::error::operation_aborted && first)
                    co_await refuse(ClientError::request_timeout, false);
                co_return;
            }
            slot_ = worker_.take_slot();
            const std::size_t n = socket_.read_some(slot_->buffer.prepare(4096), ec);  // non-blocking
            if (ec == asio::error::would_block || ec == asio::error::try_again) continue;
            if (ec) co_return;
            slot_->buffer.commit(n);
        }
        first = false;
        RequestSlot& slot = *slot_;
        // The generation in force now, not at the wait's start: a reload
        // during a keep-alive wait applies to the request that ends it
        // (its head's checks and client tokens included).
        if (runtime != worker_.runtime()) runtime = worker_.runtime();
        const ReadOutcome outcome = co_await read_request(slot, *runtime, read_timer);
        if (outcome == ReadOutcome::close) co_return;
        if (outcome == ReadOutcome::answered) {
            slot.parser.reset();
            continue;
        }
        // A forwarded request goes straight to its turn; only the proxy's own
        // answers go through answer_reply. One coroutine less per turn: a
        // coroutine awaited costs its frame and two resumptions.
        bool stays_open = false;
        {
            Reply reply = prepare(worker_.shared(), worker_.runtime(), slot.head, slot.fields, slot.admission,
                                  slot.body, slot.plan);
            if (reply.kind == Reply::Kind::forward) {
                // A stream may stay open for minutes: its read buffer, empty
                // unless the client pipelined, goes back to the heap for that
                // time instead of idling in the slot (the next request reads
                // into a new one).
                if (slot.plan.wants_stream && slot.buffer.size() == 0) slot.buffer.shrink_to_fit();
                stays_open = co_await run_turn(worker_, socket_, client_wait_, slot.plan);
            } else {
                stays_open = co_await answer_reply(reply, slot.plan);
            }
        }
        slot.parser.reset();
        if (!stays_open) co_return;
    }
}

Task<bool> Session::answer_reply(const Reply& reply, const ForwardPlan& plan) {
    const bool keep_alive = reply.keep_alive;
    const std::string_view request_id = reply.with_id ? std::string_view(plan.request_id) : std::string_view();
    bool open = false;
    switch (reply.kind) {
        case Reply::Kind::refuse: open = co_await refuse(reply.error, keep_alive, request_id, reply.message); break;
        case Reply::Kind::local: open = co_await answer(reply.answer, keep_alive, request_id); break;
        case Reply::Kind::metrics:
            open = co_await answer(reply.answer, keep_alive, "", "", metrics_content_type);
            break;
        case Reply::Kind::forward: break;  // Session::run runs the turn
    }
    co_return open;
}

}  // namespace

Task<void> run_session(Worker& worker, Socket socket, asio::cancellation_signal& cut) {
    Session session(worker, std::move(socket), cut);
    co_await session.run();
}

}  // namespace modelproxy::proxy
