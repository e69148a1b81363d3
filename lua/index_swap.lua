-- index_swap.lua: point a task key at its new location, or forget it, and
-- return where it was.
--
-- KEYS[1]  index hash  task key -> location "version|state|minute|shard"
-- ARGV[1]  task key
-- ARGV[2]  new location, or "" to delete the entry
--
-- Reply: bulk string, the previous location, or nil when there was none.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return old
