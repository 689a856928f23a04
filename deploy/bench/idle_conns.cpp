// Holds COUNT keep-alive connections open to a proxy, each having sent one
// request and read its whole answer, so deploy/bench/run can read the
// proxy's RSS with that many idle clients. Plain POSIX sockets and poll, no
// dependencies; compiled by deploy/bench/run with g++.
//
//   idle_conns HOST PORT COUNT REQUEST_FILE [IN_FLIGHT]
//
// REQUEST_FILE holds one raw HTTP/1.1 request (deploy/bench/bodies.sh writes
// it). At most IN_FLIGHT (default 16) requests are outstanding at once, so
// the proxy sees a steady trickle rather than a 1000-request burst: what is
// measured is the cost of idle connections, not of a burst. When every
// answer has arrived it prints one line, `ready ok=N failed=M`, and then
// holds the connections until it is killed (SIGTERM) or 600 s have passed.
// Exit 1 when a connection cannot be set up or the setup takes over 60 s.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct Conn {
    int fd = -1;
    std::size_t sent = 0;
    std::string in;
    bool started = false;
    bool done = false;
    bool ok = false;
};

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// True once `in` holds one whole response: a head and then Content-Length
// bytes, or a chunked body up to its last chunk.
bool response_complete(const std::string& in) {
    const std::size_t head_end = in.find("\r\n\r\n");
    if (head_end == std::string::npos) return false;
    const std::string head = lower(in.substr(0, head_end));
    const std::size_t body = head_end + 4;
    const std::size_t cl = head.find("\r\ncontent-length:");
    if (cl != std::string::npos) {
        const std::size_t length = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
        return in.size() >= body + length;
    }
    if (head.find("chunked") != std::string::npos) return in.find("\r\n0\r\n\r\n", body - 2) != std::string::npos;
    return false;  // no length: the answer would end at close, which is not a keep-alive answer
}

int open_connection(const sockaddr_in& address) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: idle_conns HOST PORT COUNT REQUEST_FILE [IN_FLIGHT]\n");
        return 2;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[2])));
    if (::inet_pton(AF_INET, argv[1], &address.sin_addr) != 1) {
        std::fprintf(stderr, "idle_conns: bad IPv4 address %s\n", argv[1]);
        return 2;
    }
    const std::size_t count = std::strtoull(argv[3], nullptr, 10);
    std::ifstream file(argv[4], std::ios::binary);
    const std::string request((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const std::size_t in_flight = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 16;
    if (request.empty() || count == 0 || in_flight == 0) {
        std::fprintf(stderr, "idle_conns: empty request file, COUNT or IN_FLIGHT\n");
        return 2;
    }

    std::vector<Conn> conns(count);
    for (Conn& c : conns) {
        c.fd = open_connection(address);
        if (c.fd < 0) {
            std::fprintf(stderr, "idle_conns: connect: %s\n", std::strerror(errno));
            return 1;
        }
    }

    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::size_t next = 0, active = 0, finished = 0;
    std::vector<pollfd> fds;
    std::vector<std::size_t> index;
    char buffer[65536];
    while (finished < count) {
        while (active < in_flight && next < count) {
            conns[next++].started = true;
            ++active;
        }
        fds.clear();
        index.clear();
        for (std::size_t i = 0; i < count; ++i) {
            Conn& c = conns[i];
            if (!c.started || c.done) continue;
            const short events = c.sent < request.size() ? POLLOUT : POLLIN;
            fds.push_back({c.fd, events, 0});
            index.push_back(i);
        }
        if (std::chrono::steady_clock::now() > give_up) {
            std::fprintf(stderr, "idle_conns: %zu of %zu answers after 60 s\n", finished, count);
            return 1;
        }
        if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) return 1;
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (fds[k].revents == 0) continue;
            Conn& c = conns[index[k]];
            bool failed = false;
            if (c.sent < request.size()) {
                const ssize_t n = ::send(c.fd, request.data() + c.sent, request.size() - c.sent, MSG_NOSIGNAL);
                if (n > 0) c.sent += static_cast<std::size_t>(n);
                else if (n < 0 && errno != EAGAIN) failed = true;
            } else {
                const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
                if (n > 0) c.in.append(buffer, static_cast<std::size_t>(n));
                else if (n == 0 || errno != EAGAIN) failed = true;
            }
            if (failed || response_complete(c.in)) {
                c.done = true;
                c.ok = !failed && c.in.compare(0, 12, "HTTP/1.1 200") == 0;
                c.in.clear();
                c.in.shrink_to_fit();
                --active;
                ++finished;
            }
        }
    }

    std::size_t ok = 0;
    for (const Conn& c : conns) ok += c.ok ? 1 : 0;
    std::printf("ready ok=%zu failed=%zu\n", ok, count - ok);
    std::fflush(stdout);
    ::sleep(600);  // hold the connections; the script kills us after reading RSS
    return 0;
}
