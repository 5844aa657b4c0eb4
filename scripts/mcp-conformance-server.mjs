// The MCP server the conformance suite's server scenarios expect: the fixed `test_*` tools and prompts and the
// `test://` resources that @modelcontextprotocol/conformance calls (its scenario descriptions specify them). No
// package on the npm registry ships such a server (@modelcontextprotocol/server-everything has other tools, the
// conformance package ships only its runner), so this one is written here on the TypeScript SDK from npm.
//
// Usage: PORT=<port> node mcp-conformance-server.mjs. Serves Streamable HTTP at http://127.0.0.1:<port>/mcp with
// stateful sessions and DNS rebinding protection (Host must be a loopback name). It must run from a folder whose
// node_modules holds @modelcontextprotocol/sdk, express and zod (mcp-conformance.sh copies it next to them).
// Note: the SDK calls the handler of a tool registered without inputSchema as (extra), not (args, extra).
import { randomUUID } from "node:crypto";
import { completable } from "@modelcontextprotocol/sdk/server/completable.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

// A 1x1 PNG and a 1-sample 8 kHz mono WAV, built here so nothing binary is committed.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = (() => {
  const b = Buffer.alloc(46);
  b.write("RIFF", 0); b.writeUInt32LE(38, 4); b.write("WAVEfmt ", 8); b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22); b.writeUInt32LE(8000, 24); b.writeUInt32LE(16000, 28);
  b.writeUInt16LE(2, 32); b.writeUInt16LE(16, 34); b.write("data", 36); b.writeUInt32LE(2, 40);
  return b.toString("base64");
})();
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });

function registerTools(server) {
  server.registerTool("test_simple_text", { description: "Returns simple text content" }, async () =>
    text("This is a simple text response for testing."));
  server.registerTool("test_image_content", { description: "Returns a PNG image" }, async () => ({
    content: [{ type: "image", data: PNG, mimeType: "image/png" }],
  }));
  server.registerTool("test_audio_content", { description: "Returns a WAV clip" }, async () => ({
    content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }],
  }));
  server.registerTool("test_embedded_resource", { description: "Returns an embedded resource" }, async () => ({
    content: [{ type: "resource", resource: {
      uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } }],
  }));
  server.registerTool("test_multiple_content_types", { description: "Returns text, image and resource" }, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "resource", resource: {
        uri: "test://mixed-content-resource", mimeType: "application/json", text: '{"test":"data","value":123}' } },
    ],
  }));
  server.registerTool("test_tool_with_logging", { description: "Logs three messages while running" }, async (extra) => {
    for (const [i, data] of ["Tool execution started", "Tool processing data", "Tool execution completed"].entries()) {
      if (i) await pause(50);
      await extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
    }
    return text("Tool with logging executed successfully");
  });
  server.registerTool("test_tool_with_progress", { description: "Reports progress 0, 50, 100 of 100" }, async (extra) => {
    const token = extra._meta?.progressToken;
    for (const [i, progress] of [0, 50, 100].entries()) {
      if (i) await pause(50);
      if (token !== undefined) {
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
      }
    }
    return text("Tool with progress executed successfully");
  });
  // server-sse-polling (SEP-1699): close the call's SSE stream mid-call; the client resumes with Last-Event-ID.
  server.registerTool("test_reconnection", { description: "Closes its stream mid-call, then answers" }, async (extra) => {
    await pause(100);
    extra.closeSSEStream?.();
    await pause(100);
    return text("Reconnection test completed successfully");
  });
  server.registerTool("test_error_handling", { description: "Always fails" }, async () => ({
    isError: true, ...text("This tool intentionally returns an error for testing"),
  }));
  registerClientRequestTools(server);
}

// Tools that ask the client something (sampling, elicitation) on the tool call's own stream.
function registerClientRequestTools(server) {
  server.registerTool("test_sampling", {
    description: "Asks the client's LLM", inputSchema: { prompt: z.string().describe("The prompt to send") },
  }, async ({ prompt }, extra) => {
    const r = await extra.sendRequest({ method: "sampling/createMessage", params: {
      messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 100 } }, CreateMessageResultSchema);
    return text(`LLM response: ${r.content?.type === "text" ? r.content.text : JSON.stringify(r.content)}`);
  });
  const elicit = async (extra, message, properties, required) => {
    const r = await extra.sendRequest({ method: "elicitation/create", params: {
      message, requestedSchema: { type: "object", properties, ...(required && { required }) } } }, ElicitResultSchema);
    return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  };
  server.registerTool("test_elicitation", {
    description: "Asks the user for input", inputSchema: { message: z.string().describe("The message to show") },
  }, async ({ message }, extra) => elicit(extra, message, {
    username: { type: "string", description: "User's response" },
    email: { type: "string", description: "User's email address" },
  }, ["username", "email"]));
  server.registerTool("test_elicitation_sep1034_defaults", { description: "Elicitation with defaults" }, async (extra) =>
    elicit(extra, "Please review and update the form fields with defaults", {
      name: { type: "string", description: "User name", default: "John Doe" },
      age: { type: "integer", description: "User age", default: 30 },
      score: { type: "number", description: "User score", default: 95.5 },
      status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
      verified: { type: "boolean", description: "Verification status", default: true },
    }));
  const choices = (prefix, titles) => titles.map((title, i) => ({ const: `${prefix}${i + 1}`, title }));
  server.registerTool("test_elicitation_sep1330_enums", { description: "Elicitation with every enum form" }, async (extra) =>
    elicit(extra, "Please select options from the enum fields", {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: { type: "string", oneOf: choices("value", ["First Option", "Second Option", "Third Option"]) },
      legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
      untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: { type: "array", items: { anyOf: choices("value", ["First Choice", "Second Choice", "Third Choice"]) } },
    }));
}

function registerResources(server) {
  const fixed = (name, uri, mimeType, body) =>
    server.registerResource(name, uri, { description: `${name} for conformance tests`, mimeType }, async () => ({
      contents: [{ uri, mimeType, ...body }],
    }));
  fixed("static-text", "test://static-text", "text/plain", { text: "This is the content of the static text resource." });
  fixed("static-binary", "test://static-binary", "image/png", { blob: PNG });
  fixed("watched-resource", "test://watched-resource", "text/plain", { text: "Watched resource content" });
  server.registerResource("template", new ResourceTemplate("test://template/{id}/data", { list: undefined }), {
    description: "Parameterised resource", mimeType: "application/json",
  }, async (uri, { id }) => ({
    contents: [{ uri: uri.href, mimeType: "application/json",
      text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }],
  }));
  // Subscriptions are accepted and remembered; the suite only checks the answers.
  const watched = new Set();
  server.server.setRequestHandler(SubscribeRequestSchema, async (req) => (watched.add(req.params.uri), {}));
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => (watched.delete(req.params.uri), {}));
}

function registerPrompts(server) {
  const user = (content) => ({ role: "user", content });
  server.registerPrompt("test_simple_prompt", { description: "A prompt without arguments" }, async () => ({
    messages: [user({ type: "text", text: "This is a simple prompt for testing." })],
  }));
  server.registerPrompt("test_prompt_with_arguments", {
    description: "A prompt with two arguments",
    argsSchema: {
      arg1: completable(z.string().describe("First test argument"), (v) => ["paris", "park", "party"].filter((s) => s.startsWith(v ?? ""))),
      arg2: z.string().describe("Second test argument"),
    },
  }, async ({ arg1, arg2 }) => ({
    messages: [user({ type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` })],
  }));
  server.registerPrompt("test_prompt_with_embedded_resource", {
    description: "A prompt embedding a resource", argsSchema: { resourceUri: z.string().describe("URI to embed") },
  }, async ({ resourceUri }) => ({
    messages: [
      user({ type: "resource", resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } }),
      user({ type: "text", text: "Please process the embedded resource above." }),
    ],
  }));
  server.registerPrompt("test_prompt_with_image", { description: "A prompt with an image" }, async () => ({
    messages: [user({ type: "image", data: PNG, mimeType: "image/png" }), user({ type: "text", text: "Please analyze the image above." })],
  }));
}

// json-schema-2020-12 (SEP-1613): the listing must keep $schema, $defs and additionalProperties. The SDK writes a
// tool's inputSchema from zod, so the listing of this one tool is given its 2020-12 schema verbatim.
const SCHEMA_2020_12 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
  properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
  additionalProperties: false,
};

function registerSchemaTool(server) {
  server.registerTool("json_schema_2020_12_tool", {
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: { name: z.string().optional(), address: z.object({ street: z.string().optional(), city: z.string().optional() }).optional() },
  }, async (args) => text(`Received: ${JSON.stringify(args)}`));
  const handlers = server.server._requestHandlers;
  const list = handlers.get("tools/list");
  handlers.set("tools/list", async (request, extra) => {
    const result = await list(request, extra);
    for (const tool of result.tools) if (tool.name === "json_schema_2020_12_tool") tool.inputSchema = SCHEMA_2020_12;
    return result;
  });
}

function newServer() {
  const server = new McpServer(
    { name: "forecourt-conformance-server", version: "1.0.0" },
    { capabilities: { logging: {}, completions: {}, resources: { subscribe: true } } },
  );
  registerTools(server);
  registerSchemaTool(server);
  registerResources(server);
  registerPrompts(server);
  return server;
}

const app = createMcpExpressApp({ host: "127.0.0.1" });
const sessions = new Map(); // Mcp-Session-Id -> transport (one McpServer per session)

app.post("/mcp", async (req, res) => {
  const sid = req.headers["mcp-session-id"];
  let transport = sid && sessions.get(sid);
  if (!transport) {
    if (sid || !isInitializeRequest(req.body)) {
      res.status(sid ? 404 : 400).json({ jsonrpc: "2.0", error: { code: -32000, message: "No valid session" }, id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new InMemoryEventStore(), // resumable streams (priming event, Last-Event-ID)
      retryInterval: 500,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});
const bySession = async (req, res) => {
  const transport = sessions.get(req.headers["mcp-session-id"]);
  if (!transport) {
    res.status(req.headers["mcp-session-id"] ? 404 : 400).send("No valid session");
    return;
  }
  await transport.handleRequest(req, res);
};
app.get("/mcp", bySession);
app.delete("/mcp", bySession);

const port = Number(process.env.PORT || 3000);
app.listen(port, "127.0.0.1", () => console.log(`conformance server on http://127.0.0.1:${port}/mcp`));
