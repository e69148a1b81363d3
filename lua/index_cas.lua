-- index_cas.lua: move or forget task keys of one index bucket, each only if
-- it still points at the version the caller holds (compare and set).
--
-- KEYS[1]  index hash  task key -> location "version|state|minute|shard"
-- ARGV     triples: task key, expected version, new location or "" to
--          delete the entry
--
-- Reply: array with one integer per triple: 1 when changed, 0 when the key
-- has another version (it was replaced meanwhile), -1 when it has no entry
-- (removed, or its add has not written the entry yet).
local out = {}
for i = 1, #ARGV, 3 do
  local key = ARGV[i]
  local expected = ARGV[i + 1] .. '|'
  local cur = redis.call('HGET', KEYS[1], key)
  if cur and string.sub(cur, 1, #expected) == expected then
    if ARGV[i + 2] == '' then
      redis.call('HDEL', KEYS[1], key)
    else
      redis.call('HSET', KEYS[1], key, ARGV[i + 2])
    end
    out[#out + 1] = 1
  elseif cur then
    out[#out + 1] = 0
  else
    out[#out + 1] = -1
  end
end
return out
