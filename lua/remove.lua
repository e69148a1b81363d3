-- remove.lua: remove a task's entry from one slice: its due time, lease and
-- body. Used to cancel a task, to acknowledge a delivered one, and to clear
-- the older entry of a replaced one.
--
-- KEYS[1]  slice due    zset  task key -> due time (ms)
-- KEYS[2]  slice body   hash  task key -> versioned task
-- KEYS[3]  slice lease  zset  task key -> lease deadline (ms)
-- KEYS[4]  slice del    set   tombstones
-- ARGV[1]  task key
-- ARGV[2]  version: remove only that version; "" removes whatever is there
-- ARGV[3]  "1" to leave a tombstone, so a racing writer's entry is filtered
--
-- Reply: integer, 1 when an entry was removed, 0 when there was none or it
-- had another version (then nothing is touched).
local key = ARGV[1]
local version = ARGV[2]
local task = redis.call('HGET', KEYS[2], key)
if version ~= '' and (not task or string.sub(task, 1, #version) ~= version) then
  return 0
end
if ARGV[3] == '1' then
  redis.call('SADD', KEYS[4], key)
end
local removed = redis.call('ZREM', KEYS[1], key) + redis.call('ZREM', KEYS[3], key) + redis.call('HDEL', KEYS[2], key)
if task or removed > 0 then
  return 1
end
return 0
