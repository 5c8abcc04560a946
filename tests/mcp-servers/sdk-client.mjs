// A client of `exec-host serve` built on the official MCP TypeScript SDK, driven by the
// command-line tests: it connects (stdio or streamable HTTP), runs the steps it is given, and
// prints one JSON line per step with what it observed. The tests assert on those lines.
//
//   node sdk-client.mjs '{"connect": {...}, "steps": [...]}'
//
// connect: {"stdio": {"command", "args", "cwd", "env"}} or {"http": {"url", "token", "origin"}}
// steps:   {"do": "info"}                                   instructions and server name
//          {"do": "list"}                                   tools/list, whole, and how many list_changed came
//          {"do": "exec", "code", "progress"?}              an Exec call and what came with it
//          {"do": "exec_until", "code", "contains", "seconds"} Exec until its text contains a string
//          {"do": "exec_cancelled", "code", "file", "line"}  an Exec aborted once `file` holds `line`
//          {"do": "exec_parallel", "codes", "stagger_ms"}  Execs at once, each started `stagger_ms` after the last
//          {"do": "write", "path", "text"}                  writes a file (a config edit, say)
//          {"do": "close"}                                   closes the connection
// elicit:  answers to elicitation requests, in order: "once", "always", "deny" or "decline"
//          (an approval's decision), or an object (the content of another form).

import { readFileSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (result) => (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

const elicitations = [];
const answers = [...(plan.elicit ?? [])];
const client = new Client({ name: "sdk-test-client", version: "1.0.0" }, { capabilities: plan.elicit ? { elicitation: { form: {} } } : {} });
let listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => { listChanged += 1; });
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations.push(request.params);
    const answer = answers.shift() ?? "decline";
    if (answer === "decline") return { action: "decline" };
    // An object answers a form of its own fields (a downstream server's, passed on).
    if (typeof answer === "object") return { action: "accept", content: answer };
    return { action: "accept", content: { decision: answer } };
  });
}

function transport() {
  if (plan.connect.stdio) {
    const { command, args, cwd, env } = plan.connect.stdio;
    return new StdioClientTransport({ command, args, cwd, env, stderr: "ignore" });
  }
  const { url, token, origin } = plan.connect.http;
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (origin) headers.origin = origin;
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}

async function exec(code, options = {}) {
  return client.callTool({ name: "Exec", arguments: { code } }, undefined, { timeout: 60_000, ...options });
}

function observed(result, extra = {}) {
  return {
    isError: result.isError ?? false,
    text: text(result),
    blocks: (result.content ?? []).map((c) => (c.type === "text" ? { type: "text", text: c.text } : { type: c.type, mimeType: c.mimeType, bytes: c.data?.length ?? 0 })),
    structuredContent: result.structuredContent ?? null,
    ...extra,
  };
}

const steps = {
  info: async () => ({ instructions: client.getInstructions() ?? null, server: client.getServerVersion()?.name ?? null }),
  list: async () => ({ tools: (await client.listTools()).tools, listChanged }),
  exec: async (step) => {
    const progress = [];
    const asked = elicitations.length;
    const options = step.progress ? { onprogress: (p) => progress.push(p) } : {};
    const result = await exec(step.code, options);
    return observed(result, { progress, elicitations: elicitations.slice(asked) });
  },
  exec_until: async (step) => {
    const deadline = Date.now() + (step.seconds ?? 20) * 1000;
    let last;
    while (Date.now() < deadline) {
      last = observed(await exec(step.code));
      if (last.text.includes(step.contains)) return { ...last, found: true };
      await sleep(200);
    }
    return { ...last, found: false };
  },
  exec_cancelled: async (step) => {
    const controller = new AbortController();
    const running = exec(step.code, { signal: controller.signal }).then(
      (result) => ({ settled: "result", ...observed(result) }),
      (error) => ({ settled: "rejected", error: String(error?.message ?? error) }),
    );
    const deadline = Date.now() + 20_000;
    let seen = false;
    while (!seen && Date.now() < deadline) {
      try { seen = readFileSync(step.file, "utf8").includes(step.line); } catch { /* not yet written */ }
      if (!seen) await sleep(25);
    }
    controller.abort("the user pressed stop");
    return { seen, ...(await running) };
  },
  exec_parallel: async (step) => {
    const running = [];
    for (const code of step.codes) {
      running.push(exec(code).then((result) => observed(result)));
      await sleep(step.stagger_ms ?? 0);
    }
    return { results: await Promise.all(running) };
  },
  write: async (step) => { writeFileSync(step.path, step.text); return { written: step.path }; },
  close: async () => { await client.close(); return { closed: true }; },
};

try {
  await client.connect(transport());
} catch (error) {
  say({ connect_error: String(error?.message ?? error), code: error?.code ?? null });
  process.exit(0);
}
say({ connected: true });
for (const step of plan.steps) {
  try {
    say({ step: step.do, ...(await steps[step.do](step)) });
  } catch (error) {
    say({ step: step.do, error: String(error?.message ?? error), code: error?.code ?? null });
  }
}
await client.close().catch(() => {});
process.exit(0);
