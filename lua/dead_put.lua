-- dead_put.lua: keep a task that ran out of attempts as a dead letter.
--
-- KEYS[1]  dead at    zset  task key -> time it died (ms)
-- KEYS[2]  dead body  hash  task key -> versioned task with its last error
-- ARGV[1]  task key
-- ARGV[2]  time it died (ms)
-- ARGV[3]  versioned task
-- ARGV[4]  its version
--
-- Reply: integer, 1 when stored, 0 when a dead letter of another version of
-- the key is there (a newer task replaced this one; the caller drops it).
local cur = redis.call('HGET', KEYS[2], ARGV[1])
if cur and string.sub(cur, 1, #ARGV[4]) ~= ARGV[4] then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
