// Where an upstream answer's parser (AnswerParser, answer_parser.hpp) puts
// each read's body bytes: seen where they lie, in the connection's read
// buffer, instead of being copied into a body buffer first.
//
// Beast's buffer_body copies every body byte the parser takes into the
// caller's buffer. For a stream that copy is one memcpy of the whole answer,
// about 3 % of the proxy's CPU per 200-event stream (perf, deploy/bench), and
// the relay only reads those bytes once before the next read. So the first
// piece a read gives is viewed in place. A second piece in the same read (a
// chunked answer: a chunk header lies between the two) cannot be one view, so
// then both are copied into the spill buffer, one after the other, as
// buffer_body did; once that is full the parser stops with need_buffer until
// the next read. The view is valid until the read buffer is read into again.
#pragma once

#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace modelproxy::transport {

// Where a read's body pieces are joined when there are several. Its memory
// is taken when a read first needs it (most answers never do), as much as
// the joined pieces need (at least 1 KiB), doubled when they need more, at
// most `limit` bytes, and kept from then on (a pooled connection serves
// many answers). A stream whose events are joined now and then (a read that
// caught two) so holds about their size, not a 64 KiB block whose touched
// pages stay resident as long as the stream. An upstream connection holds
// one (upstream.hpp).
class SpillBuffer {
public:
    explicit SpillBuffer(std::size_t limit = 65536) : limit_(limit) {}
    std::size_t limit() const { return limit_; }
    std::size_t capacity() const { return capacity_; }  // of the memory made so far
    // The memory if it was made, else null: no allocation.
    const char* made() const { return data_.get(); }
    // Memory for `size` bytes (at most limit()) whose first `keep` bytes are
    // those held so far: copied over when it grows.
    char* hold(std::size_t size, std::size_t keep) {
        if (size > capacity_) {
            const std::size_t grown = std::min(limit_, std::max({size, capacity_ * 2, min_bytes}));
            auto bigger = std::make_unique_for_overwrite<char[]>(grown);
            if (keep != 0) std::memcpy(bigger.get(), data_.get(), keep);
            data_ = std::move(bigger);
            capacity_ = grown;
        }
        return data_.get();
    }

private:
    static constexpr std::size_t min_bytes = 1024;
    std::size_t limit_;
    std::size_t capacity_ = 0;
    std::unique_ptr<char[]> data_;
};

struct BodyPiece {
    // What this read gave so far: a view into the read buffer, or into
    // the spill buffer once a second piece was added.
    std::string_view piece;
    SpillBuffer* spill = nullptr;

    // Before each read: nothing given yet; pieces after the first go to
    // `spill_buffer`.
    void start(SpillBuffer& spill_buffer) {
        piece = {};
        spill = &spill_buffer;
    }
    bool in_spill() const { return !piece.empty() && spill->made() != nullptr && piece.data() == spill->made(); }

    // Takes what the parser gives of this read's body; returns how much
    // (need_buffer when the spill buffer is full: the rest next read).
    std::size_t take(std::string_view given, boost::system::error_code& ec) {
        ec = {};
        if (given.empty()) return 0;
        if (piece.empty()) {
            piece = given;
            return given.size();
        }
        const std::size_t limit = spill->limit();
        if (!in_spill()) {
            if (piece.size() > limit) {  // cannot join: take this one next read
                ec = boost::beast::http::error::need_buffer;
                return 0;
            }
            char* joined = spill->hold(std::min(limit, piece.size() + given.size()), 0);
            std::memcpy(joined, piece.data(), piece.size());
            piece = {joined, piece.size()};
        }
        const std::size_t room = limit - piece.size();
        if (room == 0) {
            ec = boost::beast::http::error::need_buffer;
            return 0;
        }
        const std::size_t n = std::min(room, given.size());
        char* joined = spill->hold(piece.size() + n, piece.size());
        std::memcpy(joined + piece.size(), given.data(), n);
        piece = {joined, piece.size() + n};
        return n;
    }
};

}  // namespace modelproxy::transport
