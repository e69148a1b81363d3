-- stats_add.lua: add a worker's counts to one minute's statistics.
--
-- KEYS[1]  stats hash  field -> count, for one epoch minute
-- ARGV[1]  time to live of the hash (ms), so old minutes go by themselves
-- ARGV     then pairs: field, increment
--
-- Fields are "fired", "delivered", "retried", "dead", "dropped" and
-- "l<ms>", the lateness histogram: attempts that started at most <ms>
-- milliseconds late (and more than the bucket below).
--
-- Reply: integer, the number of fields incremented.
local n = 0
for i = 2, #ARGV - 1, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
  n = n + 1
end
if n > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n
