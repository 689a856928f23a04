#include "transport/reactor_flag.hpp"

#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/version.hpp>

#include <type_traits>

#if BOOST_VERSION != 108100
#error "transport/reactor_flag.cpp reads Boost 1.81's epoll reactor: check it against this Boost's, then update this line"
#endif
#if !defined(BOOST_ASIO_HAS_EPOLL) || defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#error "transport/reactor_flag.cpp needs Asio's epoll reactor"
#endif

namespace modelproxy::transport::reactor_flag {

namespace {

namespace detail = boost::asio::detail;
using State = detail::epoll_reactor::descriptor_state;
static_assert(std::is_same_v<detail::reactor, detail::epoll_reactor>);
static_assert(std::is_same_v<detail::reactor::per_descriptor_data, State*>);

// State::try_speculative_ (private): named in an explicit instantiation,
// whose names are not access-checked, and handed out by a friend function.
using Flags = bool (State::*)[detail::epoll_reactor::max_ops];
Flags speculative();
template <Flags member>
struct Reach {
    friend Flags speculative() { return member; }
};
template struct Reach<&State::try_speculative_>;

// The socket's reactor state: basic_socket's protected implementation,
// reached through a derived class.
struct Access : Socket {
    static State* state(Socket& socket) { return (socket.*(&Access::impl_)).get_implementation().reactor_data_; }
};

}  // namespace

bool read_may_find_bytes(Socket& socket) {
    State* state = Access::state(socket);
    return state == nullptr || (state->*speculative())[detail::epoll_reactor::read_op];
}

void note_drained(Socket& socket) {
    if (State* state = Access::state(socket)) (state->*speculative())[detail::epoll_reactor::read_op] = false;
}

}  // namespace modelproxy::transport::reactor_flag
