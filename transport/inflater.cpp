#include "transport/inflater.hpp"

#include <zlib.h>

#include <cstring>

namespace modelproxy::transport {

struct Inflater::State {
    z_stream z{};
    bool ok = false;
    bool raw_retry_possible = false;  // "deflate" sent as raw DEFLATE instead of zlib
    bool started = false;
    bool finished = false;
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

bool Inflater::feed(std::string_view in, std::string& out) {
    State& s = *state_;
    if (!s.ok) return false;
    if (s.finished) return in.empty();
    s.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    s.z.avail_in = static_cast<uInt>(in.size());
    unsigned char chunk[16384];
    while (s.z.avail_in > 0) {
        s.z.next_out = chunk;
        s.z.avail_out = sizeof chunk;
        int rc = inflate(&s.z, Z_NO_FLUSH);
        if (rc == Z_DATA_ERROR && !s.started && s.raw_retry_possible) {
            s.raw_retry_possible = false;
            inflateEnd(&s.z);
            std::memset(&s.z, 0, sizeof s.z);
            s.ok = inflateInit2(&s.z, -15) == Z_OK;
            if (!s.ok) return false;
            s.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
            s.z.avail_in = static_cast<uInt>(in.size());
            continue;
        }
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return false;
        s.started = true;
        out.append(reinterpret_cast<char*>(chunk), sizeof chunk - s.z.avail_out);
        if (rc == Z_STREAM_END) {
            s.finished = true;
            return true;
        }
        if (rc == Z_BUF_ERROR && s.z.avail_out == sizeof chunk) return false;
    }
    return true;
}

}  // namespace modelproxy::transport
