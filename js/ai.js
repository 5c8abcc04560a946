// Code mode for the Vercel AI SDK: the user's AI SDK tools become what an Exec script's
// `tools.<name>(...)` calls, and the model is offered one tool, `Exec`, that runs the script
// in exec-host's sandbox. A nested call to a tool the user's `toolApproval` marks
// 'user-approval' parks the Exec, and the Exec's own call then asks for the SDK's tool approval
// (its reason names the calls that wait); approved, the Exec resumes where it stopped, with no
// call made twice, and the rest of that script's calls that ask are approved with it.

import { asSchema, jsonSchema, tool as aiTool } from 'ai'
import { Session, tool } from './index.js'
import { describePending, parkedFor, withStore } from './lib/adapters.js'

/** The name the model calls the script tool by. */
export const EXEC = 'Exec'

/**
 * How many decided Execs a code mode keeps for their execution, the oldest forgotten first. The
 * SDK executes a call right after its decision unless it asks a person, so what lingers is
 * Execs that parked (a denied call is never executed), and those are found again in the store.
 */
export const MAX_DECIDED = 1000

function status(given) {
  if (given === undefined || given === null) return { type: 'not-applicable' }
  return typeof given === 'string' ? { type: given } : given
}

/**
 * Opens a session whose tools are the AI SDK `tools` given, and returns the `Exec` tool and
 * its approval function for `generateText` / `streamText`:
 * `generateText({ model, tools: code.tools, toolApproval: code.toolApproval, ... })`.
 * `toolApproval` is the AI SDK configuration for the script's calls (a status or function
 * per tool, or one function for all); the other options are `Session.open`'s. Close the
 * session with `code.close()`.
 */
export async function codeMode({ tools = {}, toolApproval, ...options } = {}) {
  const defined = []
  for (const [name, given] of Object.entries(tools)) {
    if (typeof given?.execute !== 'function') {
      throw new TypeError(`the AI SDK tool \`${name}\` has no execute function: a script cannot call it`)
    }
    const schema = await asSchema(given.inputSchema).jsonSchema
    const { $schema: _, ...inputSchema } = schema ?? { type: 'object' }
    let outputSchema
    if (given.outputSchema != null) {
      const { $schema: __, ...output } = await asSchema(given.outputSchema).jsonSchema
      outputSchema = output
    }
    const description = typeof given.description === 'function' ? await given.description() : (given.description ?? '')
    defined.push(
      tool({
        name,
        description,
        inputSchema,
        outputSchema,
        execute: (input, call) =>
          given.execute(input, {
            toolCallId: `${call.execId ?? 'direct'}#${call.call ?? 0}`,
            messages: [],
            abortSignal: call.signal,
          }),
      }),
    )
  }
  // The Execs whose approval a person gave: their calls that ask run.
  const approved = new Set()
  const decide = async (request) => {
    const asked = request.execId !== null && approved.has(request.execId) ? 'once' : 'park'
    const given = tools[request.tool]
    if (given === undefined) return asked
    const toolCall = {
      type: 'tool-call',
      toolCallId: `${request.execId}#${request.call}`,
      toolName: request.tool,
      input: request.input,
    }
    let decided
    if (typeof toolApproval === 'function') {
      decided = await toolApproval({ toolCall, tools, toolsContext: {}, runtimeContext: undefined, messages: [] })
    } else if (toolApproval != null && request.tool in toolApproval) {
      const configured = toolApproval[request.tool]
      decided =
        typeof configured === 'function'
          ? await configured(request.input, { toolCallId: toolCall.toolCallId, messages: [], toolContext: undefined, runtimeContext: undefined })
          : configured
    } else if (given.needsApproval !== undefined) {
      const needs =
        typeof given.needsApproval === 'function'
          ? await given.needsApproval(request.input, { toolCallId: toolCall.toolCallId, messages: [] })
          : given.needsApproval
      decided = needs ? 'user-approval' : 'not-applicable'
    }
    const { type, reason } = status(decided)
    if (type === 'denied') return { deny: reason ?? `${request.tool} is denied` }
    if (type === 'user-approval') return asked
    return 'once'
  }
  const session = await Session.open({
    ...withStore(options),
    tools: defined,
    // Every call of theirs asks, so that the AI SDK configuration decides.
    permissionMode: options.permissionMode ?? 'default',
    approver: decide,
  })
  const declaration = session.declaration()
  // Execs run while their approval was decided, by the model's call id, until executed
  // (a call the person denies is never executed: the oldest are forgotten past MAX_DECIDED).
  const ran = new Map()
  const decided = (toolCallId, result) => {
    ran.set(toolCallId, result)
    for (const oldest of ran.keys()) {
      if (ran.size <= MAX_DECIDED) break
      ran.delete(oldest)
    }
  }

  // The SDK executes a call only once its approval (if it asked) was given: an Exec that
  // parked while its approval was decided resumes, its calls approved. One that parks here
  // was never shown to a person (the SDK was not given `toolApproval`): it is dropped.
  const run = async (code, toolCallId, abortSignal) => {
    const decided = ran.get(toolCallId)
    ran.delete(toolCallId)
    const paused = decided === undefined ? await parkedFor(session, toolCallId) : decided.paused
    if (decided !== undefined && paused === null) return decided
    if (paused === null) {
      const result = await session.exec(code, { id: toolCallId, signal: abortSignal })
      if (result.paused === null) return result
      await session.discard(result.paused.handle)
      const text = `The script stopped: ${describePending(result.paused)}. Its approval was never asked for: pass code mode's toolApproval to the AI SDK.`
      return { ...result, text }
    }
    approved.add(toolCallId)
    try {
      return await session.resume(paused.handle, { approve: 'all', signal: abortSignal })
    } finally {
      approved.delete(toolCallId)
    }
  }

  const exec = aiTool({
    description: declaration.description,
    inputSchema: jsonSchema(declaration.inputSchema),
    execute: async ({ code }, { toolCallId, abortSignal }) => {
      const result = await run(code, toolCallId, abortSignal)
      return { ok: result.ok, text: result.text, value: result.value, images: result.images }
    },
    toModelOutput: ({ output }) =>
      output.images.length === 0
        ? { type: 'text', value: output.text }
        : {
            type: 'content',
            value: [
              { type: 'text', text: output.text },
              ...output.images.map((image) => ({ type: 'file', data: { type: 'data', data: image.base64 }, mediaType: image.mimeType })),
            ],
          },
  })

  return {
    tools: { [EXEC]: exec },
    toolApproval: {
      // Runs the script to learn whether a call of it waits for a person: the script
      // parks there, and the model's call asks for approval; executed, it resumes.
      [EXEC]: async ({ code }, { toolCallId }) => {
        if (ran.has(toolCallId)) return ran.get(toolCallId).paused ? userApproval(ran.get(toolCallId).paused) : undefined
        const parked = await parkedFor(session, toolCallId)
        if (parked) return userApproval(parked)
        const result = await session.exec(code, { id: toolCallId })
        decided(toolCallId, result)
        return result.paused ? userApproval(result.paused) : undefined
      },
    },
    session,
    close: () => session.close(),
  }
}

function userApproval(paused) {
  return { type: 'user-approval', reason: `the script waits for approval of ${describePending(paused)}` }
}
