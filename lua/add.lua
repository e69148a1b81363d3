-- add.lua: schedule tasks in one slice, replacing any entry under the same key.
--
-- KEYS[1]  slice due    zset  task key -> due time (ms)
-- KEYS[2]  slice body   hash  task key -> versioned task
-- KEYS[3]  slice lease  zset  task key -> lease deadline (ms)
-- KEYS[4]  slice del    set   tombstones
-- ARGV     triples: task key, due time (ms), versioned task; a key appears
--          at most once
--
-- A fresh add clears the key's tombstone and any lease of an older version in
-- this slice, so an in-flight older version can no longer ack or retry here;
-- when the slice has neither leases nor tombstones (the common case: a
-- minute not yet due) one EXISTS stands in for both. Commands are issued in
-- bulk, three or four per call whatever the batch size.
--
-- Reply: integer, the number of tasks written.
local function bulk(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

local keys, scores, bodies = {}, {}, {}
for i = 1, #ARGV, 3 do
  local key = ARGV[i]
  keys[#keys + 1] = key
  scores[#scores + 1] = ARGV[i + 1]
  scores[#scores + 1] = key
  bodies[#bodies + 1] = key
  bodies[#bodies + 1] = ARGV[i + 2]
end
if #keys == 0 then return 0 end
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then
  bulk('SREM', KEYS[4], keys)
  bulk('ZREM', KEYS[3], keys)
end
bulk('ZADD', KEYS[1], scores)
bulk('HSET', KEYS[2], bodies)
return #keys
