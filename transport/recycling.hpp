// A per-thread recycling allocator for the small blocks every request makes
// and frees again: Beast's header fields (one block per field, one for the
// request target or reason) on both sides of the proxy. With std::allocator
// each of those was a malloc and a free per request; here a freed
// block goes onto its thread's free list for its size class and the next
// request takes it back, so a warmed-up worker allocates nothing for them.
// (Asio's coroutine frames and operations take Asio's own per-thread
// recycling: it has no public way to hand them another allocator for
// frames.)
//
// Stateless (every instance compares equal), so it can stand where
// std::allocator stood. A block freed on another thread than the one that
// allocated it is simply kept by that thread: the lists hold plain
// operator-new memory. Each list keeps at most `max_cached_bytes` per class,
// so what a burst leaves behind is bounded (16 classes x 64 KiB per thread).
#pragma once

#include <boost/beast/http/fields.hpp>

#include <cstddef>
#include <new>

namespace modelproxy::transport {

namespace recycling {

inline constexpr std::size_t granule = 64;      // size classes are multiples of this
inline constexpr std::size_t classes = 16;      // up to 1 KiB; larger blocks are not kept
inline constexpr std::size_t max_cached_bytes = 64 * 1024;  // per class and thread

void* allocate(std::size_t bytes);
void deallocate(void* p, std::size_t bytes) noexcept;

}  // namespace recycling

template <class T>
struct RecyclingAllocator {
    using value_type = T;

    RecyclingAllocator() noexcept = default;
    template <class U>
    RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned types are not recycled");
        return static_cast<T*>(recycling::allocate(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) noexcept { recycling::deallocate(p, n * sizeof(T)); }

    template <class U>
    bool operator==(const RecyclingAllocator<U>&) const noexcept { return true; }
};

// Header fields whose blocks are recycled (see above): the proxy's parsers
// and the heads they produce use these.
using Fields = boost::beast::http::basic_fields<RecyclingAllocator<char>>;

}  // namespace modelproxy::transport
