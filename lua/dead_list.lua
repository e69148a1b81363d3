-- dead_list.lua: list dead letters, newest first.
--
-- KEYS[1]  dead at    zset  task key -> time it died (ms)
-- KEYS[2]  dead body  hash  task key -> versioned task
-- ARGV[1]  most entries to return
--
-- Reply: array {key1, task1, key2, task2, ...}; an entry whose body is
-- missing is skipped.
local keys = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local out = {}
for _, key in ipairs(keys) do
  local task = redis.call('HGET', KEYS[2], key)
  if task then
    out[#out + 1] = key
    out[#out + 1] = task
  end
end
return out
