#include "sse/byte_buffer.hpp"

#include <algorithm>
#include <cstring>

namespace modelproxy::sse {

void ByteBuffer::append(std::string_view bytes) {
    if (bytes.empty()) return;
    const std::size_t needed = size_ + bytes.size() + slack;
    if (needed > capacity_) {
        // Geometric growth keeps a multi-megabyte event linear; the new
        // storage is value-initialised so the slack is never indeterminate.
        const std::size_t grown = std::max(needed, capacity_ + capacity_ / 2);
        std::unique_ptr<char[]> fresh(new char[grown]());
        if (size_ != 0) std::memcpy(fresh.get(), data_.get(), size_);
        data_ = std::move(fresh);
        capacity_ = grown;
    }
    std::memcpy(data_.get() + size_, bytes.data(), bytes.size());
    size_ += bytes.size();
}

void ByteBuffer::drop_front(std::size_t n) {
    n = std::min(n, size_);
    if (n == 0) return;
    std::memmove(data_.get(), data_.get() + n, size_ - n);
    size_ -= n;
}

void ByteBuffer::clear_and_trim(std::size_t keep) {
    size_ = 0;
    if (capacity_ > keep) {
        data_.reset();
        capacity_ = 0;
    }
}

}  // namespace modelproxy::sse
