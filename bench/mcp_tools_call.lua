-- wrk script: `tools/call inventory.search` as a 2026-07-28 (stateless) MCP request.
-- Environment: MCP_TOKEN (bearer, optional), MCP_DEALERSHIP (default demo-toyota-sf).
local token = os.getenv("MCP_TOKEN")
local dealer = os.getenv("MCP_DEALERSHIP") or "demo-toyota-sf"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "inventory.search"
if token and token ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. token
end
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inventory.search",'
  .. '"arguments":{"dealership_id":"' .. dealer .. '","limit":10},'
  .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"},'
  .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'

local failures = 0
function response(status, headers, body)
  if status ~= 200 or string.find(body, '"isError":true', 1, true) or not string.find(body, '"vin"', 1, true) then
    failures = failures + 1
    if failures == 1 then io.stderr:write("first bad response: " .. status .. " " .. string.sub(body, 1, 300) .. "\n") end
  end
end

function done(summary, latency, requests)
  io.write(string.format("JSON {\"requests\":%d,\"seconds\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"errors\":%d}\n",
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
