// Decodes a gzip or deflate response body incrementally (zlib), so a
// compressed stream can still be relayed event by event (SPEC section 4:
// upstream answers are passed on unencoded).
#pragma once

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

    // Appends the decoded bytes of `in` to `out`. False on corrupt input.
    bool feed(std::string_view in, std::string& out);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace modelproxy::transport
