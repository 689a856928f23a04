#include "sse/reader.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace modelproxy::sse {

namespace {

constexpr std::size_t npos = std::string_view::npos;
constexpr std::string_view bom = "\xEF\xBB\xBF";
// A buffer that grew past this for one huge event is given back when the next
// event needs buffering, so one 4 MiB event does not pin 4 MiB per stream.
constexpr std::size_t retain_bytes = 64 * 1024;

std::optional<std::uint64_t> parse_retry(std::string_view value) {
    // WHATWG: only ASCII digits, else the field is ignored.
    if (value.empty()) return std::nullopt;
    std::uint64_t out = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
    return out;
}

}  // namespace

void Reader::feed(std::string_view chunk, std::size_t readable_after) {
    if (eof_ || overflow_ != Overflow::none) return;
    if (pos_ < in_.size()) {
        // The caller fed again before next() reached the end: keep the rest.
        // It starts at an event boundary (direct mode) or continues buf_'s
        // event (buffered mode); either way scanning resumes at its start.
        if (!joined_.empty() && in_.data() == joined_.data()) {
            joined_.drop_front(pos_);
        } else {
            joined_.clear_and_trim(retain_bytes);
            joined_.append(in_.substr(pos_));
        }
        joined_.append(chunk);
        in_ = joined_.view();
        in_readable_end_ = joined_.readable_end();
    } else {
        in_ = chunk;
        in_readable_end_ = chunk.data() + chunk.size() + readable_after;
    }
    pos_ = 0;
    ev_start_ = 0;
    lf_known_ = false;
    cr_known_ = false;
}

void Reader::finish() { eof_ = true; }

void Reader::reset() {
    in_ = {};
    pos_ = 0;
    in_readable_end_ = nullptr;
    lf_known_ = cr_known_ = false;
    eof_ = done_ = false;
    overflow_ = Overflow::none;
    joined_.clear_and_trim(retain_bytes);
    buffered_ = false;
    ev_start_ = 0;
    buf_.clear_and_trim(retain_bytes);
    line_start_ = 0;
    cr_pending_ = has_line_ = has_field_ = false;
    data_.clear();
    name_.reset();
    id_.reset();
    retry_.reset();
    event_ = Event{};
    data_views_.clear();
    totals_ = Totals{};
}

const Event* Reader::next() {
    if (done_) return nullptr;
    // Each mode returns an event, or nullptr with all input consumed (or the
    // stream done): buffered mode leaves only through an event.
    return buffered_ ? next_buffered() : next_direct();
}

std::size_t Reader::find_line_end(std::size_t from) {
    // Both results are cached until the scan passes them, so a CR-only or
    // LF-only stream never rescans the rest of a chunk once per line.
    const std::size_t n = in_.size();
    if (from >= n) return npos;
    const auto search = [&](char c) {
        const void* p = std::memchr(in_.data() + from, c, n - from);
        return p ? static_cast<std::size_t>(static_cast<const char*>(p) - in_.data()) : npos;
    };
    if (!lf_known_ || (next_lf_ != npos && next_lf_ < from)) {
        next_lf_ = search('\n');
        lf_known_ = true;
    }
    if (!cr_known_ || (next_cr_ != npos && next_cr_ < from)) {
        next_cr_ = search('\r');
        cr_known_ = true;
    }
    return std::min(next_lf_, next_cr_);
}

bool Reader::over_limit(std::size_t line, std::size_t event) {
    if (line <= limits_.line && event <= limits_.event) return false;
    overflow_ = line > limits_.line ? Overflow::line : Overflow::event;
    done_ = true;
    return true;
}

std::size_t Reader::line_end_length(std::size_t at) const {
    if (in_[at] == '\r' && at + 1 < in_.size() && in_[at + 1] == '\n') return 2;
    return 1;
}

const Event* Reader::next_direct() {
    for (;;) {
        const char* base = in_.data() + ev_start_;
        if (pos_ == in_.size()) {
            if (eof_) return at_end_of_stream(base, pos_ - ev_start_, in_readable_end_);
            if (ev_start_ < pos_) carry(false);
            return nullptr;
        }
        const std::size_t at = find_line_end(pos_);
        // The line so far (to its end, or to the end of the input) within
        // the limits before it is kept or read.
        const std::size_t line_end = at == npos ? in_.size() : at;
        if (over_limit(line_end - pos_, line_end - ev_start_)) return nullptr;
        if (at == npos) {
            if (!eof_) {
                carry(false);
                return nullptr;
            }
            on_line(base, pos_ - ev_start_, in_.size() - ev_start_, false);
            pos_ = in_.size();
            continue;
        }
        if (in_[at] == '\r' && at + 1 == in_.size() && !eof_) {
            carry(true);  // CRLF split across reads: wait for the next byte
            return nullptr;
        }
        const bool dispatch = on_line(base, pos_ - ev_start_, at - ev_start_, true);
        pos_ = at + line_end_length(at);
        if (dispatch) {
            const std::size_t length = pos_ - ev_start_;
            ev_start_ = pos_;
            return emit(base, length, true, in_readable_end_);
        }
    }
}

const Event* Reader::next_buffered() {
    const auto line_done = [this](std::size_t content_end) {
        const bool dispatch = on_line(buf_.data(), line_start_, content_end, true);
        line_start_ = buf_.size();
        return dispatch;
    };
    const auto emit_buffered = [this] {
        buffered_ = false;
        ev_start_ = pos_;
        return emit(buf_.data(), buf_.size(), true, buf_.readable_end());
    };
    for (;;) {
        if (cr_pending_) {
            if (pos_ == in_.size() && !eof_) return nullptr;
            const std::size_t cr_at = buf_.size() - 1;
            if (pos_ < in_.size() && in_[pos_] == '\n') {
                buf_.push_back('\n');
                ++pos_;
            }
            cr_pending_ = false;
            if (line_done(cr_at)) return emit_buffered();
            continue;
        }
        if (pos_ == in_.size()) {
            if (!eof_) return nullptr;
            if (line_start_ < buf_.size()) {
                on_line(buf_.data(), line_start_, buf_.size(), false);
                line_start_ = buf_.size();
            }
            return at_end_of_stream(buf_.data(), buf_.size(), buf_.readable_end());
        }
        const std::size_t at = find_line_end(pos_);
        // As in next_direct: within the limits before it is appended.
        const std::size_t line_end = at == npos ? in_.size() : at;
        const std::size_t more = line_end - pos_;
        if (over_limit(buf_.size() - line_start_ + more, buf_.size() + more)) return nullptr;
        if (at == npos) {
            buf_.append(in_.substr(pos_));
            pos_ = in_.size();
            continue;
        }
        if (in_[at] == '\r' && at + 1 == in_.size() && !eof_) {
            buf_.append(in_.substr(pos_));
            pos_ = in_.size();
            cr_pending_ = true;
            return nullptr;
        }
        const std::size_t content_end = buf_.size() + (at - pos_);
        const std::size_t next = at + line_end_length(at);
        buf_.append(in_.substr(pos_, next - pos_));
        pos_ = next;
        if (line_done(content_end)) return emit_buffered();
    }
}

void Reader::carry(bool cr_pending) {
    // The previous event (if it came from buf_) was yielded by an earlier
    // call, so its views may be invalidated now.
    buf_.clear_and_trim(retain_bytes);
    buf_.append(in_.substr(ev_start_));
    line_start_ = pos_ - ev_start_;
    pos_ = in_.size();
    ev_start_ = pos_;
    buffered_ = true;
    cr_pending_ = cr_pending;
}

bool Reader::on_line(const char* base, std::size_t begin, std::size_t end, bool terminated) {
    std::string_view line(base + begin, end - begin);
    while (line.starts_with(bom)) line.remove_prefix(bom.size());
    if (line.empty()) return terminated && has_line_;
    has_line_ = true;
    if (line.front() == ':') return false;  // comment
    has_field_ = true;

    const std::size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == npos ? line.substr(line.size()) : line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    const Span span{static_cast<std::size_t>(value.data() - base), value.size()};

    if (field == "data") {
        data_.push_back(span);
    } else if (field == "event") {
        name_ = span;
    } else if (field == "id") {
        if (value.find('\0') == npos) id_ = span;  // WHATWG: an id with NUL is ignored
    } else if (field == "retry") {
        if (auto ms = parse_retry(value)) retry_ = ms;
    }
    return false;
}

const Event* Reader::emit(const char* base, std::size_t length, bool terminated,
                          const char* readable_end) {
    const auto view = [base](const std::optional<Span>& s) {
        return s ? std::string_view(base + s->offset, s->length) : std::string_view();
    };
    event_.raw = std::string_view(base, length);
    event_.name = view(name_);
    event_.id = view(id_);
    event_.retry = retry_;
    data_views_.clear();
    for (const Span& s : data_) data_views_.emplace_back(base + s.offset, s.length);
    event_.data = data_views_;
    event_.comment_only = !has_field_;
    event_.terminated = terminated;
    event_.readable_end = readable_end;

    if (terminated) {
        if (has_field_) ++totals_.events;
        else ++totals_.comment_events;
        if (!data_.empty()) ++totals_.data_events;
    }
    has_line_ = has_field_ = false;
    data_.clear();
    name_.reset();
    id_.reset();
    retry_.reset();
    return &event_;
}

const Event* Reader::at_end_of_stream(const char* base, std::size_t length,
                                      const char* readable_end) {
    done_ = true;
    if (has_line_) {
        totals_.unterminated = true;
        return emit(base, length, false, readable_end);
    }
    totals_.leftover = std::string_view(base, length);
    return nullptr;
}

}  // namespace modelproxy::sse
