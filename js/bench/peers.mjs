// exec-host from Node.js against its published peers, on the same workloads, in one run.
//
//     cd js/bench && npm ci && node peers.mjs [--quick] [--no-rust] [--only=PEER,...]
//
// It needs the package built (`npm run build` in js/). The peers are pinned in this folder's
// lock file, apart from the package's own (the Vercel peer pins an older `ai`). Each system is
// driven through its own public API, the way its users drive it:
//
// - exec-host: `Session.exec`; the tools are plain JavaScript functions. Every Exec runs in a
//   fresh sandbox instance, off the JavaScript thread.
// - vercel-code-mode: the Vercel AI SDK's code mode (`@ai-sdk/code-mode`,
//   `experimental_runCodeMode`): QuickJS compiled to WebAssembly, run in a pool of worker
//   threads (`run`), the tools AI SDK tools. Its pool is raised from 32 workers to the
//   concurrency of the concurrent row, which it otherwise refuses past 32.
// - utcp-code-mode: the UTCP code mode (`@utcp/code-mode`, `callToolChain`): V8 isolates
//   through isolated-vm, the tools JavaScript functions of UTCP's direct-call protocol. Its
//   isolated-vm needs Node.js 22 from version 6 on; here it is pinned to 5.0.4, built from
//   source on install (the lock file's override). UTCP logs a line per tool call; the bench
//   silences console.log for the run.
// - cloudflare-codemode-workerd: `@cloudflare/codemode`'s own executor
//   (`DynamicWorkerExecutor`), each script a Worker made by the Worker Loader, in workerd (npm)
//   run locally with `--experimental`; the tools are functions of the Worker that drives it
//   (workerd/worker.mjs, bundled with esbuild). The bench reaches it over loopback HTTP, each
//   request running 10 scripts one after another (or the concurrent row's all
//   at once), so that the request is a small part of a sample.
//
// Each workload runs a warm-up per system, then rounds in which every system runs a batch in
// turn, so that the drifts of a noisy machine hit all systems alike; the table gives medians
// over all samples (never means). Results are checked for their value; timings never are.
// After the peers it runs the workspace's Rust benchmark for the same trivial Exec and host
// calls, and prints the Node figures against them.

import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Session, tool } from '../index.js'

// UTCP logs a line for every tool call through console.log: the bench prints through its
// own handle and silences console.log for the whole run.
const print = console.log.bind(console)
console.log = () => {}

const quick = process.argv.includes('--quick')
const noRust = process.argv.includes('--no-rust')
// --only=PEER,...: exec-host and only these peers (none: exec-host alone).
const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length)
const chosen = only === undefined ? null : new Set(only.split(',').filter(Boolean))
const ROUNDS = quick ? 2 : 5
const SCALE = quick ? 0.2 : 1
const CALLS = 100
const CONCURRENT = 100

const rows = [
  { name: 'trivial', label: 'trivial Exec, end to end', batch: 40, code: () => 'return 1 + 1', value: 2 },
  { name: 'one_call', label: 'an Exec that makes one tool call', batch: 30, code: (ns) => `return (await ${ns}.add({a: 1, b: 2})).sum`, value: 3 },
  {
    name: 'call_loop',
    label: `a tool call, per call (${CALLS} in one Exec)`,
    batch: 4,
    per: CALLS,
    code: (ns) => `let t = 0; for (let i = 0; i < ${CALLS}; i++) t += (await ${ns}.add({a: i, b: 1})).sum; return t`,
    value: (CALLS * (CALLS + 1)) / 2,
  },
  {
    name: 'concurrent_100',
    label: `${CONCURRENT} concurrent Execs, one call each, wall`,
    batch: 3,
    concurrent: CONCURRENT,
    code: (ns) => `return (await ${ns}.add({a: 20, b: 22})).sum`,
    value: 42,
  },
]

const add = ({ a, b }) => ({ sum: a + b })

async function execHost() {
  const session = await Session.open({
    tools: [tool({ name: 'add', description: 'Adds two numbers.', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } }, readOnly: true, execute: add })],
  })
  return {
    name: 'exec-host',
    namespace: 'tools',
    run: async (code) => {
      const result = await session.exec(code)
      if (!result.ok) throw new Error(result.text)
      return result.value
    },
    close: () => session.close(),
  }
}

async function vercel() {
  const { experimental_runCodeMode: runCodeMode, experimental_setMaxWorkers: setMaxWorkers } = await import('@ai-sdk/code-mode')
  const { tool: aiTool, jsonSchema } = await import('ai')
  setMaxWorkers(CONCURRENT)
  const tools = {
    add: aiTool({ description: 'Adds two numbers.', inputSchema: jsonSchema({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } }), execute: async (input) => add(input) }),
  }
  return { name: 'vercel-code-mode', namespace: 'tools', run: (js) => runCodeMode({ js, tools }), close: async () => {} }
}

async function utcp() {
  const { addFunctionToUtcpDirectCall } = await import('@utcp/direct-call')
  const { CodeModeUtcpClient } = await import('@utcp/code-mode')
  const inputs = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } }
  const manual = { utcp_version: '1.0.0', manual_version: '1.0.0', tools: [{ name: 'add', description: 'Adds two numbers.', inputs, outputs: { type: 'object' }, tags: [], tool_call_template: { call_template_type: 'direct-call', callable_name: 'add' } }] }
  const client = await (async () => {
    addFunctionToUtcpDirectCall('benchManual', async () => manual)
    // UTCP spreads the arguments object's values as the function's parameters.
    addFunctionToUtcpDirectCall('add', async (a, b) => add({ a, b }))
    const created = await CodeModeUtcpClient.create()
    const registered = await created.registerManual({ name: 'bench', call_template_type: 'direct-call', callable_name: 'benchManual' })
    if (!registered.success) throw new Error(registered.errors.join('; '))
    return created
  })()
  return { name: 'utcp-code-mode', namespace: 'bench', run: async (code) => (await client.callToolChain(code)).result, close: async () => {} }
}

// Requests to workerd run this many Execs one after another, so that a sample is not mostly
// the HTTP request that carries it.
const WORKERD_BATCH = 10

async function workerd() {
  const here = dirname(fileURLToPath(import.meta.url))
  const bin = join(here, 'node_modules/.bin')
  const scratch = mkdtempSync(join(tmpdir(), 'exec-host-workerd-'))
  execFileSync(join(bin, 'esbuild'), [join(here, 'workerd/worker.mjs'), '--bundle', '--format=esm', '--platform=neutral', '--main-fields=module,main', '--external:cloudflare:workers', '--external:node:*', `--outfile=${join(scratch, 'worker.bundle.mjs')}`, '--log-level=error'])
  copyFileSync(join(here, 'workerd/config.capnp'), join(scratch, 'config.capnp'))
  const port = await freePort()
  const server = spawn(join(bin, 'workerd'), ['serve', join(scratch, 'config.capnp'), '--experimental', `--socket-addr=http=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  server.stderr.on('data', (chunk) => (stderr += chunk))
  const post = async (code, n, concurrent) => {
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: JSON.stringify({ code: `async () => { ${code} }`, n, concurrent }) })
    return response.json()
  }
  for (let tries = 0; ; tries++) {
    try {
      await post('return 1', 1, false)
      break
    } catch (error) {
      if (tries > 100 || server.exitCode !== null) throw new Error(`workerd did not serve: ${stderr.slice(-400) || error.message}`)
      await new Promise((done) => setTimeout(done, 100))
    }
  }
  return {
    name: 'cloudflare-codemode-workerd',
    namespace: 'codemode',
    run: async (code) => (await post(code, 1, false))[0],
    runMany: (code, n, concurrent) => post(code, n, concurrent),
    batch: WORKERD_BATCH,
    close: async () => {
      server.kill()
      rmSync(scratch, { recursive: true, force: true })
    },
  }
}

function freePort() {
  return new Promise((done, failed) => {
    const probe = createServer()
    probe.once('error', failed)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address()
      probe.close(() => done(port))
    })
  })
}

async function peers() {
  const found = []
  const failed = {}
  for (const [name, open] of [['vercel-code-mode', vercel], ['utcp-code-mode', utcp], ['cloudflare-codemode-workerd', workerd]]) {
    if (chosen && !chosen.has(name)) continue
    try {
      found.push(await open())
    } catch (error) {
      failed[name] = error.message
    }
  }
  return { found, failed }
}

async function sample(system, row) {
  const code = row.code(system.namespace)
  const started = performance.now()
  let values
  let count = 1
  if (row.concurrent) {
    values = system.runMany
      ? await system.runMany(code, row.concurrent, true)
      : await Promise.all(Array.from({ length: row.concurrent }, () => system.run(code)))
  } else if (system.runMany) {
    count = system.batch
    values = await system.runMany(code, count, false)
  } else {
    values = [await system.run(code)]
  }
  const took = performance.now() - started
  if (values.some((value) => value !== row.value)) throw new Error(`${system.name}/${row.name}: ${JSON.stringify(values[0])}`)
  return (took * 1000) / (row.per ?? 1) / count
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const shown = (us) => (us >= 1000 ? `${(us / 1000).toFixed(us >= 10_000 ? 1 : 2)} ms` : `${us.toFixed(us >= 100 ? 0 : 1)} µs`)

function rustLibrary() {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
  const scratch = mkdtempSync(join(tmpdir(), 'exec-host-bench-'))
  try {
    const record = join(scratch, 'record.jsonl')
    const args = ['run', '--release', '--quiet', '-p', 'exec-host-bench', '--', '--only=trivial,calls_seq_1000', '--record', record]
    if (quick) args.push('--quick')
    execFileSync('cargo', args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
    const line = JSON.parse(readFileSync(record, 'utf8').trim().split('\n').at(-1))
    const also = line.also ?? {}
    return { trivial: line.median_us.trivial, perCall: also['calls_seq_1000.per_call_us'] ?? line.median_us.calls_seq_1000 / 1000 }
  } catch (error) {
    console.error(`(the Rust library's benchmark did not run: ${error.message.slice(-400)})`)
    return null
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

const { found, failed } = await peers()
const systems = [await execHost(), ...found]
const taken = new Map()
const load = [loadavg()[0]]
for (const row of rows) {
  for (const system of systems) await sample(system, row)
  for (let round = 0; round < ROUNDS; round++) {
    for (const system of systems) {
      const key = `${row.name}/${system.name}`
      if (!taken.has(key)) taken.set(key, [])
      const batch = Math.max(1, Math.round(row.batch * SCALE))
      for (let i = 0; i < batch; i++) taken.get(key).push(await sample(system, row))
    }
  }
}
load.push(loadavg()[0])
for (const system of systems) await system.close()

const names = systems.map((system) => system.name)
print(`\nexec-host from Node.js against its peers (${quick ? 'quick' : 'full'} run, load ${load.map((l) => l.toFixed(2)).join(' → ')}), medians:`)
print(`| median | ${names.join(' | ')} | best peer / exec-host |`)
print(`|---|${names.map(() => '---:|').join('')}---:|`)
const medians = {}
for (const row of rows) {
  medians[row.name] = Object.fromEntries(names.map((name) => [name, median(taken.get(`${row.name}/${name}`))]))
  const ours = medians[row.name]['exec-host']
  const others = names.slice(1).map((name) => medians[row.name][name])
  const best = others.length ? Math.min(...others) : null
  print(`| ${row.label} | ${names.map((name) => shown(medians[row.name][name])).join(' | ')} | ${best ? `${(best / ours).toFixed(2)}x` : '-'} |`)
}
for (const [name, why] of Object.entries(failed)) print(`(${name} did not run: ${why})`)

const figures = { quick, load, median_us: medians, failed }
const rust = noRust ? null : rustLibrary()
if (rust) {
  const trivial = medians.trivial['exec-host']
  const perCall = medians.call_loop['exec-host']
  print('\nexec-host from Node.js against the same work through the Rust library, this run:')
  print('| median | from Node.js | Rust library | Node.js / Rust |')
  print('|---|---:|---:|---:|')
  print(`| trivial Exec, end to end | ${shown(trivial)} | ${shown(rust.trivial)} | ${(trivial / rust.trivial).toFixed(2)}x |`)
  print(`| tool call round trip, per call (a JavaScript function / a Rust tool) | ${shown(perCall)} | ${shown(rust.perCall)} | ${(perCall / rust.perCall).toFixed(2)}x |`)
  figures.rust_library_us = rust
}
print(JSON.stringify(figures))
