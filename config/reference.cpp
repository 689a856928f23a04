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
- `retry.budget_min_concurrency` is at least 1 while `retry.budget_ratio` is
  above 0, in the catalog and in each route's merged retry (both 0 turn
  replays off). The problem names `budget_min_concurrency` when the map that
  breaks the rule sets it, else `budget_ratio`.
- `admission.min_limit <= initial_limit <= max_limit`, in the catalog and in
  each route's merged admission. One problem per map, for the first broken
  pair (min/max, min/initial, initial/max) the map sets a key of: on the lower
  key when the map sets it, else on the higher.
- `admission.queue_timeout_ms` is 0 or at most the `timeout_ms` of each route
  it applies to. The problem names `routes[i].admission.queue_timeout_ms`
  when the route overrides it, else `admission.queue_timeout_ms` (naming the
  route's `timeout_ms`). The default is not judged against `timeout_ms`: the
  turn deadline bounds the wait anyway.
- At least one route; route names are unique.
- A client model name appears at most once in a route; the second occurrence
  is the one reported. Several routes may list the same name: they are its
  deployments (below). At most one route lists `"*"`. `"*"` is only the plain
  list entry `- "*"`; no other name may contain `*` (names match exactly).
- `first_byte_timeout_ms` and `first_token_timeout_ms` are 0 (off) or at most
  the route's `timeout_ms`. `breaker.open_ms <= breaker.max_open_ms`; the
  problem names `max_open_ms` when the breaker sets it, else `open_ms`.
- A `models` entry names a model some route lists by name (the `"*"` route
  does not count), and each model has one entry. Each of its `fallbacks` is a
  model some route lists by name, not the entry's own model, and appears once
  in that list. `fallback_on` entries are class names or `code:<X>` with a
  non-empty X.
- `api_key_required: true` needs `api_key_env`.
- `tls.cert_file` and `tls.key_file` come together; `tls.*` apply only to
  `https://` upstreams.
- `headers` may not name the route's `api_key_header` while `api_key_env` is
  set; header names are compared case-insensitively.
- `api_key_env`, `clients.tokens_env` and `fleet.password_env` hold variable
  names, never values; an empty string is the same as leaving the key out.
- `fleet.redis` carries no user or password: the password comes from the
  variable `fleet.password_env` names. `fleet.tls.ca_file` applies only to a
  `rediss://` URL. The fleet is on only while `fleet.redis` is set (an empty
  string is unset); the block's other keys are checked either way.
- A route's `quota`, when present, sets at least one of its two keys.

## Deployments and fallbacks (docs/behaviour.md section 13)

A client model name listed by several routes has several **deployments**,
one per route, each with its own `upstream_model`, key and `accept` list. A
**candidate** is one (route, upstream model) pair. A turn's candidates are
the requested model's deployments, starting at the one chosen for the turn
(`balance: ordered`: the first usable one in config order; `weighted`: the
usable one with the fewest turns in flight per unit of `weight`) and then in
config order, followed by the deployments of each of its `fallbacks`, in
order. Only the requested model's own `fallbacks` count: the fallbacks of a
fallback are not followed, so `a` falling back to `b` and `b` to `a` is
allowed and never loops. A client that sends `x-modelproxy-fallback: off`
gets the requested model's deployments only.

A failure in the model's `fallback_on` moves the turn to its next usable
candidate: at once for a 429, a failure that is not replayed, and a
first-byte or first-token timeout; after `attempts_per_candidate` attempts on
the candidate for other replayable failures. Other failures are replayed on
the same candidate as section 6 says. One attempt counter and one summed
wait serve the whole turn, and the turn's `retry` bounds and `timeout_ms`
deadline are those of the requested model's first deployment in config
order: more candidates never mean more attempts or a longer turn. Each
candidate's own route gives its connect, first-byte, first-token and idle
timers. A stream that has published answer text never falls over.

Two Azure OpenAI regions serving `gpt-4o`, and Anthropic's OpenAI-compatible
endpoint as the fallback (and the other way round):

```yaml
routes:
  - name: azure-east
    upstream: https://contoso-east.openai.azure.com/openai/v1
    api_key_env: AZURE_EAST_KEY
    api_key_header: api-key
    first_byte_timeout_ms: 5000
    first_token_timeout_ms: 15000
    models: [gpt-4o]                 # the deployment is named gpt-4o
  - name: azure-west
    upstream: https://contoso-west.openai.azure.com/openai/v1
    api_key_env: AZURE_WEST_KEY
    api_key_header: api-key
    first_byte_timeout_ms: 5000
    first_token_timeout_ms: 15000
    models: [gpt-4o]
  - name: anthropic
    upstream: https://api.anthropic.com/v1   # OpenAI-compatible chat completions
    api_key_env: ANTHROPIC_API_KEY
    first_byte_timeout_ms: 5000
    first_token_timeout_ms: 15000
    models:
      - {name: claude-sonnet, upstream_model: claude-sonnet-4-5}
models:
  - name: gpt-4o
    fallbacks: [claude-sonnet]       # candidates: azure-east, azure-west, anthropic
  - name: claude-sonnet
    fallbacks: [gpt-4o]              # candidates: anthropic, azure-east, azure-west
```

A `gpt-4o` turn starts on `azure-east` while its breaker lets turns through
and it is not cooling down after a 429, else on `azure-west`; with `balance:
weighted` the two would share the turns by `weight`. When both regions fail
it, the turn goes to Anthropic, and its answer carries
`x-modelproxy-model: claude-sonnet` and `x-modelproxy-route: anthropic`.

**The timers.** Each is set per route and applies to that route's
candidates; 0 turns it off.

- `connect_timeout_ms`: TCP connect and TLS handshake. A provider that is
  unreachable fails here (class `network`).
- `first_byte_timeout_ms` (streams only): from the request's last byte
  written to the first byte of the response head. It catches a deployment
  that took the request and says nothing. A non-stream answer's head comes
  only when the whole answer is ready, so no such timer can tell slow from
  dead there; only `timeout_ms` bounds it. Set it a little above the
  provider's usual time to a stream's head.
- `first_token_timeout_ms` (streams only): from the response head to the
  first answer text; comments, keep-alives, role-only and empty deltas do not
  stop it. It catches a deployment that opened a stream and produces nothing.
  It applies only while a later usable candidate exists and `timeout` is in
  `fallback_on`, so the last candidate is never cut by it, and it never opens
  a breaker (a model that thinks long is not a dead provider). Set it above
  the longest wait for a first token you accept, or leave it off for
  reasoning models.
- `stream_idle_timeout_ms`: no byte at all for this long, at any point of a
  stream. A timeout like any other: replayed on the candidate up to
  `attempts_per_candidate` attempts, then the turn falls over.
- `timeout_ms`: the turn deadline. The requested model's first deployment's
  value bounds the whole turn, across every candidate, until the turn
  publishes.

**What `modelproxy doctor` prints for a model.** For each client model with
more than one candidate, a `models` entry or a warning: its candidates in
config order (index, route, upstream model, and which fallback a candidate
belongs to), `attempts_per_candidate`, `fallback_on`, the turn's bounds, and:

- the worst case of a turn that falls through every candidate: the turn
  deadline, `timeout_ms` of the requested model's first deployment. Every
  attempt, wait and fall-over happens inside it, so no number of candidates
  lengthens a turn; and nothing shorter bounds it in general, since the last
  candidate is never cut by `first_token_timeout_ms` and a non-stream
  attempt by neither timer.
- how soon a stream turn whose earlier candidates all hang reaches the last
  candidate, at most: with candidates `0..n-1`, `k = attempts_per_candidate`
  and the turn's `retry`,
  `sum over i < n-1 of k * (connect_timeout_ms[i] + first_byte_timeout_ms[i]
  + first_token_timeout_ms[i]) + min(max_total_delay_ms, (n-1) * (k-1) *
  max_delay_ms)`. Each of those candidates gets at most `k` attempts; each
  attempt ends by its connect timeout, then by the first-byte timer before a
  head, then by the first-token timer before answer text; the waits are
  those between attempts on one candidate (falling over does not wait). The
  time to write the request is not counted. When `timeout` is not in
  `fallback_on`, or one of those candidates has either timer off, a hang there
  holds the turn until the deadline, and doctor names the candidate and the
  missing timer instead.

Warnings (stderr, and in `--json`): a `first_byte_timeout_ms`,
`first_token_timeout_ms` or `stream_idle_timeout_ms` of a candidate at or
above the turn deadline; a `first_token_timeout_ms` that never applies (the
last candidate, or `timeout` not in `fallback_on`); and a `max_attempts` that
ends a turn before its last candidate when each earlier candidate takes
`attempts_per_candidate` attempts.

## Retry budget and admission (docs/behaviour.md section 14)

Both are set in the top-level `retry` and `admission` catalogs; a route's
`retry` and `admission` override any key, and its `admission.backpressure`
overrides key by key. The retry budget is always on; admission only with
`admission.enabled: true`. `modelproxy doctor` prints two lines for each
route after its retry envelope, and `--json` carries the same values in each
route's `retry_budget` and `admission` objects:

    route openai: timeout_ms 300000, min_attempt_ms 1000, jitter none
      ...
      retry budget: budget_ratio 0.2, budget_min_concurrency 3 (replays in flight to a candidate at most max(3, 0.2 x its turns in flight))
      admission: on, initial_limit 64, min_limit 1, max_limit 1024, decrease 0.7, backpressure rate-limit 1 overload 3 server 0, queue_timeout_ms 5000, pacing on rate-limit headers yes

`retry budget: replays off` when both budget keys are 0, and `admission:
off` when it is not enabled.

## Fleet and quotas (docs/behaviour.md section 15)

Without `fleet.redis` every replica keeps its own breakers and enforces each
route's `quota` alone. With it, replicas reserve quota in Redis and share
the breaker failures the provider declared. `modelproxy doctor` prints a
quota line for each route that has one, after its admission line, and one
fleet line at the end; `--json` carries each route's `quota` (null without
one; 0 on a dimension it leaves out) and a top-level `fleet` (null without
`fleet.redis`):

      quota: requests_per_minute 10000, tokens_per_minute 2000000, shared by the fleet
    fleet: redis redis://127.0.0.1:6379/0, key_prefix modelproxy:, timeout_ms 50, password from MODELPROXY_REDIS_PASSWORD

`no limit` stands for a dimension the quota leaves out, `each replica its
own` for `shared by the fleet` without `fleet.redis`, and the fleet line is
`fleet: per replica (no fleet.redis)` then. The URL is shown from its parts
(scheme, host, port, database), the password by its variable's name only.

## Continuing a cut stream (docs/behaviour.md section 16)

A route's `resume` block is off unless it sets `enabled: true`; a route
without the block never resumes. With it, a `/chat/completions`,
`/completions` or `/messages` stream of one choice that breaks after
publishing at most `max_offset` code points of answer text is continued by
one more attempt on a deployment of the same client model (never a fallback
model), read without publishing until it has reproduced that text, then
forwarded from there on. A resume is an attempt like a replay: the turn's
`retry` bounds and budget must allow one and `min_attempt_ms` must be left
before the deadline. A break section 16 does not resume, and a new stream
that diverges from the published text, end the stream with the closing
error event, as without `resume`.

```yaml
routes:
  - name: openai
    upstream: https://api.openai.com/v1
    api_key_env: OPENAI_API_KEY
    models: ["*"]
    resume:
      enabled: true
      max_resumes: 1               # per turn
      max_offset: 4096             # code points of published answer text
      only_deterministic: true     # temperature 0 or a seed
```

`modelproxy doctor` prints a resume line for each route that enables it,
after its quota line, and `--json` carries each route's `resume` object
(`enabled`, `max_resumes`, `max_offset`, `only_deterministic`), the defaults
when the route has no block:

      resume: up to 1 per turn, max_offset 4096 code points, only deterministic requests

`any request` stands for `only deterministic requests` with
`only_deterministic: false`.

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
- With `fleet.redis` set, the variable `fleet.password_env` names (when it
  names one) must be set and non-empty, without a control character; and a
  `rediss://` server's `fleet.tls.ca_file` (else the system trust store) is
  loaded; one that cannot be is refused.
- A `listen` host name is resolved once; one that does not resolve is refused.
)";

}  // namespace

std::string reference_document() {
    return std::string(header) + schema_reference_table() + std::string(rules);
}

}  // namespace modelproxy::config
