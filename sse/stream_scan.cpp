// StreamScan (credentials.hpp): the credential scan of one stream attempt,
// its raw channel, its answer-text channels and its decoded lines, over the
// rules and per-thread scratch of credentials_engine.hpp.
#include "sse/credentials.hpp"

#include "sse/credentials_engine.hpp"
#include "sse/json_unescape.hpp"

#include <hs/hs.h>

#include <utility>

namespace modelproxy::sse {

using detail::MatchContext;
using detail::on_match;
using detail::scan_decoded;
using detail::scan_failure_rule;
using detail::scan_stream;
using detail::thread_scratch;

namespace {

constexpr std::size_t max_answer_texts = 256;

}  // namespace

// ---- StreamScan ----------------------------------------------------------------

// A finished scan's Vectorscan streams (raw and answer-text channels), reset
// and kept per thread for the next StreamScan of the same rules: opening a
// stream allocates its state, so a stream per attempt would cost a few
// allocations each. Only the newest rules' streams are kept; a
// reload's first finished scan drops the older ones.
struct StreamScan::Spares {
    struct Kept {
        hs_stream_t* raw = nullptr;
        std::vector<Channel> channels;  // every stream reset, keys stale
    };
    // Enough for the streams a worker relays at once (as Worker's spare
    // request slots); a scan finishing beyond it closes its streams.
    static constexpr std::size_t max_kept = 64;
    // Answer texts per stream are few (choices, tool calls); a scan that
    // opened more is not kept, so no thread holds hundreds of idle streams.
    static constexpr std::size_t max_channels = 16;

    std::uint64_t generation = 0;  // of the rules the kept streams were opened with
    std::vector<Kept> kept;

    Spares() = default;
    Spares(const Spares&) = delete;
    Spares& operator=(const Spares&) = delete;
    ~Spares() { drop(); }

    void drop() {
        // No scratch, no callback: nothing is reported, only memory freed.
        for (Kept& k : kept) {
            hs_close_stream(k.raw, nullptr, nullptr, nullptr);
            for (Channel& c : k.channels) hs_close_stream(c.stream, nullptr, nullptr, nullptr);
        }
        kept.clear();
    }
};

StreamScan::Spares& StreamScan::spares() {
    thread_local Spares spares;
    return spares;
}

StreamScan::StreamScan(const CredentialScanner& scanner) : compiled_(scanner.compiled_) {
    if (!compiled_ || !compiled_->stream) return;
    Spares& spares = StreamScan::spares();
    if (spares.generation == compiled_->generation && !spares.kept.empty()) {
        raw_ = spares.kept.back().raw;
        channels_ = std::move(spares.kept.back().channels);
        spares.kept.pop_back();
        return;
    }
    if (hs_open_stream(compiled_->stream, 0, &raw_) != HS_SUCCESS) raw_ = nullptr;
}

StreamScan::~StreamScan() { release(); }

StreamScan::StreamScan(StreamScan&& other) noexcept
    : compiled_(std::move(other.compiled_)),
      raw_(std::exchange(other.raw_, nullptr)),
      channels_(std::move(other.channels_)),
      used_(std::exchange(other.used_, 0)),
      finished_(other.finished_),
      answer_matched_(other.answer_matched_),
      noted_(std::exchange(other.noted_, false)),
      failure_at_(other.failure_at_),
      verdict_(other.verdict_),
      matched_rule_(other.matched_rule_),
      read_bytes_(other.read_bytes_),
      events_end_(other.events_end_),
      held_end_(other.held_end_),
      held_rule_(other.held_rule_) {
    other.channels_.clear();
}

StreamScan& StreamScan::operator=(StreamScan&& other) noexcept {
    if (this != &other) {
        release();
        compiled_ = std::move(other.compiled_);
        raw_ = std::exchange(other.raw_, nullptr);
        channels_ = std::move(other.channels_);
        other.channels_.clear();
        used_ = std::exchange(other.used_, 0);
        finished_ = other.finished_;
        answer_matched_ = other.answer_matched_;
        noted_ = std::exchange(other.noted_, false);
        failure_at_ = other.failure_at_;
        verdict_ = other.verdict_;
        matched_rule_ = other.matched_rule_;
        read_bytes_ = other.read_bytes_;
        events_end_ = other.events_end_;
        held_end_ = other.held_end_;
        held_rule_ = other.held_rule_;
    }
    return *this;
}

void StreamScan::release() {
    Spares& spares = StreamScan::spares();
    const bool keep = compiled_ && raw_ && channels_.size() <= Spares::max_channels &&
                      compiled_->generation >= spares.generation;
    if (keep && compiled_->generation > spares.generation) {
        spares.drop();
        spares.generation = compiled_->generation;
    }
    if (keep && spares.kept.size() < Spares::max_kept) {
        // Every stream back to its initial state, whatever this scan left in
        // it: the next scan must not continue this one's partial match.
        hs_reset_stream(raw_, 0, nullptr, nullptr, nullptr);
        for (Channel& c : channels_) hs_reset_stream(c.stream, 0, nullptr, nullptr, nullptr);
        if (spares.kept.capacity() == 0) spares.kept.reserve(Spares::max_kept);
        spares.kept.push_back(Spares::Kept{std::exchange(raw_, nullptr), std::move(channels_)});
        channels_.clear();
        used_ = 0;
        return;
    }
    close_all();
}

void StreamScan::close_all() {
    // No scratch, no callback: nothing is reported while tearing down.
    if (raw_) hs_close_stream(raw_, nullptr, nullptr, nullptr);
    raw_ = nullptr;
    for (Channel& c : channels_)
        if (c.stream) hs_close_stream(c.stream, nullptr, nullptr, nullptr);
    channels_.clear();
    used_ = 0;
}

// The answer text's channel, claimed for this attempt on first use. Slots
// from used_ on hold streams in their initial state (reset, or just opened).
StreamScan::Channel* StreamScan::channel(const AnswerTextKey& key) {
    for (std::size_t i = 0; i < used_; ++i)
        if (channels_[i].key == key) return &channels_[i];
    if (used_ == max_answer_texts) return &channels_[used_ - 1];
    if (used_ == channels_.size()) {
        hs_stream_t* stream = nullptr;
        if (hs_open_stream(compiled_->stream, 0, &stream) != HS_SUCCESS) return nullptr;
        channels_.emplace_back();
        channels_.back().stream = stream;
    }
    Channel& c = channels_[used_++];
    c.key = key;
    c.scanned = 0;
    c.pending.clear();
    c.marks.clear();
    return &c;
}

void StreamScan::forget_pending() {
    for (std::size_t i = 0; i < used_; ++i) {
        channels_[i].pending.clear();
        channels_[i].marks.clear();
    }
    noted_ = false;
    failure_at_.reset();
}

CredentialVerdict StreamScan::feed_bytes(std::string_view raw) {
    // One read that is one whole counted event: a match in it is charged at once.
    feed_read(raw);
    return event_passed(raw.size(), true);
}

void StreamScan::feed_read(std::string_view bytes) {
    if (verdict_ != CredentialVerdict::clean || finished_ || !compiled_ || !compiled_->stream) return;
    if (held_rule_.empty() && !bytes.empty()) {
        hs_scratch_t* scratch = raw_ ? thread_scratch(*compiled_) : nullptr;
        unsigned long long end = 0;
        const std::string_view rule =
            scratch ? scan_stream(raw_, bytes, scratch, compiled_.get(), &end) : scan_failure_rule;
        if (!rule.empty()) {
            held_rule_ = rule;
            // A failed scan (no match offset) is charged to the first event
            // that ends in this read.
            held_end_ = rule == scan_failure_rule ? read_bytes_ + 1 : end;
        }
    }
    read_bytes_ += bytes.size();
}

CredentialVerdict StreamScan::event_passed(std::size_t raw_size, bool counts) {
    events_end_ += raw_size;
    if (verdict_ == CredentialVerdict::clean && counts && !held_rule_.empty() && held_end_ <= events_end_) {
        verdict_ = CredentialVerdict::credential_in_response;
        matched_rule_ = held_rule_;
    }
    return verdict_;
}

void StreamScan::note_answer_text(std::uint32_t ordinal, std::span<const AnswerFragment> fragments) {
    if (answer_matched_ || finished_ || !compiled_ || !compiled_->stream) return;
    for (const AnswerFragment& fragment : fragments) {
        noted_ = true;
        Channel* c = channel(fragment.key);
        if (!c) {
            if (!failure_at_) failure_at_ = ordinal;
            continue;
        }
        c->pending.append(fragment.text);
        if (!c->marks.empty() && c->marks.back().ordinal == ordinal) {
            c->marks.back().end = c->pending.size();
        } else {
            c->marks.push_back(Mark{c->pending.size(), ordinal});
        }
    }
}

std::optional<std::uint32_t> StreamScan::settle() {
    if (!noted_) return std::nullopt;
    std::optional<std::uint32_t> first = failure_at_;
    std::string_view first_rule = first ? scan_failure_rule : std::string_view();
    hs_scratch_t* scratch = thread_scratch(*compiled_);
    for (std::size_t i = 0; i < used_; ++i) {
        Channel& c = channels_[i];
        if (c.pending.empty()) continue;
        unsigned long long end = 0;
        const std::string_view rule =
            scratch ? scan_stream(c.stream, c.pending, scratch, compiled_.get(), &end) : scan_failure_rule;
        if (!rule.empty()) {
            // The line the match ends in (Vectorscan reports the offset in
            // the whole stream); a failed scan has none and is charged to
            // the first line it held.
            std::uint32_t at = c.marks.front().ordinal;
            if (rule != scan_failure_rule && end > c.scanned) {
                for (const Mark& m : c.marks) {
                    if (end - c.scanned <= m.end) {
                        at = m.ordinal;
                        break;
                    }
                }
            }
            if (!first || at < *first) {
                first = at;
                first_rule = rule;
            }
        }
        c.scanned += c.pending.size();
    }
    forget_pending();
    if (first) {
        answer_matched_ = true;
        verdict_ = CredentialVerdict::credential_in_response;
        matched_rule_ = first_rule;
    }
    return first;
}

CredentialVerdict StreamScan::feed_answer_text(std::span<const AnswerFragment> fragments) {
    if (verdict_ != CredentialVerdict::clean) return verdict_;
    note_answer_text(0, fragments);
    settle();
    return verdict_;
}

CredentialVerdict StreamScan::check_decoded_line(std::string_view data) {
    if (verdict_ != CredentialVerdict::clean || finished_ || !compiled_ || !compiled_->block) return verdict_;
    if (!holds_escape(data)) return verdict_;  // the raw channel scanned these very bytes
    const detail::CompiledSecrets& c = *compiled_;
    const std::string_view rule = scan_decoded(c.block, c.stream, data, thread_scratch(c), &c);
    if (!rule.empty()) {
        verdict_ = CredentialVerdict::credential_in_response;
        matched_rule_ = rule;
    }
    return verdict_;
}

CredentialVerdict StreamScan::finish() {
    if (finished_) return verdict_;
    settle();  // answer text noted and not yet scanned
    finished_ = true;
    if (verdict_ != CredentialVerdict::clean || !compiled_ || !compiled_->stream) return verdict_;
    // End-of-data matches (a secret pattern ending in `$`). hs_reset_stream
    // with a callback reports them as hs_close_stream would, and keeps the
    // stream's memory for reuse (reset(), or the next scan on this thread).
    hs_scratch_t* scratch = thread_scratch(*compiled_);
    const auto end = [&](hs_stream_t* stream) {
        if (!stream) return;
        const bool report = verdict_ == CredentialVerdict::clean;
        MatchContext ctx{compiled_.get(), {}};
        const hs_error_t rc = hs_reset_stream(stream, 0, report ? scratch : nullptr, report ? on_match : nullptr, &ctx);
        // It reports HS_SUCCESS even when the callback stopped it; on a
        // failure the stream may be left mid-way: reset it plainly.
        if (rc != HS_SUCCESS) hs_reset_stream(stream, 0, nullptr, nullptr, nullptr);
        if (report && (!ctx.rule.empty() || (rc != HS_SUCCESS && rc != HS_SCAN_TERMINATED))) {
            verdict_ = CredentialVerdict::credential_in_response;
            matched_rule_ = ctx.rule.empty() ? scan_failure_rule : ctx.rule;
        }
    };
    end(raw_);
    for (std::size_t i = 0; i < used_; ++i) end(channels_[i].stream);
    used_ = 0;
    return verdict_;
}

void StreamScan::reset() {
    verdict_ = CredentialVerdict::clean;
    matched_rule_ = {};
    finished_ = false;
    read_bytes_ = events_end_ = held_end_ = 0;
    held_rule_ = {};
    answer_matched_ = false;
    forget_pending();
    if (!compiled_ || !compiled_->stream) return;
    if (raw_) {
        hs_reset_stream(raw_, 0, nullptr, nullptr, nullptr);
    } else if (hs_open_stream(compiled_->stream, 0, &raw_) != HS_SUCCESS) {
        raw_ = nullptr;
    }
    for (std::size_t i = 0; i < used_; ++i) hs_reset_stream(channels_[i].stream, 0, nullptr, nullptr, nullptr);
    used_ = 0;
}

}  // namespace modelproxy::sse
