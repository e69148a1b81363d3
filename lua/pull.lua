-- pull.lua: take the tasks of one slice that a worker should fire now or
-- before its next tick, under a lease.
--
-- KEYS[1]  slice due    zset  task key -> due time (ms)
-- KEYS[2]  slice body   hash  task key -> versioned task
-- KEYS[3]  slice lease  zset  task key -> lease deadline (ms)
-- KEYS[4]  slice del    set   tombstones
-- ARGV[1]  now (ms)
-- ARGV[2]  horizon (ms): take tasks due at or before it
-- ARGV[3]  lease (ms)
-- ARGV[4]  most tasks to take in this call
-- ARGV[5]  "1" when the slice's minute is old enough to be drained
-- ARGV[6]  how long tombstones outlive the drain (ms)
--
-- Expired leases are taken over first: their worker died or stalled. Due
-- tasks move from due to lease with the deadline max(due, now) + lease.
-- Tombstoned or bodiless entries are dropped on the way (lazy deletion).
-- When ARGV[5] is "1" and nothing is left due or leased, the slice is
-- drained: its body hash is deleted and its tombstones get a TTL.
--
-- Reply: array {more, drained, key1, task1, key2, task2, ...}
--   more     1 when the call stopped at ARGV[4] and should be repeated
--   drained  1 when the slice is empty for good
local now = tonumber(ARGV[1])
local lease = tonumber(ARGV[3])
local max = tonumber(ARGV[4])
local out = {0, 0}
local seen = 0

local function live(key)
  local task = redis.call('HGET', KEYS[2], key)
  if task and redis.call('SISMEMBER', KEYS[4], key) == 0 then
    return task
  end
  redis.call('HDEL', KEYS[2], key)
  return nil
end

local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, max)
for _, key in ipairs(expired) do
  seen = seen + 1
  local task = live(key)
  if task then
    redis.call('ZADD', KEYS[3], string.format('%d', now + lease), key)
    out[#out + 1] = key
    out[#out + 1] = task
  else
    redis.call('ZREM', KEYS[3], key)
  end
end

if seen < max then
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', 0, max - seen)
  for i = 1, #due, 2 do
    seen = seen + 1
    local key = due[i]
    local start = tonumber(due[i + 1])
    if start < now then start = now end
    redis.call('ZREM', KEYS[1], key)
    local task = live(key)
    if task then
      redis.call('ZADD', KEYS[3], string.format('%d', start + lease), key)
      out[#out + 1] = key
      out[#out + 1] = task
    end
  end
end

if seen >= max then
  out[1] = 1
elseif ARGV[5] == '1' and redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[2])
  if redis.call('EXISTS', KEYS[4]) == 1 then
    redis.call('PEXPIRE', KEYS[4], ARGV[6])
  end
  out[2] = 1
end
return out
