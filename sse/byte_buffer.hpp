// A growable byte buffer whose storage past size() is always initialised and
// at least `slack` bytes long, so a parser that reads (never writes) a little
// beyond the end, like simdjson with its padding, may be handed a view into it
// without a copy. Capacity is kept across clear() (no allocation in the steady
// state) and given back by release().
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace modelproxy::sse {

class ByteBuffer {
public:
    static constexpr std::size_t slack = 64;  // >= SIMDJSON_PADDING (checked in inspect.cpp)

    const char* data() const { return data_.get(); }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // One past the last byte that may be read: size() + at least `slack`.
    const char* readable_end() const { return data_.get() + capacity_; }
    std::string_view view() const { return {data_.get(), size_}; }

    void append(std::string_view bytes);
    void push_back(char c) { append(std::string_view(&c, 1)); }
    // Drops the first n bytes, moving the rest to the front.
    void drop_front(std::size_t n);
    void clear() { size_ = 0; }
    // clear(), and give the storage back when it grew beyond `keep` bytes.
    void clear_and_trim(std::size_t keep);

private:
    std::unique_ptr<char[]> data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

}  // namespace modelproxy::sse
