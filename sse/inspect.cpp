#include "sse/inspect.hpp"

#include "sse/byte_buffer.hpp"
#include "sse/line_walker.hpp"
#include "sse/reader.hpp"
#include "sse/repeated_shape.hpp"

#include <simdjson.h>

#include <algorithm>

namespace modelproxy::sse {

namespace {

namespace od = simdjson::ondemand;
using detail::ErrorFields;
using detail::LineWalker;
using policy::Endpoint;
using simdjson::SUCCESS;

static_assert(ByteBuffer::slack >= simdjson::SIMDJSON_PADDING, "copied lines need simdjson's padding");

// The padded copy buffer gives back storage grown past this by a huge line.
constexpr std::size_t pad_retain_bytes = 1024 * 1024;

// The DOM fast path (line_walker_dom.cpp) takes texts up to this size and
// nesting up to this depth; beyond them, or on anything it refuses, the
// On-Demand walk decides. The size bounds the DOM parser's buffers (about 14
// bytes per input byte, kept for reuse) for a large non-stream body; the
// depth keeps its refusals rare while line_walker's own bound (512) stays
// the one that counts.
constexpr std::size_t dom_max_bytes = 64 * 1024;
constexpr std::size_t dom_max_depth = 64;

constexpr std::string_view done_marker = "[DONE]";

constexpr std::string_view line_end_padding =
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
static_assert(line_end_padding.size() == simdjson::SIMDJSON_PADDING);

void reset(DataInfo& info) {
    // Member by member, so the error strings keep their capacity.
    info.kind = DataKind::unparseable;
    info.object = false;
    info.answer_text = false;
    info.end_marker = false;
    info.finish_reason.reset();
    info.type = {};
    info.model_count = 0;
    info.structured_error = false;
    info.error.code_int.reset();
    info.error.code.clear();
    info.error.type.clear();
    info.error.inner_code.clear();
    info.usage = Usage{};
    info.answer_fragments.clear();
}

void fill(policy::ProviderError& error, const ErrorFields& from) {
    error.code_int = from.code_int;
    error.code.assign(from.code);
    error.type.assign(from.type);
    error.inner_code.assign(from.inner);
}

}  // namespace

struct Inspector::Impl {
    explicit Impl(bool dom) : dom_fast_path(dom) {}

    bool dom_fast_path;
    bool last_fast = false;  // the last line was read by the DOM fast path
    bool last_repeat = false;  // the last line matched `shape` (read without a parse)
    simdjson::dom::parser dom_parser{dom_max_bytes};
    od::parser parser;
    ByteBuffer pad;
    DataInfo info;
    ErrorFields top_error;  // of the last walk, for parse_error_body
    BodyIdentity identity;  // the last body_identity answer, its storage reused

    // Walks `text` into info; false when it is not one whole JSON value.
    bool walk(std::string_view text, Endpoint endpoint, std::string_view event_name,
              const char* readable_end);
};

bool Inspector::Impl::walk(std::string_view text, Endpoint endpoint, std::string_view event_name,
                           const char* readable_end) {
    last_fast = false;
    reset(info);
    top_error = ErrorFields{};
    if (text.empty()) return false;

    // Copied into the padded buffer, its padding a line's end: On-Demand
    // reads the byte after an invalid text, and what it reads before the
    // fault (the answer text kept for the credential scan) must depend
    // neither on the bytes an earlier, longer text left in the buffer nor on
    // what follows a line in place (the stream's next bytes, or a read
    // buffer's stale ones after an unterminated last line).
    const auto padded_copy = [&] {
        pad.clear_and_trim(pad_retain_bytes);
        pad.append(text);
        pad.append(line_end_padding);
        return pad.data();
    };
    // The DOM parser never reads the padding's bytes as JSON: it parses in
    // place when there is room for it.
    const bool room = readable_end && readable_end >= text.data() + text.size() &&
                      static_cast<std::size_t>(readable_end - text.data()) >= text.size() + simdjson::SIMDJSON_PADDING;
    const char* json = room ? text.data() : padded_copy();

    bool whole = false;
    simdjson::dom::element root;
    if (dom_fast_path && text.size() <= dom_max_bytes) {
        if (dom_parser.capacity() == 0 &&
            dom_parser.allocate(std::max<std::size_t>(text.size(), 1024), dom_max_depth) != SUCCESS) {
            dom_fast_path = false;
        }
        whole = dom_fast_path && dom_parser.parse(json, text.size(), false).get(root) == SUCCESS;
    }
    last_fast = whole;
    if (!whole && json == text.data()) json = padded_copy();
    LineWalker walker(info, endpoint, json + text.size());
    if (whole) {
        walker.dom_document(root);
    } else {
        od::document doc;
        const auto capacity = static_cast<std::size_t>(pad.readable_end() - pad.data());
        if (parser.iterate(json, text.size(), capacity).get(doc) != SUCCESS) return false;
        whole = walker.document(doc) == SUCCESS;
    }
    walker.settle_fragments();
    if (!whole) {
        // Unparseable: nothing the line said counts, but the answer text read
        // before the fault is still scanned for credentials (inspect.hpp).
        std::vector<AnswerFragment> fragments = std::move(info.answer_fragments);
        reset(info);
        info.answer_fragments = std::move(fragments);
        return false;
    }
    info.kind = DataKind::json;
    top_error = walker.top_error;

    // Section 7's structured error event, by the rules listed in inspect.hpp.
    const ErrorFields* declared = nullptr;
    if (info.object && walker.saw_error && !walker.other_member) {
        declared = &walker.top_error;
    } else if (endpoint == Endpoint::responses && info.type == "error") {
        declared = walker.top_error.present ? &walker.top_error : &walker.top_code;
    } else if (endpoint == Endpoint::responses && info.type == "response.failed") {
        declared = &walker.response_error;
    } else if (endpoint == Endpoint::messages && event_name == "error" && walker.saw_error) {
        declared = &walker.top_error;
    }
    if (declared) {
        info.structured_error = true;
        fill(info.error, *declared);
        // The Responses API names an error's kind in `code` ("server_error")
        // and has no `type`: that code is read as section 7's error.type.
        if (endpoint == Endpoint::responses && info.error.type.empty() && !info.error.code.empty())
            info.error.type = info.error.code;
        info.answer_text = false;
        return true;
    }

    switch (endpoint) {
        case Endpoint::chat_completions:
        case Endpoint::completions:
            break;  // answer_text and finish_reason were set on the way
        case Endpoint::responses:
            info.answer_text = info.type.starts_with("response.") && info.type.ends_with(".delta") &&
                               walker.delta_nonempty;
            info.end_marker = info.type == "response.completed" || info.type == "response.incomplete";
            break;
        case Endpoint::messages:
            info.answer_text = info.type == "content_block_delta";
            info.end_marker = info.type == "message_stop";
            break;
        case Endpoint::embeddings:
        case Endpoint::moderations:
        case Endpoint::other:
            info.answer_text = true;  // every data event (section 4's last row)
            break;
    }
    return true;
}

Inspector::Inspector() : Inspector(true) {}
Inspector::Inspector(bool dom_fast_path) : impl_(std::make_unique<Impl>(dom_fast_path)) {}
Inspector::~Inspector() = default;

const DataInfo& Inspector::inspect(std::string_view data, Endpoint endpoint,
                                   std::string_view event_name, const char* readable_end) {
    Impl& m = *impl_;
    m.last_repeat = false;
    if (data == done_marker) {
        m.last_fast = false;
        reset(m.info);
        m.info.kind = DataKind::done;
        m.info.end_marker = endpoint == Endpoint::chat_completions || endpoint == Endpoint::completions;
        return m.info;
    }
    m.walk(data, endpoint, event_name, readable_end);
    return m.info;
}

// What a stream's memo keeps: the shape of its last line parsed whole, and
// that line's reading in strings of its own (the parser's are overwritten by
// the next line of any stream).
struct LineMemo::Impl {
    RepeatedShape shape;
    Endpoint endpoint = Endpoint::other;
    std::string event;
    bool answer_text = false;
    bool end_marker = false;
    std::optional<std::string> finish_reason;
    std::string type;
    std::array<std::string, 2> models;
    std::uint8_t model_count = 0;
    Usage usage;
    AnswerTextKey key;
    // Learning costs about as much as the parse again (the shape's scan and
    // these copies). A learned shape replaced without a single match was
    // wasted: the next `backoff` lines (1, 2, 4 ... 32) are not learned, so
    // a stream whose lines never repeat one (two choices taking turns, an
    // escape every other line) pays about 1/33 of it; a match resets it.
    bool matched = false;
    std::uint8_t backoff = 0;
    std::uint8_t skip = 0;

    // After a line the Inspector has just read whole into `info` (`dom`: by
    // the DOM fast path): the learned shape, if any, is replaced, by this
    // line's unless the back-off skips it.
    void after_parse(std::string_view data, Endpoint e, std::string_view event_name, const DataInfo& info,
                     bool dom) {
        if (shape.known()) {
            backoff = matched ? 0 : backoff == 0 ? 1 : std::min<std::uint8_t>(32, backoff * 2);
            skip = backoff;
        }
        shape.forget();
        matched = false;
        if (skip > 0) {
            --skip;
        } else if (dom) {  // not [DONE], nor a line the On-Demand walk read
            learn(data, e, event_name, info);
        }
    }

    void learn(std::string_view data, Endpoint e, std::string_view event_name, const DataInfo& info) {
        if (info.kind != DataKind::json || !info.object || info.structured_error ||
            info.answer_fragments.size() != 1 || !shape.learn(data, info.answer_fragments.front().text)) {
            return;
        }
        endpoint = e;
        event.assign(event_name);
        answer_text = info.answer_text;
        end_marker = info.end_marker;
        if (info.finish_reason) {
            finish_reason.emplace(*info.finish_reason);
        } else {
            finish_reason.reset();
        }
        type.assign(info.type);
        model_count = info.model_count;
        for (std::size_t i = 0; i < model_count; ++i) models[i].assign(info.model_slots[i]);
        usage = info.usage;
        key = info.answer_fragments.front().key;
    }

    // The learned line's reading with `text` as its answer text.
    void recall(DataInfo& info, std::string_view text) const {
        reset(info);
        info.kind = DataKind::json;
        info.object = true;
        info.answer_text = answer_text;
        info.end_marker = end_marker;
        if (finish_reason) info.finish_reason = std::string_view(*finish_reason);
        info.type = type;
        info.model_count = model_count;
        for (std::size_t i = 0; i < model_count; ++i) info.model_slots[i] = models[i];
        info.usage = usage;
        info.answer_fragments.push_back({key, text});
    }
};

LineMemo::LineMemo() : impl_(std::make_unique<Impl>()) {}
LineMemo::~LineMemo() = default;
LineMemo::LineMemo(LineMemo&&) noexcept = default;
LineMemo& LineMemo::operator=(LineMemo&&) noexcept = default;
void LineMemo::forget() { impl_->shape.forget(); }

const DataInfo& Inspector::inspect(std::string_view data, Endpoint endpoint, std::string_view event_name,
                                   const char* readable_end, LineMemo& memo) {
    Impl& m = *impl_;
    LineMemo::Impl& mine = *memo.impl_;
    if (!m.dom_fast_path) return inspect(data, endpoint, event_name, readable_end);
    if (mine.shape.known() && endpoint == mine.endpoint && event_name == mine.event) {
        if (const std::optional<std::string_view> text = mine.shape.match(data)) {
            // The memo's line with only its answer text (and members no rule
            // reads) changed: it reads as that line did (repeated_shape.hpp).
            mine.recall(m.info, *text);
            mine.matched = true;
            m.last_fast = true;
            m.last_repeat = true;
            return m.info;
        }
    }
    inspect(data, endpoint, event_name, readable_end);
    mine.after_parse(data, endpoint, event_name, m.info, m.last_fast);
    return m.info;
}

const DataInfo& Inspector::inspect(const Event& event, std::size_t index, Endpoint endpoint, LineMemo& memo) {
    return inspect(event.data[index], endpoint, event.name, event.readable_end, memo);
}

bool Inspector::last_line_took_fast_path() const { return impl_->last_fast; }
bool Inspector::last_line_repeated_shape() const { return impl_->last_repeat; }

const DataInfo& Inspector::inspect(const Event& event, std::size_t index, Endpoint endpoint) {
    return inspect(event.data[index], endpoint, event.name, event.readable_end);
}

const BodyIdentity& Inspector::body_identity(std::string_view body, Endpoint endpoint) {
    BodyIdentity& result = impl_->identity;
    const bool object = impl_->walk(body, endpoint, {}, nullptr) && impl_->info.object;
    const std::span<const std::string_view> models =
        object ? impl_->info.models() : std::span<const std::string_view>();
    // Resized, not cleared: the model strings kept from the last body are
    // assigned over, so bodies naming as many models as the last one cost
    // no allocation.
    result.models.resize(models.size());
    for (std::size_t i = 0; i < models.size(); ++i) result.models[i].assign(models[i]);
    result.json_object = object;
    result.usage = object ? impl_->info.usage : Usage{};
    return result;
}

std::optional<policy::ProviderError> Inspector::parse_error_body(std::string_view body) {
    // Endpoint::other: only the top-level `error` matters here.
    if (!impl_->walk(body, Endpoint::other, {}, nullptr) || !impl_->info.object ||
        !impl_->top_error.present) {
        return std::nullopt;
    }
    policy::ProviderError error;
    fill(error, impl_->top_error);
    return error;
}

std::optional<policy::ProviderError> parse_error_body(std::string_view body) {
    Inspector inspector;
    return inspector.parse_error_body(body);
}

BodyIdentity body_identity(std::string_view body, Endpoint endpoint) {
    Inspector inspector;
    return inspector.body_identity(body, endpoint);
}

}  // namespace modelproxy::sse
