// An MCP client on the official TypeScript SDK that answers its servers' questions itself
// (elicitation, form and URL mode), for the gateway tests: connects to URL over streamable
// HTTP, prints {"tools": [names], "session": bool} (whether the server gave it a session), calls
// TOOL with the JSON ARGUMENTS and prints {"result": {"isError": bool, "text": "..."}}, one JSON
// line each. ANSWER says what it does with a question, printed as {"elicited": params} when it
// arrives:
//   - a JSON object: accepts it as the form's content;
//   - "wait": answers nothing, and prints {"cancelled": reason} once the server withdraws it;
//   - "none": offers no elicitation at all (a question would fail the run).
//
//     node elicit_client.mjs URL TOOL ARGUMENTS ANSWER
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, tool, args, answer] = process.argv.slice(2);
const print = (line) => console.log(JSON.stringify(line));
const capabilities = answer === "none" ? {} : { elicitation: { form: {}, url: {} } };
const client = new Client({ name: "signoff-elicit-test", version: "1.0.0" }, { capabilities });
if (answer !== "none") {
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    print({ elicited: request.params });
    if (answer !== "wait") {
      return { action: "accept", content: JSON.parse(answer) };
    }
    // Never answered: only the server's notifications/cancelled ends it (the SDK then sends
    // nothing back).
    const reason = await new Promise((resolve) => {
      extra.signal.addEventListener("abort", () => resolve(String(extra.signal.reason)));
    });
    print({ cancelled: reason });
    return { action: "cancel" };
  });
}
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const listed = await client.listTools();
print({ tools: listed.tools.map((t) => t.name), session: Boolean(transport.sessionId) });
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, {
  timeout: 600000,
  resetTimeoutOnProgress: true,
});
const text = result.content.filter((item) => item.type === "text").map((item) => item.text).join("\n");
print({ result: { isError: Boolean(result.isError), text } });
await client.close();
