-- index_swap.lua: point task keys of one index bucket at their new
-- locations, or forget them, and return where they were.
--
-- KEYS[1]  index hash  task key -> location "version|state|minute|shard"
-- ARGV     pairs: task key, new location or "" to delete the entry; a key
--          appears at most once
--
-- Commands are issued in bulk (one HMGET, one HSET, one HDEL per thousand
-- keys), not one or two per key: the index is written on every add.
--
-- Reply: array with one element per pair: the previous location, or false
-- (nil) when there was none.
local keys, sets, dels = {}, {}, {}
for i = 1, #ARGV, 2 do
  local key, loc = ARGV[i], ARGV[i + 1]
  keys[#keys + 1] = key
  if loc == '' then
    dels[#dels + 1] = key
  else
    sets[#sets + 1] = key
    sets[#sets + 1] = loc
  end
end
if #keys == 0 then return {} end
-- unpack has a stack limit: at most a thousand arguments per command.
local out
if #keys <= 1000 then
  out = redis.call('HMGET', KEYS[1], unpack(keys))
else
  out = {}
  for i = 1, #keys, 1000 do
    local part = redis.call('HMGET', KEYS[1], unpack(keys, i, math.min(i + 999, #keys)))
    for j = 1, #part do out[#out + 1] = part[j] end
  end
end
for i = 1, #sets, 1000 do
  redis.call('HSET', KEYS[1], unpack(sets, i, math.min(i + 999, #sets)))
end
for i = 1, #dels, 1000 do
  redis.call('HDEL', KEYS[1], unpack(dels, i, math.min(i + 999, #dels)))
end
return out
