#include "transport/recycling.hpp"


namespace modelproxy::transport::recycling {

namespace {

struct Block {
    Block* next;
};

// One list per size class. Trivially destructible, so it stays usable after
// the thread's destructors have run (a block freed that late is deleted);
// the Reaper frees the kept blocks when the thread ends.
struct Lists {
    Block* head[classes];
    std::size_t count[classes];
    bool ended;
};
thread_local Lists lists_of_thread{};

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
    ~Reaper() {
        free_all(lists_of_thread);
        lists_of_thread.ended = true;
    }
};

Lists& lists() {
    thread_local Reaper reaper;  // constructed on the thread's first use
    (void)reaper;
    return lists_of_thread;
}

// 1..classes for a kept size, 0 for one that goes straight to operator new.
std::size_t class_of(std::size_t bytes) {
    const std::size_t c = (bytes + granule - 1) / granule;
    return c <= classes ? c : 0;
}

}  // namespace

void* allocate(std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (c == 0) return ::operator new(bytes);
    Lists& l = lists();
    if (Block* b = l.head[c - 1]) {
        l.head[c - 1] = b->next;
        --l.count[c - 1];
        return b;
    }
    // The whole class size, so any later block of this class fits in it.
    return ::operator new(c * granule);
}

void deallocate(void* p, std::size_t bytes) noexcept {
    const std::size_t c = class_of(bytes);
    if (c == 0) {
        ::operator delete(p);
        return;
    }
    Lists& l = lists();
    if (l.ended || l.count[c - 1] * c * granule >= max_cached_bytes) {
        ::operator delete(p);
        return;
    }
    auto* b = static_cast<Block*>(p);
    b->next = l.head[c - 1];
    l.head[c - 1] = b;
    ++l.count[c - 1];
}

}  // namespace modelproxy::transport::recycling
