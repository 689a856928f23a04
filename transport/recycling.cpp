#include "transport/recycling.hpp"

#include <array>
#include <cstdint>


namespace modelproxy::transport::recycling {

namespace {

struct Block {
    Block* next;
};

// One list per size class. Trivially destructible and constant-initialised,
// so that reaching it is a plain thread-local access (no guard, no
// registration) on every allocation, and it stays usable after the
// thread's destructors have run. The Reaper, registered on the thread's
// first allocation from operator new, frees the kept blocks when the thread
// ends; a thread that never registered one keeps nothing.
struct Lists {
    Block* head[classes];
    std::uint32_t count[classes];
    bool keeping;  // a Reaper is registered and has not run yet
    bool ended;    // the Reaper has run
};
constinit thread_local Lists lists_of_thread{};

// How many blocks of each class a list keeps: max_cached_bytes of them.
constexpr auto limits = [] {
    std::array<std::uint32_t, classes> l{};
    for (std::size_t c = 0; c < classes; ++c) l[c] = static_cast<std::uint32_t>(max_cached_bytes / ((c + 1) * granule));
    return l;
}();

void free_all(Lists& l) {
    for (std::size_t c = 0; c < classes; ++c) {
        while (Block* b = l.head[c]) {
            l.head[c] = b->next;
            ::operator delete(b);
        }
        l.count[c] = 0;
    }
}

struct Reaper {
    Reaper() { lists_of_thread.keeping = true; }
    ~Reaper() {
        lists_of_thread.keeping = false;
        lists_of_thread.ended = true;
        free_all(lists_of_thread);
    }
};

// Off the fast path: the first allocation of a thread that needs new memory.
[[gnu::noinline]] void start_keeping() { thread_local Reaper reaper; }

// 1..classes for a kept size, 0 for one that goes straight to operator new.
std::size_t class_of(std::size_t bytes) {
    const std::size_t c = (bytes + granule - 1) / granule;
    return c <= classes ? c : 0;
}

}  // namespace

void* allocate(std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (c == 0) return ::operator new(bytes);
    Lists& l = lists_of_thread;
    if (Block* b = l.head[c - 1]) {
        l.head[c - 1] = b->next;
        --l.count[c - 1];
        return b;
    }
    if (!l.keeping && !l.ended) start_keeping();
    // The whole class size, so any later block of this class fits in it.
    return ::operator new(c * granule);
}

void deallocate(void* p, std::size_t bytes) noexcept {
    const std::size_t c = class_of(bytes);
    Lists& l = lists_of_thread;
    if (c == 0 || !l.keeping || l.count[c - 1] >= limits[c - 1]) {
        ::operator delete(p);
        return;
    }
    auto* b = static_cast<Block*>(p);
    b->next = l.head[c - 1];
    l.head[c - 1] = b;
    ++l.count[c - 1];
}

}  // namespace modelproxy::transport::recycling
