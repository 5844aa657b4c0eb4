-- The REST envelope: POST /mcp/inventory.search {"id", "payload"}.
-- Environment: BENCH_TOKEN (bearer API key), BENCH_DEALERSHIP (default demo-toyota-sf).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "common.lua")
local token = os.getenv("BENCH_TOKEN") or ""
local dealer = os.getenv("BENCH_DEALERSHIP") or "demo-toyota-sf"
local headers = {}
if token ~= "" then headers["Authorization"] = "Bearer " .. token end
install("/mcp/inventory.search", headers,
  '{"id":"bench","payload":{"dealership_id":"' .. dealer .. '","limit":10}}',
  '"vin"', {'"error":{'})
