// Runs one coroutine of the project's Executor (transport/executor.hpp) to
// its end on an io_context the test owns, on the test's thread, and returns
// its value (rethrowing its exception). Only until the coroutine ends: work
// it leaves behind (a connection's reader waiting on its socket) stays
// pending, and the next run continues it.
#pragma once

#include "transport/executor.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <optional>
#include <utility>

namespace modelproxy::test {

template <class T>
T run_task(boost::asio::io_context& io, transport::Task<T> task) {
    std::optional<T> value;
    std::exception_ptr error;
    bool done = false;
    boost::asio::co_spawn(io.get_executor(), std::move(task), [&](std::exception_ptr e, T v) {
        error = e;
        value = std::move(v);
        done = true;
    });
    if (io.stopped()) io.restart();
    while (!done) io.run_one();
    if (error) std::rethrow_exception(error);
    return std::move(*value);
}

inline void run_task(boost::asio::io_context& io, transport::Task<void> task) {
    std::exception_ptr error;
    bool done = false;
    boost::asio::co_spawn(io.get_executor(), std::move(task), [&](std::exception_ptr e) {
        error = e;
        done = true;
    });
    if (io.stopped()) io.restart();
    while (!done) io.run_one();
    if (error) std::rethrow_exception(error);
}

}  // namespace modelproxy::test
