// resolve_environment: the step after loading that reads the variables the
// file names: route keys, client tokens, the fleet's Redis password
// (docs/behaviour.md section 3: secrets never live in the file), and applies
// the rules that need their values (api_key_required, docs/behaviour.md
// section 12).
#include "config/config.hpp"
#include "config/syntax.hpp"
#include "config/yaml_reader.hpp"

namespace modelproxy::config {
namespace {

std::string_view trim(std::string_view text) {
    static constexpr std::string_view blanks = " \t\r\n";
    const std::size_t first = text.find_first_not_of(blanks);
    if (first == std::string_view::npos) {
        return {};
    }
    return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

// Messages name variables, never their values.
void resolve_route_key(Route& route, std::size_t index, const Getenv& getenv, EnvResult& result) {
    route.api_key.reset();
    if (route.api_key_env.empty()) {
        return;
    }
    const std::string path = detail::join_key(detail::join_index("routes", index), "api_key_env");
    const char* value = getenv(route.api_key_env.c_str());
    if (value != nullptr && *value != '\0') {
        if (!detail::is_header_value(value)) {
            result.errors.push_back(Problem{path, route.api_key_env +
                                                      " holds a control character (a trailing newline?) "
                                                      "and cannot be sent in a header"});
            return;
        }
        route.api_key = std::string(value);
        return;
    }
    const std::string state = value == nullptr ? " is not set" : " is empty";
    if (route.api_key_required) {
        result.errors.push_back(Problem{path, route.api_key_env + state + " and api_key_required is true"});
    } else {
        result.notices.push_back("route " + route.name + ": " + route.api_key_env + state +
                                 "; client credentials are passed through");
    }
}

void resolve_client_tokens(Clients& clients, const Getenv& getenv, EnvResult& result) {
    clients.tokens.clear();
    if (clients.tokens_env.empty()) {
        return;
    }
    const char* value = getenv(clients.tokens_env.c_str());
    std::string_view rest = value != nullptr ? std::string_view(value) : std::string_view();
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view token = trim(rest.substr(0, comma));
        if (!token.empty()) {
            if (!detail::is_header_value(token)) {
                result.errors.push_back(Problem{"clients.tokens_env", clients.tokens_env +
                                                                          " holds a control character inside a token"});
                clients.tokens.clear();
                return;
            }
            clients.tokens.emplace_back(token);
        }
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (clients.tokens.empty()) {
        result.notices.push_back("clients: " + clients.tokens_env +
                                 (value == nullptr ? " is not set" : " holds no token") +
                                 "; requests under /v1/ are not authenticated");
    }
}

// fleet.password_env (docs/behaviour.md section 15): a variable the file
// names must hold the password, or the replica could never share state.
void resolve_fleet_password(std::optional<Fleet>& fleet, const Getenv& getenv, EnvResult& result) {
    if (!fleet) {
        return;
    }
    fleet->password.reset();
    if (fleet->password_env.empty()) {
        return;
    }
    const char* value = getenv(fleet->password_env.c_str());
    if (value == nullptr || *value == '\0') {
        result.errors.push_back(Problem{"fleet.password_env", fleet->password_env +
                                                                   (value == nullptr ? " is not set" : " is empty") +
                                                                   "; it must hold the Redis password"});
        return;
    }
    if (detail::has_control_character(value)) {
        result.errors.push_back(Problem{"fleet.password_env", fleet->password_env +
                                                                   " holds a control character (a trailing newline?)"});
        return;
    }
    fleet->password = std::string(value);
}

}  // namespace

EnvResult resolve_environment(Config& config, const Getenv& getenv) {
    EnvResult result;
    for (std::size_t i = 0; i < config.routes.size(); ++i) {
        resolve_route_key(config.routes[i], i, getenv, result);
    }
    resolve_client_tokens(config.clients, getenv, result);
    resolve_fleet_password(config.fleet, getenv, result);

    // docs/behaviour.md section 12: an open listener in front of an injected key would let
    // anyone who can reach the port spend it.
    if (is_loopback_host(config.listen_host) || !config.clients.tokens.empty() ||
        config.clients.allow_unauthenticated) {
        return result;
    }
    for (const Route& route : config.routes) {
        if (!route.api_key) {
            continue;
        }
        const std::string tokens = config.clients.tokens_env.empty()
                                       ? "no client tokens are configured"
                                       : "no client tokens are set in " + config.clients.tokens_env;
        result.errors.push_back(Problem{
            "clients.tokens_env",
            "listen address " + config.listen_host + " is not loopback and route " + route.name +
                " injects its key from " + route.api_key_env + ", but " + tokens +
                "; set tokens_env to a variable holding comma-separated client tokens, or set "
                "clients.allow_unauthenticated: true (a sidecar must not spend its key for anyone who can reach it)"});
        break;
    }
    return result;
}

}  // namespace modelproxy::config
