// Code mode for the Vercel AI SDK: the model gets one tool, Exec, and its script calls your
// AI SDK tools (here `weather` and `sendEmail`) in exec-host's sandbox. Sending mail needs a
// person's approval: the script parks at that call, the AI SDK asks for approval of the
// Exec call, and once approved the script resumes where it stopped, nothing run twice.
//
// The model here is the AI SDK's own mock (`ai/test`), playing a scripted conversation, so
// the example runs without a network or a key; use any AI SDK model instead.
import { generateText, isStepCount, tool } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import { codeMode } from 'exec-host/ai'
import { z } from 'zod'

const weather = tool({
  description: 'The weather in a city, in degrees Celsius.',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, celsius: { Lisbon: 21, Oslo: 4 }[city] ?? 15 }),
})
const sendEmail = tool({
  description: 'Sends an email.',
  inputSchema: z.object({ to: z.string(), body: z.string() }),
  execute: async ({ to, body }) => {
    console.log(`sending to ${to}: ${body}`)
    return 'sent'
  },
})

const code = await codeMode({ tools: { weather, sendEmail }, toolApproval: { sendEmail: 'user-approval' } })

// What the scripted model does: one script that compares two cities and mails the result.
const script = `
const [lisbon, oslo] = await Promise.all([tools.weather({city: 'Lisbon'}), tools.weather({city: 'Oslo'})])
const warmer = lisbon.celsius > oslo.celsius ? lisbon : oslo
console.log('warmer:', warmer.city)
return await tools.sendEmail({to: 'team@example.com', body: warmer.city + ' is warmer'})`
const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } }
const steps = [
  { content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'Exec', input: JSON.stringify({ code: script }) }] },
  { content: [{ type: 'text', text: 'Mailed the team: Lisbon is warmer.' }] },
]
const model = new MockLanguageModelV4({
  doGenerate: async () => {
    const step = steps.shift()
    const finish = step.content[0].type === 'text' ? 'stop' : 'tool-calls'
    return { ...step, finishReason: { unified: finish, raw: finish }, usage, warnings: [] }
  },
})

const prompt = 'Which is warmer, Lisbon or Oslo? Mail the team.'
const first = await generateText({ model, tools: code.tools, toolApproval: code.toolApproval, stopWhen: isStepCount(4), prompt })
const request = first.content.find((part) => part.type === 'tool-approval-request')
console.log('approval asked:', request.reason)

// A person approves; the conversation goes on with the approval in it.
const messages = [
  { role: 'user', content: prompt },
  ...first.response.messages,
  { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] },
]
const second = await generateText({ model, tools: code.tools, toolApproval: code.toolApproval, stopWhen: isStepCount(4), messages })
console.log('model:', second.text)
await code.close()
