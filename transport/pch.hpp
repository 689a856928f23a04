// Precompiled for every target that links mp_transport: Asio and Beast are
// the slow headers of this build.
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
