// Everything serving refuses before it binds its port, as one step that
// `check` runs too: a config `check` accepts is one serving starts with, and
// both print the same lines for the same problems (docs/behaviour.md
// section 2). A SIGHUP reload runs the same step against the config in force.
#pragma once

#include "config/config.hpp"
#include "proxy/server.hpp"

#include <boost/asio/ip/address.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace modelproxy::proxy {

// A config file read and loaded, nothing more: no environment, no files it
// names. `problems` is empty exactly when `config` is set.
struct LoadedFile {
    std::optional<config::Config> config;
    std::string source;                 // the path, or "embedded default"
    std::vector<std::string> problems;  // "cannot read PATH", or "SOURCE: path: why" each
};

// path "" = the embedded default.
LoadedFile load_file(const std::string& path);

struct Prepared {
    std::shared_ptr<const Runtime> runtime;  // set exactly when problems is empty
    // The listen host resolved once (a name such as "localhost" included);
    // at startup only, a reload keeps the sockets it has.
    boost::asio::ip::address listen_address;
    // Lines that inform (credentials passed through, a listen change a
    // reload cannot apply); they never refuse.
    std::vector<std::string> notices;
    // One line each, "SOURCE: path: why" (or load_file's "cannot read PATH").
    // The file's own problems first and alone: the rules that need the
    // environment, the files the config names, the pattern compiler and the
    // resolver run once the file itself is valid, and then all of them.
    std::vector<std::string> problems;
};

// Reads and validates options.config_path, applies --listen and --workers,
// reads the environment through `getenv` (api_key_env, clients.tokens_env,
// the open-listener rule of docs/behaviour.md section 12), builds the
// runtime (TLS files, Vectorscan's compile of every credential pattern) and,
// at startup, resolves the listen host. `running`: the config in force when
// this is a reload, whose listen address and workers are kept; nullptr at
// startup and for `check`.
Prepared prepare(const ServeOptions& options, const config::Config* running, const config::Getenv& getenv);

// Writes each line to stderr as "modelproxy: LINE"; a Prepared's notices,
// then its problems.
void report(const std::vector<std::string>& lines);
void report(const Prepared& prepared);

}  // namespace modelproxy::proxy
