// Cloudflare's codemode on plain Node.js, with exec-host as its executor: the program is a
// codemode program, `createCodeTool` and all; only the executor differs. Run it with
// `node --import exec-host/codemode/register codemode_executor.mjs` (codemode's modules
// import `cloudflare:workers`, which the register hook provides outside Workers).
//
// The model is the AI SDK's mock (`ai/test`) playing one scripted tool call.
import { createCodeTool } from '@cloudflare/codemode/ai'
import { generateText, isStepCount, tool } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import { ExecHostExecutor } from 'exec-host/codemode'
import { z } from 'zod'

const tools = {
  getWeather: tool({
    description: 'The weather in a city, in degrees Celsius.',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, celsius: { Lisbon: 21, Oslo: 4 }[city] ?? 15 }),
  }),
}
const executor = new ExecHostExecutor({ timeout: 10_000 })
const codemode = createCodeTool({ tools, executor })

const code = `async () => {
  const cities = ["Lisbon", "Oslo", "Lima"];
  const readings = await Promise.all(cities.map((city) => codemode.getWeather({ city })));
  console.log("read", readings.length, "cities");
  return readings.sort((a, b) => b.celsius - a.celsius)[0];
}`
const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } }
const steps = [
  { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'codemode', input: JSON.stringify({ code }) }], finish: 'tool-calls' },
  { content: [{ type: 'text', text: 'Lisbon is the warmest.' }], finish: 'stop' },
]
const model = new MockLanguageModelV4({
  doGenerate: async () => {
    const { content, finish } = steps.shift()
    return { content, finishReason: { unified: finish, raw: finish }, usage, warnings: [] }
  },
})

const result = await generateText({ model, tools: { codemode }, stopWhen: isStepCount(3), prompt: 'Which city is warmest?' })
console.log('script result:', result.steps[0].toolResults[0].output)
console.log('model:', result.text)
await executor.close()
