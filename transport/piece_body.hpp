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

// Where a read's body pieces are joined when there are several: its memory
// is taken when a read first needs it (most answers never do) and kept
// from then on (a pooled connection serves many answers). An upstream
// connection holds one (upstream.hpp).
class SpillBuffer {
public:
    explicit SpillBuffer(std::size_t capacity = 65536) : capacity_(capacity) {}
    std::size_t capacity() const { return capacity_; }
    // The memory, made on the first call.
    char* data() {
        if (!data_) data_ = std::make_unique_for_overwrite<char[]>(capacity_);
        return data_.get();
    }
    // The memory if it was made, else null: no allocation.
    const char* made() const { return data_.get(); }

private:
    std::size_t capacity_;
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
        const std::size_t capacity = spill->capacity();
        if (!in_spill()) {
            if (piece.size() > capacity) {  // cannot join: take this one next read
                ec = boost::beast::http::error::need_buffer;
                return 0;
            }
            char* joined = spill->data();
            std::memcpy(joined, piece.data(), piece.size());
            piece = {joined, piece.size()};
        }
        const std::size_t room = capacity - piece.size();
        if (room == 0) {
            ec = boost::beast::http::error::need_buffer;
            return 0;
        }
        const std::size_t n = std::min(room, given.size());
        char* joined = spill->data();
        std::memcpy(joined + piece.size(), given.data(), n);
        piece = {joined, piece.size() + n};
        return n;
    }
};

}  // namespace modelproxy::transport
