#include "request/target.hpp"

#include "request/text.hpp"

namespace modelproxy::request {

namespace {

constexpr std::string_view models_prefix = "/v1/models/";

using policy::ascii_lower;

// The percent-escapes a path is refused for, found in one pass over its
// '%'s (memchr) rather than a comparison at every position.
struct PathEscapes {
    bool dot_or_slash = false;  // %2e, %2f
    bool backslash = false;     // %5c
};

PathEscapes path_escapes(std::string_view path) {
    PathEscapes found;
    for (std::size_t i = path.find('%'); i != std::string_view::npos && i + 2 < path.size();
         i = path.find('%', i + 1)) {
        const char hi = path[i + 1];
        const char lo = ascii_lower(path[i + 2]);
        if (hi == '2' && (lo == 'e' || lo == 'f')) found.dot_or_slash = true;
        if (hi == '5' && lo == 'c') found.backslash = true;
    }
    return found;
}

std::optional<std::string> percent_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        const int hi = hex_value(text[i + 1]);
        const int lo = hex_value(text[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

void append_percent_encoded(std::string& out, std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        if (unreserved) {
            out += c;
        } else {
            out += '%';
            out += hex[u >> 4];
            out += hex[u & 0xF];
        }
    }
}

}  // namespace

bool is_models_path(std::string_view path) {
    return path == "/v1/models" || (path.starts_with(models_prefix) && path.size() > models_prefix.size());
}

Target check_path(std::string_view target) {
    Target out;
    const std::size_t q = target.find('?');
    out.path = target.substr(0, q);
    out.query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
    if (target.empty() || target.front() != '/' || target.find('#') != std::string_view::npos) {
        out.status = TargetStatus::not_origin_form;
        return out;
    }
    std::string_view rest = out.path.substr(1);
    while (true) {
        const std::size_t slash = rest.find('/');
        if (rest.substr(0, slash) == "..") {
            out.status = TargetStatus::dot_dot_segment;
            return out;
        }
        if (slash == std::string_view::npos) break;
        rest.remove_prefix(slash + 1);
    }
    const PathEscapes escapes = path_escapes(out.path);
    if (escapes.dot_or_slash) {
        out.status = TargetStatus::encoded_dot_or_slash;
    } else if (out.path.find('\\') != std::string_view::npos || escapes.backslash) {
        out.status = TargetStatus::backslash;
    }
    return out;
}

bool under_v1(std::string_view path) { return path == "/v1" || path.starts_with("/v1/"); }

Dispatch dispatch(std::string_view method, std::string_view path) {
    const bool get = method == "GET" || method == "HEAD";
    if (path == "/healthz") return get ? Dispatch::healthz : Dispatch::method_not_allowed;
    if (path == "/readyz") return get ? Dispatch::readyz : Dispatch::method_not_allowed;
    if (path == "/metrics") return get ? Dispatch::metrics : Dispatch::method_not_allowed;
    if (path == "/v1/models") return get ? Dispatch::models_list : Dispatch::forward;
    if (is_models_path(path)) return get ? Dispatch::model_object : Dispatch::forward;
    if (under_v1(path)) return Dispatch::forward;
    return Dispatch::not_found;
}

std::string_view allowed_methods() { return "GET, HEAD"; }

bool needs_client_token(Dispatch dispatch) {
    return dispatch == Dispatch::models_list || dispatch == Dispatch::model_object ||
           dispatch == Dispatch::forward;
}

std::optional<std::string> model_id_from_path(std::string_view path) {
    if (!path.starts_with(models_prefix) || path.size() == models_prefix.size()) return std::nullopt;
    return percent_decode(path.substr(models_prefix.size()));
}

std::string percent_encode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    append_percent_encoded(out, text);
    return out;
}

void upstream_target(std::string& out, const config::Route& route, std::string_view client_path,
                     std::string_view client_query) {
    std::string_view base = route.upstream.base_path;
    while (!base.empty() && base.back() == '/') base.remove_suffix(1);
    if (under_v1(client_path)) client_path.remove_prefix(3);
    out.assign(base);
    out += client_path;
    if (out.empty()) out.push_back('/');
    // The query written in place: '?' before its first byte, '&' between
    // the client's query and each static parameter.
    const std::size_t path_end = out.size();
    if (!client_query.empty()) {
        out += '?';
        out += client_query;
    }
    for (const auto& [key, value] : route.query) {
        out += out.size() == path_end ? '?' : '&';
        append_percent_encoded(out, key);
        out += '=';
        append_percent_encoded(out, value);
    }
}

std::string upstream_target(const config::Route& route, std::string_view client_path,
                            std::string_view client_query) {
    std::string out;
    upstream_target(out, route, client_path, client_query);
    return out;
}

}  // namespace modelproxy::request
