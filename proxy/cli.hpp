// The one-shot subcommands of docs/behaviour.md section 2, `check` and `doctor`, and
// `reference`.
#pragma once

#include "proxy/server.hpp"

#include <string>

namespace modelproxy::proxy {

// Validates options.config_path by every rule serving applies before it binds
// (startup.hpp's prepare, with this process's environment and the --listen and
// --workers given): exit 0 when serving would start, else 2 with the lines
// serving would print, one per problem.
int check_command(const ServeOptions& options);

// Prints docs/configuration.md, whole, to stdout: exit 0, or 1 when stdout
// cannot be written.
int reference_command();

// Prints each route's retry envelope, retry budget, admission and quota
// (config/route_load.hpp), then the candidate plan of each client
// model with more than one candidate, a models entry or a warning
// (config/model_plan.hpp), then the fleet line; path "" = the embedded
// default. --json: one object with `routes`, `models` and `fleet`.
int doctor_command(const std::string& path, bool json);

}  // namespace modelproxy::proxy
