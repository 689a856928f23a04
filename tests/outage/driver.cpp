#include "outage/driver.hpp"

#include <ctime>
#include <fstream>

namespace modelproxy::outage {

std::string now_utc() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%MZ", std::gmtime(&t));
    return buf;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

}  // namespace modelproxy::outage
