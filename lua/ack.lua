-- ack.lua: forget delivered tasks of one slice.
--
-- KEYS[1]  slice due    zset  task key -> due time (ms)
-- KEYS[2]  slice body   hash  task key -> versioned task
-- KEYS[3]  slice lease  zset  task key -> lease deadline (ms)
-- KEYS[4]  slice del    set   tombstones
-- ARGV     pairs: task key, version the worker delivered (at most 1000)
--
-- An entry is removed only when it still holds the delivered version: a
-- task replaced while its callback was in flight keeps its new entry.
--
-- Reply: integer, the number of entries removed.
local keys = {}
for i = 1, #ARGV, 2 do
  keys[#keys + 1] = ARGV[i]
end
if #keys == 0 then return 0 end
local tasks = redis.call('HMGET', KEYS[2], unpack(keys))
local done = {}
for i, key in ipairs(keys) do
  local version = ARGV[2 * i]
  if tasks[i] and string.sub(tasks[i], 1, #version) == version then
    done[#done + 1] = key
  end
end
if #done == 0 then return 0 end
redis.call('HDEL', KEYS[2], unpack(done))
redis.call('ZREM', KEYS[3], unpack(done))
redis.call('ZREM', KEYS[1], unpack(done))
return #done
