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
-- ARGV[4]  most tasks to take in this call (at most 1000)
-- ARGV[5]  "1" when the slice's minute is old enough to be drained
-- ARGV[6]  how long tombstones outlive the drain (ms)
--
-- Expired leases are taken over first: their worker died or stalled. Due
-- tasks move from due to lease with the deadline max(due, now) + lease.
-- Tombstoned or bodiless entries are dropped on the way (lazy deletion).
-- When ARGV[5] is "1" and nothing is left due or leased, the slice is
-- drained: its body hash is deleted and its tombstones get a TTL.
-- Commands are issued in bulk, a handful per call whatever the batch size.
--
-- Reply: array {more, drained, key1, task1, key2, task2, ...}
--   more     1 when the call stopped at ARGV[4] and should be repeated
--   drained  1 when the slice is empty for good
local now = tonumber(ARGV[1])
local lease = tonumber(ARGV[3])
local max = math.min(tonumber(ARGV[4]), 1000)
local out = {0, 0}

-- bulk runs cmd on key with args, a bounded number at a time (unpack has
-- a stack limit); step is even so pairs are never split.
local function bulk(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

local keys, starts = {}, {}
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, max)) do
  keys[#keys + 1] = key
  starts[#starts + 1] = now
end
if #keys < max then
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', 0, max - #keys)
  local members = {}
  for i = 1, #due, 2 do
    local start = tonumber(due[i + 1])
    if start < now then start = now end
    keys[#keys + 1] = due[i]
    starts[#starts + 1] = start
    members[#members + 1] = due[i]
  end
  if #members > 0 then bulk('ZREM', KEYS[1], members) end
end

if #keys > 0 then
  local tasks = redis.call('HMGET', KEYS[2], unpack(keys))
  local removed = redis.call('SMISMEMBER', KEYS[4], unpack(keys))
  local leases, dropped = {}, {}
  for i, key in ipairs(keys) do
    if tasks[i] and removed[i] == 0 then
      leases[#leases + 1] = string.format('%d', starts[i] + lease)
      leases[#leases + 1] = key
      out[#out + 1] = key
      out[#out + 1] = tasks[i]
    else
      dropped[#dropped + 1] = key
    end
  end
  if #leases > 0 then bulk('ZADD', KEYS[3], leases) end
  if #dropped > 0 then
    bulk('HDEL', KEYS[2], dropped)
    bulk('ZREM', KEYS[3], dropped)
  end
end

if #keys >= max then
  out[1] = 1
elseif ARGV[5] == '1' and redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[2])
  if redis.call('EXISTS', KEYS[4]) == 1 then
    redis.call('PEXPIRE', KEYS[4], ARGV[6])
  end
  out[2] = 1
end
return out
