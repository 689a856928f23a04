#include "transport/inflater.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace modelproxy::transport {

struct Inflater::State {
    z_stream z{};
    bool ok = false;
    bool raw_retry_possible = false;  // "deflate" sent as raw DEFLATE instead of zlib
    bool started = false;
    bool finished = false;
    bool output_held = false;  // the last inflate() filled its output: it may hold more
    std::string_view input;    // the input as given, for the raw retry
};

Inflater::Inflater(Coding coding) : state_(std::make_unique<State>()) {
    // 15 + 32: zlib or gzip header, detected. Servers that send "deflate" as raw
    // DEFLATE (no zlib header) are common enough to retry with -15 once.
    state_->ok = inflateInit2(&state_->z, 15 + 32) == Z_OK;
    state_->raw_retry_possible = coding == Coding::deflate;
}

Inflater::~Inflater() {
    if (state_->ok) inflateEnd(&state_->z);
}

void Inflater::set_input(std::string_view in) {
    State& s = *state_;
    s.input = in;
    s.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    s.z.avail_in = static_cast<uInt>(in.size());
}

bool Inflater::pending() const {
    const State& s = *state_;
    return s.ok && !s.finished && (s.z.avail_in > 0 || s.output_held);
}

bool Inflater::decode(std::string& out, std::size_t max_out) {
    State& s = *state_;
    if (!s.ok) return false;
    if (s.finished) {
        // Bytes after the end of the compressed stream: in the input that
        // ended it they are ignored (below); in a later one, not a body.
        const bool extra = s.z.avail_in > 0;
        s.z.avail_in = 0;
        return !extra;
    }
    unsigned char chunk[16384];
    std::size_t produced = 0;
    while ((s.z.avail_in > 0 || s.output_held) && produced < max_out) {
        const uInt room = static_cast<uInt>(std::min(sizeof chunk, max_out - produced));
        s.z.next_out = chunk;
        s.z.avail_out = room;
        const int rc = inflate(&s.z, Z_NO_FLUSH);
        if (rc == Z_DATA_ERROR && !s.started && s.raw_retry_possible) {
            s.raw_retry_possible = false;
            inflateEnd(&s.z);
            std::memset(&s.z, 0, sizeof s.z);
            s.ok = inflateInit2(&s.z, -15) == Z_OK;
            if (!s.ok) return false;
            set_input(s.input);
            continue;
        }
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return false;
        s.started = true;
        const std::size_t n = room - s.z.avail_out;
        out.append(reinterpret_cast<char*>(chunk), n);
        produced += n;
        // zlib may hold decoded bytes it had no room for, even with all
        // input taken: they come out on the next call.
        s.output_held = s.z.avail_out == 0;
        if (rc == Z_STREAM_END) {
            s.finished = true;
            s.output_held = false;
            s.z.avail_in = 0;
            return true;
        }
        if (rc == Z_BUF_ERROR && n == 0) {
            if (s.z.avail_in > 0) return false;  // input left, yet no progress
            s.output_held = false;               // nothing held after all: more input needed
        }
    }
    return true;
}

}  // namespace modelproxy::transport
