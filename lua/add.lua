-- add.lua: schedule tasks in one slice, replacing any entry under the same key.
--
-- KEYS[1]  slice due    zset  task key -> due time (ms)
-- KEYS[2]  slice body   hash  task key -> versioned task
-- KEYS[3]  slice lease  zset  task key -> lease deadline (ms)
-- KEYS[4]  slice del    set   tombstones
-- ARGV     triples: task key, due time (ms), versioned task
--
-- A fresh add clears the key's tombstone and any lease of an older version in
-- this slice, so an in-flight older version can no longer ack or retry here.
--
-- Reply: integer, the number of tasks written.
local n = 0
for i = 1, #ARGV, 3 do
  local key = ARGV[i]
  redis.call('SREM', KEYS[4], key)
  redis.call('ZREM', KEYS[3], key)
  redis.call('ZADD', KEYS[1], ARGV[i + 1], key)
  redis.call('HSET', KEYS[2], key, ARGV[i + 2])
  n = n + 1
end
return n
