-- retry.lua: schedule the next attempt of a task that failed, in the slice
-- of its retry time.
--
-- KEYS[1]  slice due    zset  task key -> due time (ms)
-- KEYS[2]  slice body   hash  task key -> versioned task
-- KEYS[3]  slice lease  zset  task key -> lease deadline (ms)
-- KEYS[4]  slice del    set   tombstones
-- ARGV[1]  task key
-- ARGV[2]  version the worker pulled
-- ARGV[3]  retry time (ms)
-- ARGV[4]  versioned task with its attempt count raised
-- ARGV[5]  "same" when this is the slice the task was pulled from: the
--          task must still be here under that version (not removed, not
--          replaced); "move" when it is another slice: no other version may
--          be here, and the caller confirms the move in the index next.
--
-- Reply: integer, 1 when written, 0 when refused (removed or replaced).
local key = ARGV[1]
local version = ARGV[2]
local task = redis.call('HGET', KEYS[2], key)
if task and string.sub(task, 1, #version) ~= version then
  return 0
end
if ARGV[5] == 'same' then
  if not task or redis.call('SISMEMBER', KEYS[4], key) == 1 then
    return 0
  end
else
  redis.call('SREM', KEYS[4], key)
end
redis.call('ZREM', KEYS[3], key)
redis.call('ZADD', KEYS[1], ARGV[3], key)
redis.call('HSET', KEYS[2], key, ARGV[4])
return 1
