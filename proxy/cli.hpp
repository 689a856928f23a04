// The one-shot subcommands of SPEC section 2: `check` and `doctor`.
#pragma once

#include <string>

namespace modelproxy::proxy {

// Validates FILE: exit 0 when valid, else 2 with one stderr line per problem.
int check_command(const std::string& path);

// Prints each route's retry envelope; path "" = the embedded default.
int doctor_command(const std::string& path, bool json);

}  // namespace modelproxy::proxy
