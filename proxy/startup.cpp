#include "proxy/startup.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

namespace modelproxy::proxy {

namespace {

bool read_whole_file(const std::string& path, std::string& text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream out;
    out << in.rdbuf();
    text = out.str();
    return true;
}

// The listen host as an address: a literal as written, a name through the
// system resolver, once (serving binds every worker to the one answer).
std::optional<boost::asio::ip::address> resolve_listen(const std::string& host, std::uint16_t port) {
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(host, ec);
    if (!ec) return address;
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) return std::nullopt;
    return results.begin()->endpoint().address();
}

}  // namespace

LoadedFile load_file(const std::string& path) {
    LoadedFile file;
    std::string text;
    if (path.empty()) {
        text = std::string(config::embedded_default_yaml());
        file.source = "embedded default";
    } else if (!read_whole_file(path, text)) {
        file.source = path;
        file.problems.push_back("cannot read " + path);
        return file;
    } else {
        file.source = path;
    }
    auto loaded = config::load_config(text);
    for (const auto& problem : loaded.problems) file.problems.push_back(file.source + ": " + problem.line());
    file.config = std::move(loaded.config);
    return file;
}

Prepared prepare(const ServeOptions& options, const config::Config* running, const config::Getenv& getenv) {
    Prepared prepared;
    LoadedFile file = load_file(options.config_path);
    if (!file.config) {
        prepared.problems = std::move(file.problems);
        return prepared;
    }
    const std::string& source = file.source;
    config::Config cfg = std::move(*file.config);
    if (!options.listen_override.empty()) {
        auto listen = config::parse_listen(options.listen_override);
        if (!listen) {
            prepared.problems.push_back("--listen: expected HOST:PORT, got " + options.listen_override);
            return prepared;
        }
        cfg.listen_host = listen->first;
        cfg.listen_port = listen->second;
    }
    if (options.workers_override >= 0) cfg.workers = options.workers_override;
    if (running) {
        // The sockets and threads are made once at startup, so a reload keeps
        // them; the rest of the new config must be judged against the address
        // really served (docs/behaviour.md section 12's open-listener rule), not the file's.
        if (cfg.listen_host != running->listen_host || cfg.listen_port != running->listen_port ||
            cfg.workers != running->workers)
            prepared.notices.push_back(source + ": listen and workers changes need a restart; still serving " +
                                       running->listen_host + ":" + std::to_string(running->listen_port) +
                                       " with workers " + std::to_string(running->workers));
        cfg.listen_host = running->listen_host;
        cfg.listen_port = running->listen_port;
        cfg.workers = running->workers;
    }

    auto env = config::resolve_environment(cfg, getenv);
    // A refused reload says why, not what the refused config would have done.
    if (!running || env.errors.empty())
        prepared.notices.insert(prepared.notices.end(), env.notices.begin(), env.notices.end());
    for (const auto& problem : env.errors) prepared.problems.push_back(source + ": " + problem.line());

    // Building goes on past the environment's problems at startup, so one
    // run names the files and patterns too. A reload stops here: building
    // names the new routes in the metrics, which a refused reload must not.
    std::optional<boost::asio::ip::address> address;
    if (!running) {
        address = resolve_listen(cfg.listen_host, cfg.listen_port);
        if (!address) prepared.problems.push_back(source + ": listen: cannot resolve host " + cfg.listen_host);
    }
    if (running && !prepared.problems.empty()) return prepared;
    auto built = Runtime::build(std::move(cfg));
    if (auto* lines = std::get_if<std::vector<std::string>>(&built)) {
        for (const auto& line : *lines) prepared.problems.push_back(source + ": " + line);
    }
    if (!prepared.problems.empty()) return prepared;
    prepared.runtime = std::get<std::shared_ptr<const Runtime>>(std::move(built));
    if (address) prepared.listen_address = *address;
    return prepared;
}

void report(const std::vector<std::string>& lines) {
    for (const auto& line : lines) std::cerr << "modelproxy: " << line << "\n";
    std::cerr.flush();
}

void report(const Prepared& prepared) {
    report(prepared.notices);
    report(prepared.problems);
}

}  // namespace modelproxy::proxy
