// docs/configuration.md, whole: the prose below around the table generated
// from the schema. `modelproxy reference` prints it; a unit test holds the
// file in the repository to it. Change the text here, never in the file.
#include "config/config.hpp"

namespace modelproxy::config {

namespace {

constexpr std::string_view header = R"(# modelproxy configuration reference

Every key `modelproxy` accepts in its YAML file (docs/behaviour.md section 3). This file is
generated; regenerate it after changing the schema or its text with

    build/modelproxy reference > docs/configuration.md

The table comes from the schema in `config/schema.cpp`, the same table the
validator takes its ranges and allowed keys from, and the text around it from
`config/reference.cpp`; a unit test (`tests/unit/config/`) fails when this file
and what the command prints differ.

Paths count list items with `[]`; problems name them from 0
(`routes[1].retry.max_attempts` is the second route's). `modelproxy check
--config FILE` prints every problem, one per line, as `path: why`.

)";

constexpr std::string_view rules = R"(
## Rules beyond single keys

- Unknown keys are errors, in every map (a close typo gets a suggestion). A key
  written twice in one map is an error.
- Types are strict. Integers are plain decimal (`8`, not `"8"`, `8.0` or `0x8`);
  booleans are `true` or `false` (`yes`/`on` are refused); strings may be quoted
  or not.
- `base_delay_ms <= max_delay_ms`, in the catalog and in each route's merged
  retry.
- `min_attempt_ms < timeout_ms` for each route, using the route's merged retry.
  The problem names `routes[i].retry.min_attempt_ms` when the route overrides
  it, else `routes[i].timeout_ms`.
- At least one route; route names are unique.
- A client model name appears in one route only, and once; the second
  occurrence is the one reported. At most one route lists `"*"`. `"*"` is only
  the plain list entry `- "*"`; no other name may contain `*` (names match
  exactly).
- `api_key_required: true` needs `api_key_env`.
- `tls.cert_file` and `tls.key_file` come together; `tls.*` apply only to
  `https://` upstreams.
- `headers` may not name the route's `api_key_header` while `api_key_env` is
  set; header names are compared case-insensitively.
- `api_key_env` and `clients.tokens_env` hold variable names, never values; an
  empty string is the same as leaving the key out.

## At startup and in `check` (after `--listen` and `--workers`)

Once the file passes the rules above, serving and `modelproxy check` apply
these too, with the same code: `check` reads the environment and the files
serving would, so run it where and as the proxy will run (`check` takes
`--listen` and `--workers` as serving does).

- A route's `api_key_env` that is set and non-empty is sent upstream in
  `api_key_header` as `api_key_prefix` + value, in place of client credentials.
  Unset or empty: client credentials pass through and stderr says so in one
  line, unless `api_key_required: true`, which makes it a startup error (exit
  2). A value holding a control character (a trailing newline from a secret
  file) is refused.
- `clients.tokens_env`: the variable's value is split on commas; blanks around
  tokens and empty tokens are dropped. A token holding a control character is
  refused.
- docs/behaviour.md section 12: listening on an address that is not loopback
  (`127.0.0.0/8`, `::1`, `localhost`; `0.0.0.0` and `::` are not) while a route
  injects a key and no client token is set is refused (exit 2), unless
  `clients.allow_unauthenticated: true`.
- An `https://` route's `tls.ca_file` (else the system trust store),
  `tls.cert_file` and `tls.key_file` are loaded; one that cannot be is refused.
- `boundary.secret_patterns` are compiled by Vectorscan as the response scan
  uses them; one that is not a valid expression, or that matches the empty
  string, is refused.
- A `listen` host name is resolved once; one that does not resolve is refused.
)";

}  // namespace

std::string reference_document() {
    return std::string(header) + schema_reference_table() + std::string(rules);
}

}  // namespace modelproxy::config
