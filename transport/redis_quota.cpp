#include "transport/redis_quota.hpp"

#include <algorithm>
#include <utility>

namespace modelproxy::transport {

namespace {

// KEYS[1]: the route's hash. ARGV[1]: the operation.
//   reserve  ARGV[2] requests per minute, ARGV[3] tokens per minute (0: no
//            limit), ARGV[4] tokens  -> {1, second} or {0, wait_ms}
//   settle   ARGV[2] the reservation's second, ARGV[3] delta tokens
//            -> {1} applied or {0} outside the window
// Seconds are Redis's TIME; the window is [now - 60, now]: the current
// second and the 60 whole ones before it, so that no 60 s span, wherever it
// starts inside a second, holds more than the quota. A bucket of second s
// leaves it at (s + 61) * 1000 ms, which is when a refused reservation may
// fit: the wait removes buckets oldest first until the rest leaves room.
// redis.replicate_commands (under pcall: Redis 7 always replicates effects
// and deprecates it) lets Redis 6 replicate the writes after TIME.
constexpr const char* quota_lua = R"lua(
pcall(redis.replicate_commands)
local key = KEYS[1]
local time = redis.call('TIME')
local now = tonumber(time[1])
local now_ms = now * 1000 + math.floor(tonumber(time[2]) / 1000)
local oldest = now - 60
local ttl_ms = 120000

if ARGV[1] == 'settle' then
  local second = tonumber(ARGV[2])
  local delta = tonumber(ARGV[3])
  if second == nil or delta == nil then return redis.error_reply('ERR quota settle: bad arguments') end
  if second < oldest or second > now then return {0} end
  if redis.call('HEXISTS', key, 'r:' .. ARGV[2]) == 0 then return {0} end
  local field = 't:' .. ARGV[2]
  if redis.call('HINCRBY', key, field, string.format('%d', delta)) < 0 then
    redis.call('HSET', key, field, 0)
  end
  redis.call('PEXPIRE', key, ttl_ms)
  return {1}
end

if ARGV[1] ~= 'reserve' then return redis.error_reply('ERR quota: unknown operation') end
local rpm = tonumber(ARGV[2])
local tpm = tonumber(ARGV[3])
local asked = tonumber(ARGV[4])
if rpm == nil or tpm == nil or asked == nil then return redis.error_reply('ERR quota reserve: bad arguments') end
if asked < 0 then asked = 0 end
if tpm > 0 and asked > tpm then asked = tpm end

local flat = redis.call('HGETALL', key)
local buckets = {}
local seconds = {}
local stale = {}
local requests, tokens = 0, 0
for i = 1, #flat, 2 do
  local name = flat[i]
  local second = tonumber(string.sub(name, 3))
  local value = tonumber(flat[i + 1]) or 0
  if second == nil or second < oldest then
    stale[#stale + 1] = name
  else
    local b = buckets[second]
    if b == nil then
      b = {0, 0}
      buckets[second] = b
      seconds[#seconds + 1] = second
    end
    if string.sub(name, 1, 1) == 'r' then
      b[1] = b[1] + value
      requests = requests + value
    else
      b[2] = b[2] + value
      tokens = tokens + value
    end
  end
end
if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end

local function fits(r, t)
  return (rpm <= 0 or r + 1 <= rpm) and (tpm <= 0 or t + asked <= tpm)
end

if fits(requests, tokens) then
  redis.call('HINCRBY', key, 'r:' .. now, 1)
  redis.call('HINCRBY', key, 't:' .. now, string.format('%d', asked))
  redis.call('PEXPIRE', key, ttl_ms)
  return {1, now}
end

table.sort(seconds)
for _, second in ipairs(seconds) do
  requests = requests - buckets[second][1]
  tokens = tokens - buckets[second][2]
  if fits(requests, tokens) then
    return {0, math.max(1, (second + 61) * 1000 - now_ms)}
  end
end
return {0, 61000}
)lua";

// The two integers of the script's {a, b} reply.
bool pair_of(const RedisResult& r, long long& first, long long* second) {
    if (r.kind != RedisResult::Kind::array || r.elements.empty()) return false;
    if (r.elements[0].kind != RedisResult::Kind::integer) return false;
    first = r.elements[0].integer;
    if (second == nullptr) return true;
    if (r.elements.size() < 2 || r.elements[1].kind != RedisResult::Kind::integer) return false;
    *second = r.elements[1].integer;
    return true;
}

std::string failure_text(const RedisResult& r) {
    if (r.failed()) return r.text;
    if (r.kind == RedisResult::Kind::error) return "the quota script failed: " + r.text;
    return "the quota script answered in a shape it never gives";
}

}  // namespace

const RedisScript& quota_script() {
    static const RedisScript script(quota_lua);
    return script;
}

RedisQuota::RedisQuota(RedisClient& client, std::string key_prefix)
    : client_(client), prefix_(std::move(key_prefix)) {}

std::string RedisQuota::key(std::string_view route) const {
    std::string k = prefix_;
    k += "quota:";
    k += route;
    return k;
}

Task<QuotaReservation> RedisQuota::reserve(std::string route, QuotaLimits limits, std::int64_t tokens,
                                           std::chrono::milliseconds timeout) {
    const std::int64_t rpm = std::max<std::int64_t>(limits.requests_per_minute, 0);
    const std::int64_t tpm = std::max<std::int64_t>(limits.tokens_per_minute, 0);
    tokens = std::max<std::int64_t>(tokens, 0);
    if (tpm > 0) tokens = std::min(tokens, tpm);
    // Named, not braced in the co_await: GCC 12 cannot compile a braced
    // list of strings as a coroutine call's argument.
    std::vector<std::string> keys{key(route)};
    std::vector<std::string> args{"reserve", std::to_string(rpm), std::to_string(tpm), std::to_string(tokens)};
    const RedisResult r = co_await client_.eval_script(quota_script(), std::move(keys), std::move(args), timeout);
    QuotaReservation out;
    long long ok = 0, value = 0;
    if (!pair_of(r, ok, &value)) {
        out.error = failure_text(r);
        co_return out;
    }
    if (ok == 1) {
        out.outcome = QuotaReservation::Outcome::reserved;
        out.bucket_second = value;
        out.tokens = tokens;
    } else {
        out.outcome = QuotaReservation::Outcome::wait;
        out.wait = std::chrono::milliseconds(std::max<long long>(value, 1));
    }
    co_return out;
}

Task<QuotaSettlement> RedisQuota::settle(std::string route, std::int64_t bucket_second, std::int64_t delta_tokens,
                                         std::chrono::milliseconds timeout) {
    std::vector<std::string> keys{key(route)};
    std::vector<std::string> args{"settle", std::to_string(bucket_second), std::to_string(delta_tokens)};
    const RedisResult r = co_await client_.eval_script(quota_script(), std::move(keys), std::move(args), timeout);
    QuotaSettlement out;
    long long applied = 0;
    if (!pair_of(r, applied, nullptr)) {
        out.failed = true;
        out.error = failure_text(r);
        co_return out;
    }
    out.applied = applied == 1;
    co_return out;
}

}  // namespace modelproxy::transport
