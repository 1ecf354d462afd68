// An MCP client on the official TypeScript SDK (npm @modelcontextprotocol/sdk, pinned in this
// folder's package-lock.json), for the gateway tests: connects to URL over streamable HTTP,
// lists the tools, prints {"tools": [names], "revision": "…"} (the revision it negotiated), calls TOOL with the JSON ARGUMENTS and prints
// {"result": {"isError": bool, "text": "..."}}, one JSON line each.
//
//     node mcp_client.mjs URL TOOL ARGUMENTS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, args] = process.argv.slice(2);
const client = new Client({ name: "signoff-gateway-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const listed = await client.listTools();
const revision = transport.protocolVersion;
console.log(JSON.stringify({ tools: listed.tools.map((t) => t.name), revision }));
// A held call waits for a person: no client-side timeout while it does.
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, {
  timeout: 600000,
  resetTimeoutOnProgress: true,
});
const text = result.content.filter((item) => item.type === "text").map((item) => item.text).join("\n");
console.log(JSON.stringify({ result: { isError: Boolean(result.isError), text } }));
await client.close();
