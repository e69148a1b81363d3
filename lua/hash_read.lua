-- hash_read.lua: read a whole hash; a script so that many hashes are read
-- in one pipelined round trip (statistics of 60 minutes, heartbeats).
--
-- KEYS[1]  a hash
-- ARGV     none
--
-- Reply: array, field, value, field, value ... (empty when there is no hash).
return redis.call('HGETALL', KEYS[1])
