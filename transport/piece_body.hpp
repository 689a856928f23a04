// Where an upstream answer's parser (AnswerParser, answer_parser.hpp) puts
// each read's body bytes: seen where they lie, in the connection's read
// buffer, instead of being copied into a body buffer first (issue 7).
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
#include <string_view>

namespace modelproxy::transport {

struct BodyPiece {
    // What this read gave so far: a view into the read buffer, or into
    // `spill` once a second piece was added.
    std::string_view piece;
    char* spill = nullptr;
    std::size_t spill_capacity = 0;

    // Before each read: nothing given yet; pieces after the first go to
    // `spill`.
    void start(char* spill_data, std::size_t capacity) {
        piece = {};
        spill = spill_data;
        spill_capacity = capacity;
    }
    bool in_spill() const { return !piece.empty() && piece.data() == spill; }

    // Takes what the parser gives of this read's body; returns how much
    // (need_buffer when the spill buffer is full: the rest next read).
    std::size_t take(std::string_view given, boost::system::error_code& ec) {
        ec = {};
        if (given.empty()) return 0;
        if (piece.empty()) {
            piece = given;
            return given.size();
        }
        if (!in_spill()) {
            if (piece.size() > spill_capacity) {  // cannot join: take this one next read
                ec = boost::beast::http::error::need_buffer;
                return 0;
            }
            std::memcpy(spill, piece.data(), piece.size());
            piece = {spill, piece.size()};
        }
        const std::size_t room = spill_capacity - piece.size();
        if (room == 0) {
            ec = boost::beast::http::error::need_buffer;
            return 0;
        }
        const std::size_t n = std::min(room, given.size());
        std::memcpy(spill + piece.size(), given.data(), n);
        piece = {spill, piece.size() + n};
        return n;
    }
};

}  // namespace modelproxy::transport
