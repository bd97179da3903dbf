-- wrk script of bench/cache.sh and bench/cache-memory.sh: every request a new key of
-- /api/v1/x with a 50-byte answer (or as many bytes as its one argument says:
-- `wrk -s bench/cache-unique.lua URL -- 10240`). Every key is new: the run's start time, the wrk
-- thread's own number (each thread is its own Lua state: without it every thread asked
-- for the same keys, and all but the first were hits) and a counter. A counter from 0
-- each run asked again for the keys an earlier round stored (under 60 s ago), so later
-- rounds measured hits, not misses.
local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
local prefix, n, size = "", 0, "50"
function init(args)
  prefix = os.time() .. "-" .. id .. "-"
  if args[1] then size = args[1] end
end
request = function()
  n = n + 1
  return wrk.format("GET", "/api/v1/x?size=" .. size .. "&n=" .. prefix .. n)
end
