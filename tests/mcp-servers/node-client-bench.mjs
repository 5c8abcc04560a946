// The Node baseline of the MCP benchmark (scripts/bench): the official TypeScript SDK
// client calls the `echo` tool of a stdio MCP server CALLS times in a row, ROUNDS times,
// and prints the median time per call as one JSON line.
//
//   node node-client-bench.mjs SERVER_COMMAND [CALLS] [ROUNDS]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, calls = "1000", rounds = "5"] = process.argv.slice(2);
if (!command) {
  console.error("usage: node node-client-bench.mjs SERVER_COMMAND [CALLS] [ROUNDS]");
  process.exit(2);
}
const client = new Client({ name: "exec-host-bench", version: "0.0.0" });
await client.connect(new StdioClientTransport({ command, args: [], stderr: "ignore" }));

async function round(n) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const result = await client.callTool({ name: "echo", arguments: { i } });
    if (result.structuredContent?.i !== i) throw new Error(`wrong answer ${JSON.stringify(result)}`);
  }
  return Number(process.hrtime.bigint() - started) / 1000 / n;
}

await round(100); // warm-up
const perCall = [];
for (let r = 0; r < Number(rounds); r++) perCall.push(await round(Number(calls)));
perCall.sort((a, b) => a - b);
console.log(JSON.stringify({ runner: "node-sdk-client", name: "mcp_seq", per_call_us: perCall[Math.floor(perCall.length / 2)] }));
await client.close();
