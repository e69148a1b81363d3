-- index_cas.lua: move or forget a task key in the index only if it still
-- points at the version the caller holds (compare and set).
--
-- KEYS[1]  index hash  task key -> location "version|state|minute|shard"
-- ARGV[1]  task key
-- ARGV[2]  expected version
-- ARGV[3]  new location, or "" to delete the entry
--
-- Reply: integer, 1 when changed, 0 when the key is gone or has another
-- version (it was removed or replaced meanwhile).
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or string.sub(cur, 1, #ARGV[2] + 1) ~= ARGV[2] .. '|' then
  return 0
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
return 1
