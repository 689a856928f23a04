// Decodes a gzip or deflate response body incrementally (zlib), so a
// compressed stream can still be relayed event by event (docs/behaviour.md section 4:
// upstream answers are passed on unencoded).
//
// Decoding goes in bounded steps (docs/behaviour.md section 8: memory is bounded whatever
// the upstream sends, decoded bytes counting against the limits): a few
// kilobytes of a gzip bomb can decode to gigabytes, so one read's input is
// never decoded whole. The caller hands over a read's bytes (set_input),
// takes at most `max_out` decoded bytes per decode() and checks them against
// its limits before asking for more; a caller that stops, stops decoding.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace modelproxy::transport {

class Inflater {
public:
    enum class Coding { gzip, deflate };
    explicit Inflater(Coding coding);
    ~Inflater();
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;

    // The next compressed bytes. They are not copied: they must stay valid
    // until pending() is false. Only when pending() is false.
    void set_input(std::string_view in);

    // Appends at most `max_out` (> 0) decoded bytes of the input to `out`.
    // False on corrupt input, or compressed bytes after the end of the
    // compressed stream that arrive in a later input.
    bool decode(std::string& out, std::size_t max_out);

    // Input not decoded yet, or decoded bytes zlib still holds: decode()
    // again before the next set_input().
    bool pending() const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace modelproxy::transport
