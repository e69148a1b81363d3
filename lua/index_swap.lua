-- index_swap.lua: point task keys of one index bucket at their new
-- locations, or forget them, and return where they were.
--
-- KEYS[1]  index hash  task key -> location "version|state|minute|shard"
-- ARGV     pairs: task key, new location or "" to delete the entry
--
-- Reply: array with one element per pair: the previous location, or false
-- (nil) when there was none.
local out = {}
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
  out[#out + 1] = old
end
return out
