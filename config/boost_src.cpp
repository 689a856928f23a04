// Boost.URL and Boost.JSON compiled once for the whole program.
#include <boost/json/src.hpp>
#include <boost/url/src.hpp>
