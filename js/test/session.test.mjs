// The Session API end to end, through the real addon, guest and host: tools from
// JavaScript, parking and resuming, the whole result, MCP servers, workspace and Bash,
// limits, the declaration and search, and an agent loop in a provider's format.
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { afterEach, test } from 'node:test'
import { z } from 'zod'
import { ResumeError, Session, SessionError, tool } from '../index.js'
import { everything, sleep, store, temporary } from './helpers.mjs'

// Each test's sessions are closed after it, passed or failed.
const open = []
const opened = (session) => (open.push(session), session)
afterEach(async () => {
  await Promise.all(open.splice(0).map((session) => session.close()))
})

const remove = tool({
  name: 'remove',
  description: 'Removes a file.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  execute: ({ path }) => `removed ${path}`,
})

test('sync and async tools, their results and the logs', async () => {
  const add = tool({
    name: 'add',
    description: 'Adds two numbers.',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    readOnly: true,
    execute: ({ a, b }) => ({ sum: a + b }),
  })
  const later = tool({
    name: 'later',
    description: 'Answers after a while.',
    inputSchema: z.object({ value: z.string() }),
    readOnly: true,
    execute: async ({ value }) => {
      await sleep(10)
      return value.toUpperCase()
    },
  })
  const session = opened(await Session.open({ tools: [add, later] }))
  const result = await session.exec(
    "console.log('start'); const s = await tools.add({a: 2, b: 40}); return [s.sum, await tools.later({value: 'hi'})]",
  )
  assert.ok(result.ok, result.text)
  assert.deepEqual(result.value, [42, 'HI'])
  assert.deepEqual(result.logs, ['start'])
  assert.deepEqual(result.calls, ['add', 'later'])
  assert.deepEqual(
    result.callDetails.map((detail) => detail.ok),
    [true, true],
  )
  // zod parses what the host checked: a wrong type is refused before the tool runs.
  const refused = await session.exec("return await tools.add({a: 'x', b: 1})")
  assert.ok(!refused.ok)
  assert.match(refused.text, /a/)
})

test('an exec that parks resumes exactly once, even in another session', async () => {
  const ran = []
  const price = tool({ name: 'price', description: 'The price.', readOnly: true, execute: () => (ran.push('price'), 42) })
  const charge = tool({
    name: 'charge',
    description: 'Charges a card.',
    inputSchema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] },
    execute: ({ amount }) => (ran.push(amount), { charged: amount }),
  })
  const places = store()
  const first = await Session.open({ tools: [price, charge], approver: () => 'park', ...places })
  const result = await first.exec('const p = await tools.price({}); return await tools.charge({amount: p})', { id: 'run-1' })
  assert.ok(!result.ok && result.paused, result.text)
  assert.equal(result.paused.execId, 'run-1')
  const [waiting] = result.paused.approvals
  assert.deepEqual([waiting.tool, waiting.input], ['charge', { amount: 42 }])
  assert.deepEqual(ran, ['price'])
  assert.deepEqual(
    (await first.parkedExecs()).map((parked) => parked.handle),
    [result.paused.handle],
  )
  const conversation = first.conversation
  await first.close()

  const second = await Session.open({ tools: [price, charge], conversation, ...places })
  const resumed = await second.resume(result.paused.handle, { approve: 'all' })
  assert.ok(resumed.ok, resumed.text)
  assert.deepEqual(resumed.value, { charged: 42 })
  assert.deepEqual(ran, ['price', 42], 'the call before the park is not made again')
  await assert.rejects(second.resume(result.paused.handle, { approve: 'all' }), ResumeError)
  await second.close()
})

test('a denied call of a parked exec rejects in the script; a discarded one never runs', async () => {
  const session = opened(await Session.open({ tools: [remove], approver: () => 'park', ...store() }))
  const code = "try { return await tools.remove({path: 'a'}) } catch (e) { return 'refused: ' + e.message }"
  let parked = await session.exec(code)
  const [waiting] = parked.paused.approvals
  const resumed = await session.resume(parked.paused.handle, { deny: { [waiting.id]: 'not that file' } })
  assert.ok(resumed.ok && resumed.value.includes('not that file'), resumed.text)

  parked = await session.exec(code)
  await session.discard(parked.paused.handle)
  assert.deepEqual(await session.parkedExecs(), [])
  await assert.rejects(session.resume(parked.paused.handle, { approve: 'all' }), ResumeError)
})

test('the approver is told which exec and call ask, and its answers are read strictly', async () => {
  const asked = []
  const answers = ['once', { deny: 'no, thanks' }, 'perhaps']
  const approver = async (request) => {
    asked.push(request)
    return answers.shift()
  }
  const session = opened(await Session.open({ tools: [remove], approver }))
  const result = await session.exec(
    "const out = []; for (const p of ['a', 'b', 'c']) { try { out.push(await tools.remove({path: p})) } catch (e) { out.push(e.message) } } return out",
    { id: 'asking' },
  )
  assert.ok(result.ok, result.text)
  assert.equal(result.value[0], 'removed a')
  assert.match(result.value[1], /no, thanks/)
  assert.match(result.value[2], /"perhaps"/)
  assert.deepEqual(
    asked.map((request) => [request.tool, request.execId, request.call]),
    [
      ['remove', 'asking', 0],
      ['remove', 'asking', 1],
      ['remove', 'asking', 2],
    ],
  )
})

test('the result has images, details, a summary and the error stage; MCP servers start', async () => {
  const session = opened(await Session.open({ mcpServers: everything(), permissionMode: 'bypassPermissions' }))
  assert.deepEqual(session.startFailures, [])
  const result = await session.exec(
    "const sum = await tools['mcp__everything__get-sum']({a: 2, b: 40}); await tools['mcp__everything__get-tiny-image']({}); return sum",
  )
  assert.ok(result.ok, result.text)
  assert.equal(result.images[0].mimeType, 'image/png')
  assert.ok(result.images[0].base64.length > 0)
  assert.match(result.summary, /2 tool calls/)
  const failed = await session.exec("await tools['mcp__everything__get-sum']({a: 'x'})")
  assert.ok(!failed.ok)
  assert.equal(failed.error.stage, 'execution')
  assert.ok(!failed.callDetails[0].ok && failed.callDetails[0].stage)
})

test("an MCP server's question goes to the input handler; a server that does not start is named", async () => {
  const asked = []
  const folder = temporary()
  const config = join(folder, 'mcp.json')
  writeFileSync(config, JSON.stringify({ mcpServers: { ...everything(), broken: { command: '/no/such/program' } } }))
  const session = opened(
    await Session.open({
      mcpServers: config,
      permissionMode: 'bypassPermissions',
      inputHandler: (request) => (asked.push(request), {}),
    }),
  )
  assert.equal(session.startFailures.length, 1)
  assert.match(session.startFailures[0], /broken/)
  const result = await session.exec(
    "return await tools['mcp__everything__trigger-url-elicitation']({url: 'https://example.com/sign-in'})",
  )
  assert.ok(result.ok, result.text)
  assert.deepEqual(
    asked.map((request) => [request.server, request.kind, request.url]),
    [['everything', 'url', 'https://example.com/sign-in']],
  )
})

test('workspace tools, and Bash on and off', async () => {
  const workspace = join(temporary(), 'ws')
  mkdirSync(workspace)
  writeFileSync(join(workspace, 'notes.md'), 'TODO: write tests\n')
  {
    const session = opened(await Session.open({ workspace, bash: true, permissionMode: 'bypassPermissions' }))
    const result = await session.exec(
      "const f = await tools.read_file({path: 'notes.md'}); const b = await tools.Bash({command: 'wc -l < notes.md'}); return [f.content, b]",
    )
    assert.ok(result.ok, result.text)
    assert.match(result.value[0], /TODO/)
    assert.match(JSON.stringify(result.value[1]), /1/)
  }
  const session = opened(await Session.open({ workspace, bash: false, permissionMode: 'bypassPermissions' }))
  const result = await session.exec("return await tools.Bash({command: 'ls'})")
  assert.ok(!result.ok)
  assert.match(result.text, /Bash/)
})

test("limits bound the script's own time, not its waits", async () => {
  const slow = tool({ name: 'slow', description: 'Takes half a second.', readOnly: true, execute: () => sleep(500).then(() => 1) })
  const session = opened(await Session.open({ tools: [slow], limits: { budgetMs: 200 } }))
  const waited = await session.exec('return await tools.slow({})')
  assert.ok(waited.ok, 'waiting on a tool does not count against the budget')
  const spun = await session.exec('while (true) {}')
  assert.ok(!spun.ok)
  assert.match(spun.text, /0\.2|200/)
  await assert.rejects(Session.open({ limits: { budgetMs: -1 } }), { name: 'TypeError', message: /budget/ })
  await assert.rejects(Session.open({ limits: { budget: 1 } }), { name: 'TypeError', message: /budgetMs/ })
  await assert.rejects(Session.open({ permissionMode: 'yolo' }), { name: 'TypeError', message: /yolo/ })
})

test('the declaration, the .d.ts and search name the tools, with their schemas', async () => {
  const distance = tool({
    name: 'distance',
    description: 'The distance between two points.',
    inputSchema: z.object({
      a: z.object({ x: z.number(), y: z.number() }),
      b: z.object({ x: z.number(), y: z.number() }),
    }),
    outputSchema: z.number(),
    readOnly: true,
    execute: ({ a, b }) => Math.hypot(a.x - b.x, a.y - b.y),
  })
  const session = opened(await Session.open({ tools: [distance] }))
  const declaration = session.declaration()
  assert.equal(declaration.name, 'Exec')
  assert.deepEqual(declaration.inputSchema.required, ['code'])
  assert.match(declaration.description, /distance/)
  assert.match(session.declarationFile(), /distance\(/)
  const [found] = session.search('distance between points').filter((match) => match.name === 'distance')
  assert.match(found.signature, /distance/)
  const result = await session.exec('return await tools.distance({a: {x: 0, y: 0}, b: {x: 3, y: 4}})')
  assert.ok(result.ok, result.text)
  assert.equal(result.value, 5)
})

test("an agent loop in a provider's own format", async () => {
  const session = opened(await Session.open({ tools: [remove], allow: ['remove'] }))
  const history = [{ role: 'user', content: [{ type: 'text', text: 'remove a' }] }]
  const prepared = session.prepare(history, 'anthropic')
  history.push(...prepared.append)
  assert.deepEqual(
    prepared.request.tools.map((declared) => declared.name),
    ['Exec'],
  )
  const response = {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'scripted',
    stop_reason: 'tool_use',
    content: [{ type: 'tool_use', id: 'toolu_1', name: 'Exec', input: { code: "return await tools.remove({path: 'a'})" } }],
  }
  const reply = session.reply(response, 'anthropic')
  assert.equal(reply.stop, 'tool_use')
  history.push(reply.message)
  const turn = await session.call(reply.toolCalls)
  assert.ok(turn.results[0].ok)
  assert.equal(turn.results[0].value, 'removed a')
  history.push(...turn.messages)
  assert.equal(history.at(-1).content[0].type, 'tool_result')
  const request = session.prepare(history, 'openai-responses').request
  assert.ok(request.input.some((item) => item.type === 'function_call_output'))
  assert.throws(() => session.prepare(history, 'gemini'), TypeError)
})

test('an AbortSignal aborts an exec and the call it waits on', async () => {
  let aborted = false
  const hang = tool({
    name: 'hang',
    description: 'Never answers.',
    readOnly: true,
    execute: (_, { signal }) =>
      new Promise(() => {
        signal.addEventListener('abort', () => (aborted = true))
      }),
  })
  const session = opened(await Session.open({ tools: [hang] }))
  const controller = new AbortController()
  const running = session.exec('return await tools.hang({})', { signal: controller.signal })
  await sleep(100)
  controller.abort(new Error('enough'))
  await assert.rejects(running, { message: 'enough' })
  await sleep(50)
  assert.ok(aborted, "the tool's signal fired")
  const after = await session.exec('return 1')
  assert.equal(after.value, 1, 'the session goes on')
})

test('the event loop is never blocked by an exec', async () => {
  const session = opened(await Session.open())
  let ticks = 0
  const ticker = setInterval(() => ticks++, 5)
  const result = await session.exec('const end = Date.now() + 300; while (Date.now() < end) {} return 1')
  clearInterval(ticker)
  assert.ok(result.ok, result.text)
  assert.ok(ticks >= 10, `the loop ticked ${ticks} times while the script spun`)
})

test('each of a long run of short operations settles with its own outcome, whichever way it comes back', async () => {
  // Outcomes reach a promise either through the addon's brief spin on this thread or through
  // the event loop: Execs that end within the spin, that call into JavaScript (which ends
  // it), that outlast it, and operations that fail at once, one after another.
  const echo = tool({ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' }, readOnly: true, execute: ({ n }) => ({ n }) })
  const session = opened(await Session.open({ tools: [echo], ...store() }))
  for (let i = 0; i < 400; i++) {
    switch (i % 4) {
      case 0:
        assert.equal((await session.exec(`return ${i}`)).value, i)
        break
      case 1:
        assert.equal((await session.exec(`return (await tools.echo({ n: ${i} })).n`)).value, i)
        break
      case 2:
        assert.equal((await session.exec(`await new Promise((r) => setTimeout(r, 1)); return ${i}`)).value, i)
        break
      default:
        await assert.rejects(session.parked(`no-such-exec-${i}`), (error) => error.message.length > 0)
    }
  }
})

test('an HTTP API described by OpenAPI is a tool source, its credential kept in the host', async () => {
  const seen = []
  const server = createServer((request, response) => {
    seen.push(request.headers.authorization)
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({ id: request.url.split('/').pop(), name: 'Rex', echoed: request.headers.authorization }))
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const spec = join(temporary(), 'pets.json')
    writeFileSync(spec, JSON.stringify({
      openapi: '3.1.0',
      info: { title: 'Pets', version: '1' },
      paths: { '/pets/{id}': { get: {
        operationId: 'getPet', summary: 'Get a pet',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { 200: { description: 'the pet', content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string' } } } } } } },
      } } },
    }))
    const token = 'secret-token-for-the-test'
    const session = opened(await Session.open({
      apis: { pets: { spec, baseUrl: `http://127.0.0.1:${server.address().port}`, auth: { type: 'bearer', token } } },
    }))
    assert.ok(session.search('get a pet').some((match) => match.name === 'api__pets__getPet'))
    const result = await session.exec('return await tools.api__pets__getPet({ id: "7" })')
    assert.ok(result.ok, result.text)
    assert.deepEqual(result.value, { id: '7', name: 'Rex', echoed: 'Bearer [credential]' })
    assert.deepEqual(seen, [`Bearer ${token}`], 'the credential reached the API, and only it')
    assert.ok(!JSON.stringify(result).includes(token))
  } finally {
    server.close()
  }
})

test('a session used after close() throws', async () => {
  const session = await Session.open()
  await session.close()
  await session.close()
  await assert.rejects(session.exec('return 1'), SessionError)
  assert.throws(() => session.declaration(), SessionError)
  assert.throws(() => new Session({}), TypeError)
})
