-- A2A v1.0 `SendMessage` carrying an AAP inventory.search request (JSON-RPC binding, anonymous public agent),
-- POST /dealers/<dealership>/a2a/jsonrpc. Environment: BENCH_DEALERSHIP (default demo-toyota-sf).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "common.lua")
local dealer = os.getenv("BENCH_DEALERSHIP") or "demo-toyota-sf"
install("/dealers/" .. dealer .. "/a2a/jsonrpc", {["A2A-Version"] = "1.0"},
  '{"jsonrpc":"2.0","id":"b","method":"SendMessage","params":{"message":{"messageId":"bench","role":"ROLE_USER",'
    .. '"parts":[{"data":{"type":"inventory.search.request","filters":{"condition":["used"]},'
    .. '"pagination":{"skip":0,"limit":10},"sort":{"field":"price","order":"asc"}},'
    .. '"mediaType":"application/vnd.autoagent.inventory-search-request+json"}]},'
    .. '"configuration":{"acceptedOutputModes":["application/vnd.autoagent.inventory-search-response+json"]}}}',
  '"result"', {'"error":{'})
