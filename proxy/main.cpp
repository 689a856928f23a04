// The modelproxy command line (docs/behaviour.md section 2). Exit codes: 0 clean exit
// (also after a SIGTERM drain), 2 bad config or usage, 1 other fatal error.
// Human messages go to stderr, one line each; stdout carries only records.
#include "config/config.hpp"
#include "proxy/cli.hpp"
#include "proxy/probe.hpp"
#include "proxy/server.hpp"

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* usage_text =
    "usage: modelproxy [--config FILE] [--listen HOST:PORT] [--workers N] [--log FILE]\n"
    "       modelproxy check --config FILE [--listen HOST:PORT] [--workers N]\n"
    "       modelproxy doctor [--config FILE] [--json]\n"
    "       modelproxy reference\n"
    "       modelproxy probe URL [--timeout-ms N]\n"
    "       modelproxy --version | --help\n"
    "\n"
    "Serves an HTTP reverse proxy for model providers. Without --config it uses\n"
    "the embedded default (config/modelproxy.yaml). --listen and --workers\n"
    "override the config; --log writes the JSON-lines records to FILE instead of\n"
    "stdout.\n"
    "\n"
    "  check    validate FILE by every rule serving applies before it listens, with\n"
    "           this environment and the given --listen and --workers: exit 0 when\n"
    "           serving would start, else exit 2 with one line per problem\n"
    "  doctor   print each route's retry envelope (bounds, waits, worst case),\n"
    "           retry budget and admission, and each model's candidates\n"
    "           (deployments, fallbacks, worst case)\n"
    "  reference  print the configuration reference (docs/configuration.md)\n"
    "  probe    GET an http:// URL (e.g. http://127.0.0.1:8080/readyz) for health\n"
    "           checks: exit 0 on a 2xx answer, else 1 with one line saying why;\n"
    "           --timeout-ms bounds the whole request (default 2000)\n";

int usage_error(const std::string& why) {
    std::cerr << "modelproxy: " << why << "\n" << "usage: see modelproxy --help\n";
    return 2;
}

// `probe URL [--timeout-ms N]` (an addition to docs/behaviour.md section 2): the image's
// HEALTHCHECK and exec probes need no curl.
int probe(const std::vector<std::string>& args) {
    std::string url;
    std::int64_t timeout_ms = 2000;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--timeout-ms") {
            if (i + 1 >= args.size()) return usage_error("--timeout-ms needs N");
            const std::string& v = args[++i];
            char* end = nullptr;
            const long long n = std::strtoll(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 1 || n > 600000)
                return usage_error("--timeout-ms: expected 1..600000, got " + v);
            timeout_ms = n;
        } else if (url.empty() && a.rfind("--", 0) != 0) {
            url = a;
        } else {
            return usage_error("unknown argument " + a);
        }
    }
    if (url.empty()) return usage_error("probe needs a URL, e.g. http://127.0.0.1:8080/readyz");
    return modelproxy::proxy::probe_command(url, timeout_ms);
}

int run(int argc, char** argv) {
    using namespace modelproxy;
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
        std::cout << usage_text;
        return 0;
    }
    if (!args.empty() && args[0] == "--version") {
        std::cout << "modelproxy " << MODELPROXY_VERSION << "\n";
        return 0;
    }
    if (!args.empty() && args[0] == "probe") return probe(args);
    if (!args.empty() && args[0] == "reference") {
        if (args.size() > 1) return usage_error("unknown argument " + args[1]);
        return proxy::reference_command();
    }
    std::string command = "serve";
    std::size_t i = 0;
    if (!args.empty() && (args[0] == "check" || args[0] == "doctor")) {
        command = args[0];
        i = 1;
    }
    proxy::ServeOptions options;
    bool json = false;
    for (; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& out) -> bool {
            if (i + 1 >= args.size()) return false;
            out = args[++i];
            return true;
        };
        std::string v;
        if (a == "--config") {
            if (!value(options.config_path) || options.config_path.empty()) return usage_error("--config needs a FILE");
        } else if (a == "--listen" && command != "doctor") {
            if (!value(options.listen_override)) return usage_error("--listen needs HOST:PORT");
            if (!config::parse_listen(options.listen_override))
                return usage_error("--listen: expected HOST:PORT, got " + options.listen_override);
        } else if (a == "--workers" && command != "doctor") {
            if (!value(v)) return usage_error("--workers needs N");
            char* end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 0 || n > 256) return usage_error("--workers: expected 0..256, got " + v);
            options.workers_override = static_cast<int>(n);
        } else if (a == "--log" && command == "serve") {
            if (!value(options.log_path) || options.log_path.empty()) return usage_error("--log needs a FILE");
        } else if (a == "--json" && command == "doctor") {
            json = true;
        } else {
            return usage_error("unknown argument " + a);
        }
    }
    if (command == "check") {
        if (options.config_path.empty()) return usage_error("check needs --config FILE");
        return proxy::check_command(options);
    }
    if (command == "doctor") return proxy::doctor_command(options.config_path, json);
    return proxy::serve(options);
}

}  // namespace

int main(int argc, char** argv) {
    // A client that hangs up must not kill the process through SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "modelproxy: fatal: " << e.what() << "\n";
        return 1;
    }
}
