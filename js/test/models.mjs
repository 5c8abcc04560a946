// Scripted models for the AI SDK's own mock language model (`ai/test`): each step answers
// with the next tool call or text of a script, as a real model would.
import { MockLanguageModelV4 } from 'ai/test'

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** A step that calls `toolName` with `input`. */
export const callStep = (toolCallId, toolName, input) => ({
  content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls', raw: 'tool_use' },
  usage,
  warnings: [],
})

/** A step that answers `text`. */
export const textStep = (text) => ({
  content: [{ type: 'text', text }],
  finishReason: { unified: 'stop', raw: 'end_turn' },
  usage,
  warnings: [],
})

/**
 * A mock model that plays `steps` in order (for generateText and streamText alike), and
 * keeps the prompts it was sent.
 */
export function scriptedModel(steps) {
  const prompts = []
  let next = 0
  const step = (options) => {
    prompts.push(options.prompt)
    if (next >= steps.length) throw new Error('the scripted model has no more steps')
    return steps[next++]
  }
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => step(options),
    doStream: async (options) => {
      const result = step(options)
      const parts = [{ type: 'stream-start', warnings: [] }]
      for (const part of result.content) {
        if (part.type === 'text') {
          parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: part.text }, { type: 'text-end', id: 't' })
        } else {
          parts.push(part)
        }
      }
      parts.push({ type: 'finish', finishReason: result.finishReason, usage: result.usage })
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part)
            controller.close()
          },
        }),
      }
    },
  })
  return { model, prompts }
}
