-- `tools/call inventory.search` as a 2026-07-28 (stateless) MCP Streamable HTTP request, POST /mcp.
-- Environment: BENCH_TOKEN (bearer API key), BENCH_DEALERSHIP (default demo-toyota-sf).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "common.lua")
local token = os.getenv("BENCH_TOKEN") or ""
local dealer = os.getenv("BENCH_DEALERSHIP") or "demo-toyota-sf"
local headers = {
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = "2026-07-28",
  ["Mcp-Method"] = "tools/call",
  ["Mcp-Name"] = "inventory.search",
}
if token ~= "" then headers["Authorization"] = "Bearer " .. token end
install("/mcp", headers,
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inventory.search",'
    .. '"arguments":{"dealership_id":"' .. dealer .. '","limit":10},'
    .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"},'
    .. '"io.modelcontextprotocol/clientCapabilities":{}}}}',
  '"vin"', {'"isError":true', '"error":{'})
