// The client side of the official MCP conformance suite: `exec-host run` as the MCP client.
// The suite runs `node client.mjs SERVER_URL` per scenario, with the scenario's name in
// MCP_CONFORMANCE_SCENARIO and its extra data (a pre-registered client) in
// MCP_CONFORMANCE_CONTEXT. This writes a server configuration for that URL, and runs a
// script that calls each of the server's tools; a server's input request gets its form's
// defaults (`--accept-input-defaults`). A person's sign-in is done headless, as the
// suite's own example clients do: $BROWSER is follow-redirect.mjs, which fetches the
// authorization URL and follows its redirect back to exec-host's loopback listener.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const url = process.argv[process.argv.length - 1];
const binary = process.env.EXEC_HOST_BIN;
if (!binary) {
  console.error("EXEC_HOST_BIN must name the exec-host binary");
  process.exit(2);
}
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const here = dirname(fileURLToPath(import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "exec-host-conformance-"));
// The host keeps its OAuth tokens out of the workspace a script can reach, so the workspace is
// a folder of its own beside the credentials file.
const workspace = join(scratch, "workspace");
try {
  mkdirSync(workspace);
  const server = { type: "http", url };
  if (context.client_id) {
    server.oauth = { clientId: context.client_id };
    if (context.client_secret) server.oauth.clientSecret = context.client_secret;
  }
  // The suite's authorization servers that accept client ID metadata documents expect this one.
  if (!context.client_id) {
    server.oauth = { clientMetadataUrl: "https://conformance-test.local/client-metadata.json" };
  }
  writeFileSync(join(scratch, "servers.json"), JSON.stringify({ mcpServers: { test: server } }));
  writeFileSync(
    join(scratch, "script.js"),
    `const found = await tools.ToolSearch({ query: "" });
     const names = found.matches.map((m) => m.name).filter((n) => n.startsWith("mcp__test__"));
     const answers = {};
     for (const name of names) {
       try { answers[name] = await tools[name]({ a: 1, b: 2 }); } catch (e) { answers[name] = "error: " + e.message; }
     }
     return answers;`,
  );
  const run = spawnSync(
    binary,
    ["run", "--accept-input-defaults", "--workspace", workspace, "--mcp-config", join(scratch, "servers.json"),
     "--mcp-credentials", join(scratch, "credentials.json"), join(scratch, "script.js")],
    {
      stdio: "inherit",
      env: { ...process.env, BROWSER: `${process.execPath} ${join(here, "follow-redirect.mjs")}` },
    },
  );
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
