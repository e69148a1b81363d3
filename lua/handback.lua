-- handback.lua: give leased tasks that a stopping worker did not fire back
-- to the slice, due at their own time, so other workers fire them on time
-- instead of after the lease.
--
-- KEYS[1]  slice due    zset  task key -> due time (ms)
-- KEYS[2]  slice body   hash  task key -> versioned task
-- KEYS[3]  slice lease  zset  task key -> lease deadline (ms)
-- ARGV     triples: task key, version, due time (ms)
--
-- Reply: integer, the number of tasks handed back. A task removed or
-- replaced meanwhile is left alone.
local n = 0
for i = 1, #ARGV, 3 do
  local key = ARGV[i]
  local version = ARGV[i + 1]
  local task = redis.call('HGET', KEYS[2], key)
  if task and string.sub(task, 1, #version) == version and redis.call('ZREM', KEYS[3], key) == 1 then
    redis.call('ZADD', KEYS[1], ARGV[i + 2], key)
    n = n + 1
  end
end
return n
