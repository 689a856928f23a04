// Where Asio's per-thread handler and coroutine-frame memory comes from
// (issue 7). Asio keeps a few freed blocks per purpose in a small array per
// thread and scans it on every allocation; on a miss it frees one cached block
// and calls aligned_alloc. At 64 connections one epoll_wait starts and ends
// dozens of turns at once, so the array empties and overflows in bursts:
// about 12 aligned_alloc and 15 free per request, and glibc's malloc about
// 4 % of the proxy's CPU.
//
// Here those purposes take their memory from the proxy's own per-thread size
// class lists (recycling.hpp): a push or pop per block, and room for a
// burst. The functions specialised are Asio's own allocation points
// (thread_info_base::allocate/deallocate for one purpose tag each), so every
// coroutine frame, posted function, cancellation handler and parallel group
// Asio makes goes through them. Not the default purpose (each asynchronous
// operation's own state): thread_info_base uses it in its own inline
// functions, so it cannot be specialised here; it keeps Asio's array
// (BOOST_ASIO_RECYCLING_ALLOCATOR_CACHE_SIZE, CMakeLists.txt).
//
// Measured at 64 connections (an LD_PRELOAD counter): aligned_alloc calls
// per request 12.5 -> 0.3, free 15.6 -> 1.8; user CPU per request about
// 1 us less.
//
// An explicit specialisation must be seen before any use of the function in
// every translation unit: this header is the first line of transport/pch.hpp
// and of transport/executor.hpp, through which the project reaches Asio.
#pragma once

#include <boost/asio/detail/thread_info_base.hpp>

#include <boost/assert.hpp>

#include <cstddef>

// recycling.hpp's two functions, declared here rather than included: that
// header brings Beast's, which must come after this one.
namespace modelproxy::transport::recycling {
void* allocate(std::size_t bytes);
void deallocate(void* p, std::size_t bytes) noexcept;
}  // namespace modelproxy::transport::recycling

namespace boost::asio::detail {

#define MODELPROXY_RECYCLE_PURPOSE(Tag)                                                                      \
    template <>                                                                                               \
    inline void* thread_info_base::allocate<thread_info_base::Tag>(thread_info_base::Tag, thread_info_base*, \
                                                                   std::size_t size, std::size_t align) {    \
        BOOST_ASSERT(align <= alignof(std::max_align_t)); /* operator new's alignment */                      \
        return ::modelproxy::transport::recycling::allocate(size);                                           \
    }                                                                                                         \
    template <>                                                                                               \
    inline void thread_info_base::deallocate<thread_info_base::Tag>(thread_info_base::Tag, thread_info_base*, \
                                                                    void* pointer, std::size_t size) {        \
        ::modelproxy::transport::recycling::deallocate(pointer, size);                                       \
    }

MODELPROXY_RECYCLE_PURPOSE(awaitable_frame_tag)
MODELPROXY_RECYCLE_PURPOSE(executor_function_tag)
MODELPROXY_RECYCLE_PURPOSE(cancellation_signal_tag)
MODELPROXY_RECYCLE_PURPOSE(parallel_group_tag)

#undef MODELPROXY_RECYCLE_PURPOSE

}  // namespace boost::asio::detail
