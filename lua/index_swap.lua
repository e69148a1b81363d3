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
local function bulk(cmd, key, args)
  local out = {}
  for i = 1, #args, 1000 do
    local part = redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do out[#out + 1] = v end
    end
  end
  return out
end

local keys, sets, dels = {}, {}, {}
for i = 1, #ARGV, 2 do
  keys[#keys + 1] = ARGV[i]
  if ARGV[i + 1] == '' then
    dels[#dels + 1] = ARGV[i]
  else
    sets[#sets + 1] = ARGV[i]
    sets[#sets + 1] = ARGV[i + 1]
  end
end
if #keys == 0 then return {} end
local out = bulk('HMGET', KEYS[1], keys)
if #sets > 0 then bulk('HSET', KEYS[1], sets) end
if #dels > 0 then bulk('HDEL', KEYS[1], dels) end
return out
