// The per-thread recycling allocator (transport/recycling.hpp) that the
// proxy's header fields use.
#include "transport/recycling.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <thread>

namespace recycling = modelproxy::transport::recycling;
using modelproxy::transport::Fields;
using modelproxy::transport::RecyclingAllocator;

TEST_CASE("a freed block is handed back for the next block of its size class", "[recycling]") {
    void* first = recycling::allocate(100);
    recycling::deallocate(first, 100);
    void* again = recycling::allocate(90);  // 65..128 bytes: the same class
    CHECK(again == first);
    recycling::deallocate(again, 90);
}

TEST_CASE("a kept block is not handed out for a larger size class", "[recycling]") {
    void* small = recycling::allocate(64);
    recycling::deallocate(small, 64);
    void* large = recycling::allocate(65);  // the next class up
    CHECK(large != small);
    // Writing the whole block must be safe (ASan builds check it).
    std::fill_n(static_cast<char*>(large), 65, 'x');
    recycling::deallocate(large, 65);
    void* small_again = recycling::allocate(1);
    CHECK(small_again == small);
    recycling::deallocate(small_again, 1);
}

TEST_CASE("each thread keeps its own blocks", "[recycling]") {
    void* mine = recycling::allocate(200);
    recycling::deallocate(mine, 200);
    void* theirs = nullptr;
    std::thread([&] {
        theirs = recycling::allocate(200);
        recycling::deallocate(theirs, 200);
    }).join();
    CHECK(theirs != mine);
    void* again = recycling::allocate(200);
    CHECK(again == mine);
    recycling::deallocate(again, 200);
}

TEST_CASE("header fields on the recycling allocator behave as Beast's usual ones", "[recycling]") {
    Fields fields;
    fields.set("Content-Type", "application/json");
    fields.insert("X-Many", "1");
    fields.insert("x-many", "2");
    fields.set(boost::beast::http::field::content_length, "672");
    CHECK(fields["content-type"] == "application/json");
    CHECK(fields.count("X-MANY") == 2);
    fields.erase("x-many");
    CHECK(fields.count("x-many") == 0);
    CHECK(fields[boost::beast::http::field::content_length] == "672");
    Fields copy = fields;
    fields.clear();
    CHECK(copy["Content-Type"] == "application/json");
    CHECK(RecyclingAllocator<char>() == RecyclingAllocator<int>());
}
