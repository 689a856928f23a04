#include "proxy/json_string.hpp"

#include <boost/json/serializer.hpp>

#include <algorithm>

namespace modelproxy::proxy {

void append_json_string(std::string& out, std::string_view text) {
    const bool plain = std::all_of(text.begin(), text.end(),
                                   [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (plain) {
        out.push_back('"');
        out.append(text);
        out.push_back('"');
        return;
    }
    boost::json::serializer serializer;
    serializer.reset(boost::json::string_view(text.data(), text.size()));
    char chunk[512];
    while (!serializer.done()) {
        const boost::json::string_view part = serializer.read(chunk);
        out.append(part.data(), part.size());
    }
}

}  // namespace modelproxy::proxy
