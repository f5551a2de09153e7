//! The Lua scripts Redis runs, each one atomic step: a publish (INCR + RPUSH to the queue and
//! the log, with optional duplicate suppression), a fetch (LMOVE to the consumer's own list,
//! counted and timed), the recovery of copies older than AckWait, and the effect commit.

pub(super) const PUBLISH: &str = r"
if ARGV[3] == '1' then
  local prior = redis.call('HGET', KEYS[4], ARGV[2])
  if prior then return {tonumber(prior), 1} end
end
local n = redis.call('INCR', KEYS[3])
local item = n .. '|' .. ARGV[1]
redis.call('RPUSH', KEYS[1], item)
redis.call('RPUSH', KEYS[2], item)
if ARGV[3] == '1' then redis.call('HSET', KEYS[4], ARGV[2], n) end
return {n, 0}
";

pub(super) const FETCH: &str = r"
local item = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
if not item then return false end
local seq = string.match(item, '^(%d+)|')
local n = redis.call('HINCRBY', KEYS[3], seq, 1)
local t = redis.call('TIME')
redis.call('HSET', KEYS[4], seq, t[1] * 1000 + math.floor(t[2] / 1000))
return {item, n}
";

pub(super) const RECOVER: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local moved = 0
for i = #items, 1, -1 do
  local item = items[i]
  local seq = string.match(item, '^(%d+)|')
  local at = tonumber(redis.call('HGET', KEYS[3], seq) or '0')
  if now - at >= tonumber(ARGV[1]) then
    redis.call('LREM', KEYS[1], 1, item)
    redis.call('LPUSH', KEYS[2], item)
    moved = moved + 1
  end
end
return moved
";

pub(super) const COMMIT: &str = r"
local n = #KEYS - 3
if ARGV[1] == '1' then
  for i = 1, n do
    local prior = redis.call('GET', KEYS[3 + i])
    if prior then
      if n == 1 then return {'2', prior} end
      return {'3'}
    end
  end
end
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if ARGV[2] == '1' and current ~= tonumber(ARGV[3]) then return {'3'} end
local counter = tonumber(ARGV[3])
local rev = redis.call('INCR', KEYS[3])
local out = {'1', tostring(rev)}
for i = 1, n do
  local at = 4 + 3 * (i - 1)
  counter = counter + tonumber(ARGV[at + 3])
  local remembered = rev .. ':' .. counter
  if tonumber(ARGV[4]) > 0 then
    redis.call('SET', KEYS[3 + i], remembered, 'PX', ARGV[4])
  else
    redis.call('SET', KEYS[3 + i], remembered)
  end
  redis.call('HSET', KEYS[1], ARGV[at + 1], ARGV[at + 2])
  out[#out + 1] = tostring(counter)
end
redis.call('SET', KEYS[2], counter)
return out
";
