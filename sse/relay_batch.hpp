// One upstream read's data lines, as the stream relay meets them, for the
// batched credential scan of the answer text (docs/behaviour.md section 8;
// StreamScan::note_answer_text and settle): the relay scans the read's
// answer text once, after its events, and a secret found to end in line k
// must then leave no trace of line k's event on, exactly as when each line
// was scanned as it came. So, per line, the sizes of the relay's output
// buffers when its event began, and the `usage` the lines before it carried;
// the lines' usage is held here and counted only once the read is settled.
// Pure, no I/O. The marks' storage is reused from read to read.
#pragma once

#include "sse/inspect.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace modelproxy::sse {

class RelayBatch {
public:
    struct Mark {
        std::size_t out = 0;  // the relay's buffers' sizes when the line's event began
        std::size_t held = 0;
        Usage usage;  // the usage of the batch's lines before this one
    };

    // A new read (or the rest of one, after publication).
    void clear() {
        marks_.clear();
        usage_ = {};
    }
    // A data line begins, in an event that began with the buffers at these
    // sizes: its ordinal for StreamScan::note_answer_text.
    std::uint32_t line(std::size_t out, std::size_t held) {
        marks_.push_back(Mark{out, held, usage_});
        return static_cast<std::uint32_t>(marks_.size() - 1);
    }
    // A line's usage, by Usage::update (the latest value of each count
    // wins), so usage() counted once equals each line counted.
    void see(const Usage& usage) { usage_.update(usage); }

    // What stands when line `ordinal` (< lines()) is refused.
    const Mark& at(std::uint32_t ordinal) const { return marks_[ordinal]; }
    // The usage of every line seen since clear().
    const Usage& usage() const { return usage_; }
    std::size_t lines() const { return marks_.size(); }

private:
    std::vector<Mark> marks_;
    Usage usage_;
};

}  // namespace modelproxy::sse
