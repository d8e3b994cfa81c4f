// The Go integration tests' hands on the official TypeScript SDK: it starts
// `broker mcp` with the SDK's StdioClientTransport and drives it with the
// SDK's Client, one operation per line. Each line on stdin is a JSON
// object {op, ...}; each answer is one JSON line on stdout. All protocol
// work (initialize, schemas, output validation against each tool's
// outputSchema, progress tokens, elicitation) is the SDK's; this file only
// relays.
//
// The server's argv is the JSON array in WARRANT_MCP_SERVER.
import readline from "node:readline";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = JSON.parse(process.env.WARRANT_MCP_SERVER);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "warrant-integration", version: "1.0.0" }, { capabilities: { elicitation: {} } });

// Every elicitation is answered "accept", as a careless human might: the
// tests check that it approves nothing.
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicited.push(req.params);
  return { action: "accept", content: {} };
});
await client.connect(transport);
await client.listTools(); // the SDK validates structured results against the schemas it lists

const failure = (e) => ({ code: e?.code ?? null, message: String(e?.message ?? e) });

const ops = {
  info: async () => ({ server: client.getServerVersion(), capabilities: client.getServerCapabilities(), instructions: client.getInstructions() }),
  list: async () => client.listTools(),
  // call makes one tools/call; with progress it passes a progress token
  // and returns the notifications that came with it.
  call: async ({ name, arguments: a, progress }) => {
    const notes = [];
    const options = progress ? { onprogress: (p) => notes.push(p) } : undefined;
    try {
      return { result: await client.callTool({ name, arguments: a }, undefined, options), progress: notes };
    } catch (e) {
      return { error: failure(e), progress: notes };
    }
  },
  // bench makes n identical calls and returns each one's duration in ms,
  // as this client sees it; it stops at the first that did not exit 0.
  bench: async ({ name, arguments: a, n }) => {
    const ms = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const r = await client.callTool({ name, arguments: a });
      ms.push(performance.now() - t0);
      if (r.isError || r.structuredContent?.result?.exit_code !== 0) {
        return { ms, stopped: r };
      }
    }
    return { ms };
  },
  elicited: async () => ({ elicited }),
  close: async () => {
    await client.close();
    return {};
  },
};

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const req = JSON.parse(line);
  let answer;
  try {
    answer = await ops[req.op](req);
  } catch (e) {
    answer = { error: failure(e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
  if (req.op === "close") {
    break;
  }
}
