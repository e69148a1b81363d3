-- dead_take.lua: remove a dead letter and return it.
--
-- KEYS[1]  dead at    zset  task key -> time it died (ms)
-- KEYS[2]  dead body  hash  task key -> versioned task
-- ARGV[1]  task key
-- ARGV[2]  version: take only that version; "" takes whatever is there
--
-- Reply: bulk string, the versioned task, or nil when there was none (or it
-- had another version: then nothing is touched).
local task = redis.call('HGET', KEYS[2], ARGV[1])
if not task then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return nil
end
if ARGV[2] ~= '' and string.sub(task, 1, #ARGV[2]) ~= ARGV[2] then
  return nil
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return task
