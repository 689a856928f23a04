#include "transport/reactor_flag.hpp"

#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/version.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
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

// State::reactor_ (private): the reactor the socket is registered with.
using Owner = detail::epoll_reactor* State::*;
Owner owner();
template <Owner member>
struct ReachOwner {
    friend Owner owner() { return member; }
};
template struct ReachOwner<&State::reactor_>;

// The socket's reactor state: basic_socket's protected implementation,
// reached through a derived class.
struct Access : Socket {
    static State*& state(Socket& socket) { return (socket.*(&Access::impl_)).get_implementation().reactor_data_; }
};

}  // namespace

namespace internal {

State*& data_of(Socket& socket) { return Access::state(socket); }

void WaitCancellation::operator()(boost::asio::cancellation_type_t type) {
    using boost::asio::cancellation_type;
    if (!!(type & (cancellation_type::terminal | cancellation_type::partial | cancellation_type::total)))
        reactor->cancel_ops_by_key(descriptor, *data, detail::epoll_reactor::read_op, this);
}

boost::asio::detail::epoll_reactor& reactor_of(State& state) {
    // The socket's own registration names its reactor: no lookup in the
    // context's services (use_service takes their mutex), and no cache that
    // a later io_context at the same address could make stale.
    return *(state.*owner());
}

}  // namespace internal

bool report_rest(Socket& socket) {
    const int on = 1;
    return ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
}

std::size_t read_with_rest(Socket& socket, boost::asio::mutable_buffer buffer, boost::system::error_code& ec,
                           int& rest) {
    rest = -1;
    iovec io{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = ::recvmsg(socket.native_handle(), &message, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        ec = (errno == EAGAIN || errno == EWOULDBLOCK)
                 ? boost::system::error_code(boost::asio::error::would_block)
                 : boost::system::error_code(errno, boost::system::system_category());
        return 0;
    }
    if (n == 0) {
        ec = boost::asio::error::eof;
        return 0;
    }
    ec = {};
    // TCP_CM_INQ: the bytes still queued after this read, or 1 when none are
    // but a FIN is (tcp_inq_hint). Absent (TCP_INQ off, truncated control):
    // unknown.
    if ((message.msg_flags & MSG_CTRUNC) != 0) return static_cast<std::size_t>(n);
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level != SOL_TCP || c->cmsg_type != TCP_CM_INQ || c->cmsg_len < CMSG_LEN(sizeof(int))) continue;
        std::memcpy(&rest, CMSG_DATA(c), sizeof rest);
    }
    return static_cast<std::size_t>(n);
}

bool read_may_find_bytes(Socket& socket) {
    State* state = Access::state(socket);
    return state == nullptr || (state->*speculative())[detail::epoll_reactor::read_op];
}

void note_unknown(Socket& socket) {
    if (State* state = Access::state(socket)) (state->*speculative())[detail::epoll_reactor::read_op] = true;
}

void note_drained(Socket& socket) {
    if (State* state = Access::state(socket)) (state->*speculative())[detail::epoll_reactor::read_op] = false;
}

}  // namespace modelproxy::transport::reactor_flag
