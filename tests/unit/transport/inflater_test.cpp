// transport/inflater.hpp: a gzip or deflate body decoded in bounded steps
// (docs/behaviour.md section 8: decoded bytes count against the limits, so a bomb is
// never decoded whole before they are checked).
#include "transport/inflater.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <stdexcept>
#include <string>

using modelproxy::transport::Inflater;

namespace {

// zlib's one-shot compression: window_bits 15 + 16 gzip, 15 zlib, -15 raw DEFLATE.
std::string compress(const std::string& data, int window_bits) {
    z_stream z{};
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("deflateInit2");
    std::string out(deflateBound(&z, static_cast<uLong>(data.size())) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// Every piece of `compressed` (cut every `piece` bytes) decoded in steps of
// at most `step` bytes; each step is checked against the bound.
std::string decode_all(Inflater& inflater, const std::string& compressed, std::size_t piece, std::size_t step) {
    std::string out;
    for (std::size_t at = 0; at < compressed.size(); at += piece) {
        REQUIRE_FALSE(inflater.pending());
        inflater.set_input(std::string_view(compressed).substr(at, piece));
        while (inflater.pending()) {
            const std::size_t before = out.size();
            REQUIRE(inflater.decode(out, step));
            REQUIRE(out.size() - before <= step);
        }
    }
    return out;
}

std::string sample() {
    std::string text;
    for (int i = 0; text.size() < 300000; ++i) text += "data: {\"n\":" + std::to_string(i) + "}\n\n";
    return text;
}

}  // namespace

TEST_CASE("a bomb's input decodes at most one step per call", "[inflater]") {
    const std::string bomb = compress(std::string(64 << 20, 'x'), 15 + 16);
    REQUIRE(bomb.size() < 128 * 1024);
    Inflater inflater(Inflater::Coding::gzip);
    inflater.set_input(bomb);
    std::string out;
    REQUIRE(inflater.decode(out, 65536));
    CHECK(out.size() == 65536);
    CHECK(inflater.pending());
    REQUIRE(inflater.decode(out, 1000));
    CHECK(out.size() == 66536);
    CHECK(out == std::string(66536, 'x'));
}

TEST_CASE("decoded in steps, whatever the pieces and step sizes, the body is whole", "[inflater]") {
    const std::string text = sample();
    const auto [coding, bits] = GENERATE(table<Inflater::Coding, int>({
        {Inflater::Coding::gzip, 15 + 16},
        {Inflater::Coding::deflate, 15},   // zlib-wrapped, as RFC 9110 says
        {Inflater::Coding::deflate, -15},  // raw DEFLATE, as some servers send it
    }));
    const std::string compressed = compress(text, bits);
    for (const auto& [piece, step] : {std::pair<std::size_t, std::size_t>{compressed.size(), 65536},
                                      {1, 65536}, {4096, 1}, {777, 16384}, {compressed.size(), 100000000}}) {
        CAPTURE(bits, piece, step);
        // Raw DEFLATE is told from zlib's format by its first piece's first
        // two bytes: a first piece of one byte cannot tell.
        if (bits == -15 && piece == 1) continue;
        Inflater inflater(coding);
        CHECK(decode_all(inflater, compressed, piece, step) == text);
        CHECK_FALSE(inflater.pending());
    }
}

TEST_CASE("corrupt input, and bytes after the end in a later input, fail", "[inflater]") {
    Inflater corrupt(Inflater::Coding::gzip);
    corrupt.set_input("this is not gzip");
    std::string out;
    CHECK_FALSE(corrupt.decode(out, 65536));

    const std::string compressed = compress("hello", 15 + 16);
    Inflater after(Inflater::Coding::gzip);
    const std::string with_trailing = compressed + "trailing";
    after.set_input(with_trailing);  // bytes after the end in the input that ended it: ignored
    CHECK(after.decode(out, 65536));
    CHECK(out == "hello");
    CHECK_FALSE(after.pending());
    after.set_input("more");
    CHECK_FALSE(after.decode(out, 65536));
}
