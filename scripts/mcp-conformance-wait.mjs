// Waits until an MCP endpoint lists a tool (the gateway connects to its upstreams in the background).
// Usage: node mcp-conformance-wait.mjs <url> <tool name> <timeout ms>. Plain fetch, no SDK: one handshake, then
// tools/list until the tool shows up. Exit 0 when it does, 1 on timeout.
const [url, tool, timeoutMs] = process.argv.slice(2);
const deadline = Date.now() + Number(timeoutMs || 30000);
const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };

async function rpc(body, extra = {}) {
  const res = await fetch(url, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(body) });
  const text = await res.text();
  const data = text.startsWith("{") ? text : text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).pop();
  return { res, json: data ? JSON.parse(data) : null };
}

while (Date.now() < deadline) {
  try {
    const init = await rpc({
      jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "wait", version: "1" } },
    });
    const sid = init.res.headers.get("mcp-session-id");
    const extra = { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
    await fetch(url, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
    const list = await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, extra);
    await fetch(url, { method: "DELETE", headers: extra });
    if ((list.json?.result?.tools ?? []).some((t) => t.name === tool)) process.exit(0);
  } catch {
    // not up yet
  }
  await new Promise((r) => setTimeout(r, 200));
}
console.error(`tool ${tool} not listed at ${url} in time`);
process.exit(1);
