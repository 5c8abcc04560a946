// What a hostile or careless tool, caller or process does: thrown non-Errors, calls that
// never settle, values that are not plain data or too large, Execs without end, many Execs
// at once, and a process that exits with Execs in flight.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, test } from 'node:test'
import { MAX_EXEC_DEPTH, Session, SessionError, tool } from '../index.js'
import { ROOT, everything, sleep, temporary, until } from './helpers.mjs'

const open = []
const opened = (session) => (open.push(session), session)
afterEach(async () => {
  await Promise.all(open.splice(0).map((session) => session.close()))
})

const returning = (name, make) => tool({ name, description: `Returns ${name}.`, readOnly: true, execute: make })

test('a tool that throws a non-Error rejects the script with what was thrown', async () => {
  const throwers = [
    returning('throws_string', () => {
      throw 'plain words'
    }),
    returning('throws_object', () => {
      throw { code: 42 }
    }),
    returning('throws_undefined', () => {
      throw undefined
    }),
    returning('rejects_symbol', () => Promise.reject(Symbol('odd'))),
    returning('throws_error', () => {
      throw new RangeError('out of range')
    }),
    returning('throws_huge', () => {
      throw new Error('x'.repeat(1 << 20))
    }),
  ]
  const session = opened(await Session.open({ tools: throwers }))
  const names = throwers.map((thrower) => thrower.name)
  const result = await session.exec(
    `const out = []; for (const name of ${JSON.stringify(names)}) { try { await tools[name]({}); out.push('no') } catch (e) { out.push(e.message) } } return out`,
  )
  assert.ok(result.ok, result.text)
  const [string, object, undefinedThrown, symbol, error, huge] = result.value
  assert.match(string, /plain words/)
  assert.match(object, /\{"code":42\}/)
  assert.match(undefinedThrown, /undefined/)
  assert.match(symbol, /Symbol\(odd\)/)
  assert.match(error, /RangeError: out of range/)
  assert.ok(huge.length < 10_000, `a thrown message is bounded (${huge.length} chars)`)
  assert.doesNotMatch(error, /at .*hostile\.test/, 'no JavaScript stack reaches the script')
})

test('values that are not plain data are refused with their path; 100 MB before the copy', async () => {
  const cycle = { a: [1, {}] }
  cycle.a[1].back = cycle
  class Point {
    constructor() {
      this.x = 1
    }
  }
  const tools = [
    returning('cycle', () => cycle),
    returning('bigint', () => ({ n: [1n] })),
    returning('date', () => ({ when: new Date() })),
    returning('map', () => new Map()),
    returning('instance', () => ({ p: new Point() })),
    returning('nan', () => [NaN]),
    returning('func', () => ({ f() {} })),
    returning('huge', () => ({ blob: 'x'.repeat(100 * 1024 * 1024) })),
    returning('nothing', () => undefined),
    returning('shared', () => {
      const leaf = { v: 1 }
      return [leaf, leaf]
    }),
  ]
  const session = opened(await Session.open({ tools }))
  const names = tools.map((given) => given.name)
  const started = performance.now()
  const result = await session.exec(
    `const out = {}; for (const name of ${JSON.stringify(names)}) { try { out[name] = await tools[name]({}) } catch (e) { out[name] = 'refused: ' + e.message } } return out`,
  )
  const took = performance.now() - started
  assert.ok(result.ok, result.text)
  const out = result.value
  assert.match(out.cycle, /refused: .*contains itself.*at \$\.a\[1\]\.back/)
  assert.match(out.bigint, /refused: .*BigInt.*at \$\.n\[0\]/)
  assert.match(out.date, /refused: .*Date.*at \$\.when/)
  assert.match(out.map, /refused: .*Map.*at \$/)
  assert.match(out.instance, /refused: .*Point.*at \$\.p/)
  assert.match(out.nan, /refused: .*NaN.*at \$\[0\]/)
  assert.match(out.func, /refused: .*function.*at \$\.f/)
  assert.match(out.huge, /refused: .*more than 32 MiB.*at \$\.blob/)
  assert.equal(out.nothing, null)
  assert.deepEqual(out.shared, [{ v: 1 }, { v: 1 }], 'a value met twice without a cycle is plain data')
  assert.ok(took < 30_000, `took ${took} ms`)
})

test('a tool that never settles is ended by the nested-wait cap, and the session goes on', async () => {
  const hang = returning('hang', () => new Promise(() => {}))
  const session = opened(await Session.open({ tools: [hang], limits: { maxNestedWaitMs: 300 } }))
  const result = await session.exec('return await tools.hang({})')
  assert.ok(!result.ok)
  assert.match(result.text, /wait/i)
  const after = await session.exec('return 2')
  assert.equal(after.value, 2)
})

test('an approver that never answers is ended by the nested-wait cap and by abort', async () => {
  const remove = tool({ name: 'remove', description: 'Removes.', execute: () => 'removed' })
  const session = opened(
    await Session.open({ tools: [remove], approver: () => new Promise(() => {}), limits: { maxNestedWaitMs: 300 } }),
  )
  const capped = await session.exec('return await tools.remove({})')
  assert.ok(!capped.ok, capped.text)
  const controller = new AbortController()
  const running = session.exec('return await tools.remove({})', { signal: controller.signal })
  setTimeout(() => controller.abort(), 50)
  await assert.rejects(running, { name: 'AbortError' })
})

test('a tool that runs Execs of its own is bounded in depth', async () => {
  let session
  const deeper = returning('deeper', async () => {
    const inner = await session.exec('return await tools.deeper({})')
    return inner.ok ? inner.value : inner.text
  })
  session = opened(await Session.open({ tools: [deeper] }))
  const result = await session.exec('return await tools.deeper({})')
  assert.ok(result.ok, result.text)
  assert.match(JSON.stringify(result.value), new RegExp(`at most ${MAX_EXEC_DEPTH} deep`))
})

test('ten thousand concurrent Execs from one event loop', async () => {
  const echo = returning('echo', (input) => input)
  const session = opened(await Session.open({ tools: [echo] }))
  const results = await Promise.all(
    Array.from({ length: 10_000 }, (_, index) => session.exec(`return (await tools.echo({i: ${index}})).i`)),
  )
  assert.equal(results.filter((result) => !result.ok).length, 0, results.find((result) => !result.ok)?.text)
  assert.deepEqual(
    results.map((result) => result.value),
    Array.from({ length: 10_000 }, (_, index) => index),
  )
})

test('bad options are refused with what is wrong', async () => {
  await assert.rejects(Session.open({ workspce: '/tmp' }), { name: 'TypeError', message: /`workspce`/ })
  await assert.rejects(Session.open({ tools: [{ name: 'x' }] }), { name: 'TypeError', message: /execute/ })
  await assert.rejects(Session.open({ tools: [returning('a b', () => 1)] }), { name: 'TypeError', message: /a b/ })
  await assert.rejects(Session.open({ tools: [returning('t', () => 1), returning('t', () => 2)] }), {
    name: 'TypeError',
    message: /two tools/,
  })
  await assert.rejects(Session.open({ settings: [] }), { name: 'TypeError', message: /settings/ })
  const session = opened(await Session.open())
  // A value of the wrong type for the addon is refused, and leaves nothing pending that would
  // keep the process alive.
  await assert.rejects(session.exec('return 1', { id: 5 }), TypeError)
  await assert.rejects(session.parked(7), TypeError)
  await assert.rejects(Session.open({ stateStore: '/no/such/dir/store', stateKeyFile: '/no/such/key' }), SessionError)
})

test('a second JavaScript environment (a worker thread) is refused, saying why; the first goes on', async () => {
  const { Worker } = await import('node:worker_threads')
  const worker = new Worker(
    `import(${JSON.stringify(join(ROOT, 'js/index.js'))}).then(() => 'loaded', (error) => error.message).then((m) => require('node:worker_threads').parentPort.postMessage(m))`,
    { eval: true },
  )
  const message = await new Promise((done, failed) => {
    worker.once('message', done)
    worker.once('error', failed)
  })
  await worker.terminate()
  assert.match(message, /one JavaScript environment per process/)
  const session = opened(await Session.open())
  assert.equal((await session.exec('return 7')).value, 7)
})

/** The processes whose environment holds `marker`. */
function processesMarked(marker) {
  const found = []
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker)) found.push(pid)
    } catch {}
  }
  return found
}

test('a process that exits with Execs in flight ends at once and leaves no process behind', async () => {
  const marker = `EXEC_HOST_EXIT_TEST=${randomUUID()}`
  const folder = temporary()
  const workspace = join(folder, 'ws')
  const script = join(folder, 'exit.mjs')
  const [name, value] = marker.split('=')
  const servers = everything()
  servers.everything.env = { [name]: value }
  writeFileSync(
    script,
    `import { Session, tool } from ${JSON.stringify(join(ROOT, 'js/index.js'))}
import { mkdirSync } from 'node:fs'
mkdirSync(${JSON.stringify(workspace)})
const hang = tool({ name: 'hang', description: 'Hangs.', readOnly: true, execute: () => new Promise(() => {}) })
const session = await Session.open({ workspace: ${JSON.stringify(workspace)}, bash: true, tools: [hang],
  mcpServers: ${JSON.stringify(servers)}, permissionMode: 'bypassPermissions' })
session.exec("return await tools.Bash({command: 'sleep 31.4159'})")
session.exec('return await tools.hang({})')
session.exec("return await tools['mcp__everything__get-sum']({a: 1, b: 2})")
session.exec('while (true) {}')
setTimeout(() => process.exit(0), 500)
`,
  )
  const started = performance.now()
  const child = spawnSync(process.execPath, [script], { env: { ...process.env, [name]: value }, timeout: 20_000 })
  const took = performance.now() - started
  assert.equal(child.status, 0, `${child.signal ?? ''} ${child.stderr}`)
  assert.ok(took < 10_000, `the process took ${took} ms to exit`)
  assert.ok(await until(() => processesMarked(marker).length === 0, 3000), `left behind: ${processesMarked(marker)}`)
  const sleeping = spawnSync('pgrep', ['-f', 'sleep 31.4159']).stdout.toString().trim()
  assert.equal(sleeping, '', 'the Bash command was stopped')
})
