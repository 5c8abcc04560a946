// Fixtures the tests share: a state store outside any workspace, the published MCP server
// `server-everything` (installed by scripts/install-test-servers), temporary folders.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const EVERYTHING = join(ROOT, 'tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js')

/** A new temporary folder. */
export function temporary(prefix = 'exec-host-') {
  return mkdtempSync(join(tmpdir(), prefix))
}

/** A state store folder and its key file, as `Session.open` takes them. */
export function store() {
  const folder = temporary('exec-host-store-')
  const key = join(folder, 'state.key')
  writeFileSync(key, randomBytes(32).toString('hex'), { mode: 0o600 })
  return { stateStore: join(folder, 'store'), stateKeyFile: key }
}

/** `server-everything` over stdio, as `mcpServers` config. */
export function everything() {
  if (!existsSync(EVERYTHING)) throw new Error(`${EVERYTHING} is missing: run scripts/install-test-servers`)
  return { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } }
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((done) => setTimeout(done, ms))

/** Waits (at most `ms`) until `check()` is true. */
export async function until(check, ms = 2000) {
  for (let waited = 0; waited < ms && !check(); waited += 20) await sleep(20)
  return check()
}
