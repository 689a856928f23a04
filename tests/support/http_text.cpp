#include "support/http_text.hpp"

#include <boost/beast/http/status.hpp>

#include <cstdio>

namespace modelproxy::test {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

void append_headers(std::string& out, const Headers& headers) {
    for (const auto& h : headers) {
        out += h.name;
        out += ": ";
        out += h.value;
        out += "\r\n";
    }
    out += "\r\n";
}

}  // namespace

bool header_name_equals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

std::optional<std::string> find_header(const Headers& headers, std::string_view name) {
    for (const auto& h : headers)
        if (header_name_equals(h.name, name)) return h.value;
    return std::nullopt;
}

std::size_t count_header(const Headers& headers, std::string_view name) {
    std::size_t n = 0;
    for (const auto& h : headers)
        if (header_name_equals(h.name, name)) ++n;
    return n;
}

std::string format_response_head(unsigned status, const Headers& headers, std::string_view reason) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
    if (reason.empty())
        out += std::string(boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status)));
    else
        out += reason;
    out += "\r\n";
    append_headers(out, headers);
    return out;
}

std::string format_request(std::string_view method, std::string_view target, const Headers& headers,
                           std::string_view body) {
    std::string out;
    out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
    append_headers(out, headers);
    out.append(body);
    return out;
}

std::string format_chunk(std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out = size;
    out.append(data);
    out += "\r\n";
    return out;
}

}  // namespace modelproxy::test
