// proxy/stream_relay.hpp's RelayOut: a read's checked events, kept as one
// view while they follow each other in the read, copied otherwise, and
// always given back in the order they were added.
#include "proxy/stream_relay.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using modelproxy::proxy::RelayOut;

namespace {

std::string all(const RelayOut& out) { return std::string(out.text()) + std::string(out.view()); }

}  // namespace

TEST_CASE("relay out: adjacent views are one view, nothing copied", "[relay_out]") {
    const std::string read = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    const std::string_view r = read;
    RelayOut out;
    out.add_view(r.substr(0, 9));
    out.add_view(r.substr(9, 9));
    out.add_view(r.substr(18));
    CHECK(out.text().empty());
    CHECK(out.view().data() == read.data());
    CHECK(out.view() == read);
    CHECK(out.size() == read.size());
}

TEST_CASE("relay out: a view that does not follow, and a copy, keep the order", "[relay_out]") {
    const std::string read = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    const std::string_view r = read;
    std::string held = "held\n\n";
    RelayOut out;
    out.take(held);
    CHECK(held.empty());
    out.add_view(r.substr(0, 9));
    out.add_view(r.substr(18));  // skips "data: 2": the first view is copied
    CHECK(out.text() == "held\n\ndata: 1\n\n");
    CHECK(out.view() == "data: 3\n\n");
    out.add_copy("closing\n\n");
    CHECK(out.view().empty());
    CHECK(all(out) == "held\n\ndata: 1\n\ndata: 3\n\nclosing\n\n");
}

TEST_CASE("relay out: cut_to goes back to a size in either part", "[relay_out]") {
    const std::string read = "data: 1\n\ndata: 2\n\n";
    const std::string_view r = read;
    std::string held = "held\n\n";
    RelayOut out;
    out.take(held);
    out.add_view(r);
    out.cut_to(6 + 9);  // inside the view
    CHECK(all(out) == "held\n\ndata: 1\n\n");
    out.cut_to(4);  // inside the copied part
    CHECK(all(out) == "held");
    CHECK(out.view().empty());
    out.clear();
    CHECK(out.empty());
    CHECK(out.size() == 0);
}
