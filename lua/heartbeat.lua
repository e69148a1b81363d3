-- heartbeat.lua: record that a worker is alive, with what it reports.
--
-- KEYS[1]  registry   zset  worker id -> last seen (ms)
-- KEYS[2]  heartbeat  hash  of this worker: field -> value
-- ARGV[1]  worker id
-- ARGV[2]  now (ms)
-- ARGV[3]  time to live of the heartbeat hash (ms)
-- ARGV     then pairs: field, value
--
-- Both keys share the registry's hash tag. Registry entries older than the
-- time to live are dropped: their hashes have expired.
--
-- Reply: integer, the number of workers in the registry.
local now = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local fields = {}
for i = 4, #ARGV - 1, 2 do
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
end
redis.call('DEL', KEYS[2])
if #fields > 0 then
  redis.call('HSET', KEYS[2], unpack(fields))
end
redis.call('HSET', KEYS[2], 'seen', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
return redis.call('ZCARD', KEYS[1])
