-- watermark.lua: move the shared watermark (the oldest epoch minute not yet
-- drained) forward, never back.
--
-- KEYS[1]  watermark string  epoch minute
-- ARGV[1]  proposed minute
--
-- Reply: integer, the watermark after the call.
local cur = tonumber(redis.call('GET', KEYS[1]))
local proposed = tonumber(ARGV[1])
if cur == nil or cur < proposed then
  redis.call('SET', KEYS[1], ARGV[1])
  return proposed
end
return cur
