// Code mode for the Vercel AI SDK, driven by the SDK's own mock language model: the model
// calls Exec, its script calls the user's AI SDK tools, and a tool that needs approval
// parks the script until the SDK's tool approval is given.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generateText, isStepCount, streamText, tool } from 'ai'
import { z } from 'zod'
import { codeMode } from '../ai.js'
import { callStep, scriptedModel, textStep } from './models.mjs'

const weatherCalls = []
const weather = tool({
  description: 'The weather in a city.',
  inputSchema: z.object({ city: z.string().describe('The city') }),
  outputSchema: z.object({ city: z.string(), celsius: z.number() }),
  execute: async ({ city }) => (weatherCalls.push(city), { city, celsius: city.length }),
})
const sent = []
const sendEmail = tool({
  description: 'Sends an email.',
  inputSchema: z.object({ to: z.string(), body: z.string() }),
  execute: async ({ to }) => (sent.push(to), `sent to ${to}`),
})

test('generateText: the model runs a script over the AI SDK tools', async () => {
  const code = await codeMode({ tools: { weather } })
  try {
    assert.match(code.tools.Exec.description, /weather/, 'the catalogue names the tools')
    const script = "const a = await tools.weather({city: 'Paris'}); const b = await tools.weather({city: 'Rome'}); return a.celsius + b.celsius"
    const { model, prompts } = scriptedModel([callStep('call-1', 'Exec', { code: script }), textStep('9 degrees in all')])
    const result = await generateText({
      model,
      tools: code.tools,
      toolApproval: code.toolApproval,
      stopWhen: isStepCount(3),
      prompt: 'Weather in Paris and Rome, summed?',
    })
    assert.equal(result.text, '9 degrees in all')
    const toolResult = result.steps[0].toolResults[0]
    assert.equal(toolResult.output.value, 9)
    const seen = JSON.stringify(prompts[1])
    assert.match(seen, /9/, 'the model read the script result')
    const found = code.session.search('weather city')
    assert.match(found[0].signature, /city: string/)
  } finally {
    await code.close()
  }
})

test('streamText: the same script through a stream', async () => {
  const code = await codeMode({ tools: { weather } })
  try {
    const script = "return (await tools.weather({city: 'Oslo'})).celsius"
    const { model } = scriptedModel([callStep('call-s', 'Exec', { code: script }), textStep('done')])
    const stream = streamText({ model, tools: code.tools, toolApproval: code.toolApproval, stopWhen: isStepCount(3), prompt: 'Oslo?' })
    assert.equal(await stream.text, 'done')
    const steps = await stream.steps
    assert.equal(steps[0].toolResults[0].output.value, 4)
  } finally {
    await code.close()
  }
})

test("a call that needs approval parks the script; the SDK's approval resumes it, no call made twice", async () => {
  weatherCalls.length = 0
  sent.length = 0
  const code = await codeMode({ tools: { weather, sendEmail }, toolApproval: { sendEmail: 'user-approval' } })
  try {
    const script =
      "const w = await tools.weather({city: 'Lima'}); return await tools.sendEmail({to: 'ana@example.com', body: 'It is ' + w.celsius})"
    const first = scriptedModel([callStep('call-2', 'Exec', { code: script })])
    const asked = await generateText({
      model: first.model,
      tools: code.tools,
      toolApproval: code.toolApproval,
      stopWhen: isStepCount(3),
      prompt: 'Mail Ana the weather in Lima',
    })
    const request = asked.content.find((part) => part.type === 'tool-approval-request')
    assert.ok(request, `the run stopped for approval: ${JSON.stringify(asked.content)}`)
    assert.match(request.reason ?? JSON.stringify(request), /sendEmail/)
    assert.deepEqual(weatherCalls, ['Lima'])
    assert.deepEqual(sent, [], 'nothing was sent before the approval')

    const messages = [
      { role: 'user', content: 'Mail Ana the weather in Lima' },
      ...asked.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] },
    ]
    const second = scriptedModel([textStep('sent')])
    const resumed = await generateText({
      model: second.model,
      tools: code.tools,
      toolApproval: code.toolApproval,
      stopWhen: isStepCount(3),
      messages,
    })
    assert.equal(resumed.text, 'sent')
    assert.deepEqual(sent, ['ana@example.com'])
    assert.deepEqual(weatherCalls, ['Lima'], 'the call before the park ran once')
  } finally {
    await code.close()
  }
})

test("a denied approval never runs the call; without the SDK's approval a parked script is dropped", async () => {
  sent.length = 0
  const code = await codeMode({ tools: { sendEmail }, toolApproval: { sendEmail: 'user-approval' } })
  try {
    const script = "return await tools.sendEmail({to: 'bo@example.com', body: 'hi'})"
    const first = scriptedModel([callStep('call-3', 'Exec', { code: script })])
    const asked = await generateText({ model: first.model, tools: code.tools, toolApproval: code.toolApproval, prompt: 'Mail Bo' })
    const request = asked.content.find((part) => part.type === 'tool-approval-request')
    const messages = [
      { role: 'user', content: 'Mail Bo' },
      ...asked.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: false }] },
    ]
    const second = scriptedModel([textStep('not sent')])
    await generateText({ model: second.model, tools: code.tools, toolApproval: code.toolApproval, messages })
    assert.deepEqual(sent, [])

    // The SDK not given code mode's approval function: the script stops and says why.
    const third = scriptedModel([callStep('call-4', 'Exec', { code: script }), textStep('ok')])
    const unasked = await generateText({ model: third.model, tools: code.tools, stopWhen: isStepCount(3), prompt: 'Mail Bo' })
    const output = unasked.steps[0].toolResults[0].output
    assert.ok(!output.ok)
    assert.match(output.text, /never asked for/)
    assert.deepEqual(sent, [])
    assert.deepEqual(
      (await code.session.parkedExecs()).filter((parked) => parked.execId === 'call-4'),
      [],
    )
  } finally {
    await code.close()
  }
})

test("a denied status in the user's toolApproval refuses the script's call", async () => {
  const code = await codeMode({ tools: { sendEmail }, toolApproval: { sendEmail: { type: 'denied', reason: 'no mail today' } } })
  try {
    const script = "try { await tools.sendEmail({to: 'x', body: 'y'}) } catch (e) { return e.message }"
    const { model } = scriptedModel([callStep('call-5', 'Exec', { code: script }), textStep('ok')])
    const result = await generateText({ model, tools: code.tools, toolApproval: code.toolApproval, stopWhen: isStepCount(3), prompt: 'x' })
    assert.match(result.steps[0].toolResults[0].output.value, /no mail today/)
  } finally {
    await code.close()
  }
})
