// exec-host as the executor of Cloudflare's codemode on plain Node.js: codemode's own code
// tool (`createCodeTool`), driven by the AI SDK's mock model, with nothing changed but the
// executor (and the `cloudflare:workers` shim its modules need outside Workers).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generateText, isStepCount, tool } from 'ai'
import { z } from 'zod'
import { callStep, scriptedModel, textStep } from './models.mjs'

// Registered before codemode's modules are resolved: they import `cloudflare:workers`.
await import('../codemode-register.js')
const { createCodeTool } = await import('@cloudflare/codemode/ai')
const { ExecHostExecutor, MAX_SESSIONS } = await import('../codemode.js')

const lookups = []
const tools = {
  getWeather: tool({
    description: 'The weather in a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => (lookups.push(city), { city, celsius: city.length }),
  }),
  'get-time': tool({
    description: 'The time (a name codemode sanitizes).',
    inputSchema: z.object({}),
    execute: async () => '12:00',
  }),
  deleteAll: tool({
    description: 'Deletes everything.',
    inputSchema: z.object({}),
    needsApproval: true,
    execute: async () => 'deleted',
  }),
}

test("codemode's code tool runs its scripts in exec-host, driven by the AI SDK's mock model", async () => {
  const executor = new ExecHostExecutor()
  try {
    const codemode = createCodeTool({ tools, executor })
    const code = `async () => {
      const a = await codemode.getWeather({ city: "Paris" });
      const t = await codemode.get_time({});
      console.log("looked up", a.city);
      return { celsius: a.celsius, time: t };
    }`
    const { model } = scriptedModel([callStep('c1', 'codemode', { code }), textStep('5 degrees at noon')])
    const result = await generateText({ model, tools: { codemode }, stopWhen: isStepCount(3), prompt: 'Paris?' })
    assert.equal(result.text, '5 degrees at noon')
    const output = result.steps[0].toolResults[0].output
    assert.deepEqual(output.result, { celsius: 5, time: '12:00' })
    assert.deepEqual(output.logs, ['looked up Paris'])
    assert.deepEqual(lookups, ['Paris'])
  } finally {
    await executor.close()
  }
})

test('failures come back as codemode reports them: thrown errors, a missing tool, time out', async () => {
  const executor = new ExecHostExecutor({ timeout: 300 })
  try {
    const { fns } = { fns: { getWeather: tools.getWeather.execute } }
    const thrown = await executor.execute('async () => { throw new Error("nope") }', [{ name: 'codemode', fns }])
    assert.equal(thrown.result, undefined)
    assert.match(thrown.error, /nope/)
    // codemode leaves tools that need approval out of what it hands the executor.
    const missing = await executor.execute('async () => codemode.deleteAll({})', [{ name: 'codemode', fns }])
    assert.match(missing.error, /not a function/)
    const spun = await executor.execute('async () => { while (true) {} }', [{ name: 'codemode', fns }])
    assert.match(spun.error, /timed out|budget|time/i)
    const slow = await executor.execute('async () => await new Promise((r) => setTimeout(r, 5000))', [{ name: 'codemode', fns }])
    assert.equal(slow.error, 'Execution timed out')
    const reserved = await executor.execute('async () => 1', [{ name: 'console', fns }])
    assert.match(reserved.error, /reserved/)
    const legacy = await executor.execute('async () => (await codemode.getWeather({city: "Rome"})).celsius', fns)
    assert.equal(legacy.result, 4)
  } finally {
    await executor.close()
  }
})

test('scripts with the same tool names share a session, each with its own functions; the sessions are bounded', async () => {
  const executor = new ExecHostExecutor()
  try {
    const answering = (value) => ({ get: async () => value })
    const [a, b] = await Promise.all([
      executor.execute('async () => await codemode.get({})', answering('a')),
      executor.execute('async () => await codemode.get({})', answering('b')),
    ])
    assert.deepEqual([a.result, b.result], ['a', 'b'])
    for (let i = 0; i < MAX_SESSIONS + 4; i++) {
      const ran = await executor.execute('async () => 1', { [`tool${i}`]: async () => i })
      assert.equal(ran.result, 1, ran.error)
    }
  } finally {
    await executor.close()
  }
})
