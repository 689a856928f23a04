// What one SSE `data:` line says, for the relay's section 7 and 8 decisions:
// [DONE], whether it is JSON at all, answer text (section 1) and its decoded
// strings (for section 8's credential scan), finish reason, end marker, model
// identity, structured error event, usage. Also the two
// non-stream body questions: the error a non-2xx body declares, and the
// identity of a non-stream 200 body.
//
// simdjson On-Demand, one parser per Inspector, reused: no allocation per line
// once the buffers have grown to the largest line seen. Every value of the
// line is visited once, so the whole line is validated (On-Demand alone is
// lazy and would not notice malformed JSON in a member nobody reads, nor
// trailing bytes) and nothing is re-serialised. One thread per Inspector.
// Never reads an error message. The one walk serves every per-event check:
// the credential scan takes the answer-text fragments it collected rather
// than parsing the line again (docs/behaviour.md section 8's cost: every event of every
// stream). A line that repeats its stream's last parsed one but for its
// answer text (and members no rule reads) is proved to be that document with
// those values changed and is not parsed at all (LineMemo,
// sse/repeated_shape.hpp).
#pragma once

#include "policy/endpoint.hpp"
#include "policy/provider_error.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::sse {

struct Event;

// Which answer text a fragment continues (section 8: "each choice's
// concatenated answer text"). Fragments with equal keys are one text, scanned
// as one stream; different keys never join, so a reasoning fragment cannot
// hide the start of a content token.
struct AnswerTextKey {
    enum class Field : std::uint8_t {
        content,            // chat delta.content; messages delta.text; responses output_text
        reasoning,          // chat delta.reasoning_content / delta.reasoning; messages delta.thinking;
                            // responses reasoning_text
        reasoning_summary,  // responses reasoning_summary_text
        refusal,            // chat delta.refusal; responses refusal
        arguments,          // chat tool_calls[].function.arguments (sub = tool call index) and
                            // function_call.arguments; messages delta.partial_json; responses
                            // function_call_arguments
        text,               // completions choice text
        other_delta,        // any other responses `response.*.delta` with a string delta
    };
    std::int64_t index = 0;  // chat/completions choice `index` (else its position);
                             // messages `index`; responses `output_index`
    std::int64_t sub = 0;    // tool call index; responses content_index / summary_index
    Field field = Field::content;

    friend bool operator==(const AnswerTextKey&, const AnswerTextKey&) = default;
};

struct AnswerFragment {
    AnswerTextKey key;
    std::string_view text;  // decoded (JSON escapes resolved), never empty
};

enum class DataKind : std::uint8_t {
    json,         // the whole line is one JSON value (any type)
    done,         // exactly "[DONE]" (no space, nothing else)
    unparseable,  // anything else, "[DONE] " and "" included: refuse, code unparseable_event
};

// Token counts of a `usage` object, for metrics. Where it is read: top-level
// `usage` (chat, completions, Messages `message_delta`), `response.usage`
// (Responses `response.completed`), `message.usage` (Messages
// `message_start`). Anthropic's counts are cumulative per message.
struct Usage {
    std::optional<std::uint64_t> input_tokens;   // prompt_tokens or input_tokens
    std::optional<std::uint64_t> output_tokens;  // completion_tokens or output_tokens
    std::optional<std::uint64_t> total_tokens;   // total_tokens
    bool present() const { return input_tokens || output_tokens || total_tokens; }
    // A stream's later line over an earlier one: streams repeat or grow
    // their counts (Anthropic's message_delta carries the cumulative output
    // count after message_start's), so the latest value of each kind wins.
    void update(const Usage& later) {
        if (later.input_tokens) input_tokens = later.input_tokens;
        if (later.output_tokens) output_tokens = later.output_tokens;
        if (later.total_tokens) total_tokens = later.total_tokens;
    }
};

// The answer for one data line. Views point into the Inspector (or the line)
// and stay valid until its next call.
struct DataInfo {
    DataKind kind = DataKind::unparseable;
    bool object = false;  // a JSON object at top level

    // Section 1's answer text for the endpoint. Chat: a choice's `delta` has
    // a member other than `role` that is non-empty (a non-empty string, array
    // or object, or any number or boolean). Completions: a choice's non-empty
    // `text`. Responses: `type` is `response.` ... `.delta` and `delta` is
    // non-empty. Messages: `type` is `content_block_delta`. Other endpoints
    // (embeddings, moderations, any other path): every JSON data line. Never
    // for [DONE], an unparseable line or a structured error event.
    bool answer_text = false;

    // The decoded answer-text strings of the line, in line order, for the
    // credential scan's second channel (StreamScan::feed_answer_text). Chat:
    // choices[].delta.{content, reasoning_content, reasoning, refusal,
    // tool_calls[].function.arguments, function_call.arguments}; completions:
    // choices[].text; responses: the string `delta` of a `response.*.delta`
    // event; messages: a `content_block_delta`'s delta.{text, partial_json,
    // thinking}. Only non-empty strings; none on other endpoints. A line that
    // fails to parse keeps the fragments read before the fault (section 7
    // refuses it on dialect routes; elsewhere it is forwarded, so its text is
    // still scanned). Storage is reused from call to call.
    std::vector<AnswerFragment> answer_fragments;

    // Section 4's end marker, by endpoint: chat/completions [DONE];
    // responses `response.completed` / `response.incomplete`; messages
    // `message_stop`. Chat/completions' other end (a non-null finish_reason
    // then a clean end) is the caller's: see finish_reason.
    bool end_marker = false;

    // Chat/completions: the first non-null `finish_reason` of any choice
    // (its string value; empty for a non-string such as a number).
    std::optional<std::string_view> finish_reason;

    // Top-level `type` when it is a string (Responses, Messages), else empty.
    std::string_view type;

    // Identity fields naming a model (a non-empty string), in line order:
    // top-level `model` on every endpoint; also `response.model` (responses)
    // and `message.model` (messages). The relay checks them only where
    // policy::has_stream_rules() holds.
    std::span<const std::string_view> models() const { return {model_slots.data(), model_count}; }
    std::array<std::string_view, 2> model_slots{};
    std::uint8_t model_count = 0;

    // Section 7's structured error event, and what it declared (integer
    // error.code -> code_int, string error.code -> code, error.type -> type,
    // error.innererror.code -> inner_code). Which lines count:
    //  - any endpoint: an object whose only members are `error` and
    //    optionally `"type":"error"`; fields from `error`;
    //  - responses: `"type":"error"` whatever its other members; fields from
    //    its `error` object when it has one, else its top-level `code` (the
    //    Responses API's ResponseErrorEvent shape);
    //  - responses: `"type":"response.failed"`; fields from `response.error`;
    //  - messages: a line of an `event: error` event (section 4's table) that
    //    is an object with an `error` member, whatever its other members
    //    (e.g. `request_id`); fields from `error`.
    bool structured_error = false;
    policy::ProviderError error;

    Usage usage;
};

// A non-stream 200 body (section 8): is it a JSON object, and what models do
// its identity fields name (top-level `model`; also `response.model` on
// responses and `message.model` on messages; non-empty strings only). The
// same walk reads the body's `usage` for metrics, so it costs no second parse.
struct BodyIdentity {
    bool json_object = false;
    std::vector<std::string> models;
    Usage usage{};
};

// One stream's memory of its last line parsed whole, for reading its later
// lines without a parse when they repeat that line's shape
// (sse/repeated_shape.hpp): the shape, and what the parse said, in strings of
// its own. Per stream, because a worker's Inspector serves many streams
// whose reads interleave. Empty until a line teaches it.
class LineMemo {
public:
    LineMemo();
    ~LineMemo();
    LineMemo(LineMemo&&) noexcept;
    LineMemo& operator=(LineMemo&&) noexcept;
    void forget();

private:
    friend class Inspector;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class Inspector {
public:
    Inspector();
    // false: the On-Demand walk alone, without the DOM fast path; for tests
    // that check the two walks read every line alike.
    explicit Inspector(bool dom_fast_path);
    ~Inspector();
    Inspector(const Inspector&) = delete;
    Inspector& operator=(const Inspector&) = delete;

    // One data line value (Event::data[i]). `event_name` is the event's
    // `event:` (only `error` on messages changes anything). `readable_end`,
    // when given, says memory up to there may be read: with enough room after
    // the line (simdjson's padding) the DOM parser reads it in place, else it
    // is copied into a reused padded buffer (always for the On-Demand walk,
    // whose reading of an invalid line must not depend on the bytes after it).
    const DataInfo& inspect(std::string_view data, policy::Endpoint endpoint,
                            std::string_view event_name = {},
                            const char* readable_end = nullptr);
    // The same for data line `index` of a reader's event.
    const DataInfo& inspect(const Event& event, std::size_t index, policy::Endpoint endpoint);
    // The same, for a line of the stream `memo` remembers: a line of its
    // last parsed line's shape is read from the memo without a parse, and a
    // line parsed whole teaches it. The answer's views may point into the
    // memo: keep it until the next call.
    const DataInfo& inspect(std::string_view data, policy::Endpoint endpoint, std::string_view event_name,
                            const char* readable_end, LineMemo& memo);
    const DataInfo& inspect(const Event& event, std::size_t index, policy::Endpoint endpoint, LineMemo& memo);
    // Whether the last inspect() read its line with the DOM fast path (for
    // the tests that hold the two paths to the same results).
    bool last_line_took_fast_path() const;
    // Whether the last inspect() read its line from a LineMemo, without
    // parsing it (sse/repeated_shape.hpp); such a line also counts as the
    // fast path's.
    bool last_line_repeated_shape() const;

    // The answer is the Inspector's own, valid until its next call; its
    // strings keep their capacity from body to body.
    const BodyIdentity& body_identity(std::string_view body, policy::Endpoint endpoint);
    std::optional<policy::ProviderError> parse_error_body(std::string_view body);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A non-2xx body's declared error: a JSON object with an `error` member
// (OpenAI `{"error":{"code":..,"type":..}}`, Anthropic
// `{"type":"error","error":{"type":..}}`, Azure `error.innererror.code`).
// nullopt when the body is not one whole JSON object or has no `error`; an
// `error` that is not an object gives an empty ProviderError. Uses a
// temporary Inspector: for the hot path keep one and call its member.
std::optional<policy::ProviderError> parse_error_body(std::string_view body);

BodyIdentity body_identity(std::string_view body, policy::Endpoint endpoint);

}  // namespace modelproxy::sse
