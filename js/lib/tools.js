// JavaScript functions as tools, and the one dispatcher per session through which the addon
// calls them (and the approver and input handler), off the host's threads, on this one.

import { AsyncLocalStorage } from 'node:async_hooks'
import { MAX_VALUE_BYTES, settleCall } from './native.js'
import { describeThrown, plainJson } from './values.js'

/** The roles of the dispatcher besides tools (an index): the addon's numbering. */
const APPROVER = -1
const INPUT = -2
const CANCEL = -3

/** How many Execs deep a tool's own Exec may nest (a tool that runs an Exec that calls it). */
export const MAX_EXEC_DEPTH = 3

/** The call a tool is serving, for an Exec it starts: its depth. */
export const currentCall = new AsyncLocalStorage()

const TOOL = Symbol('exec-host tool')

/**
 * A tool of a session: `name`, `description`, `inputSchema` (a JSON Schema of an object, or
 * a zod 4 schema, which also parses the input), an optional `outputSchema`, `readOnly` (it
 * changes nothing: permission modes let it run without asking), and `execute(input, context)`,
 * sync or async.
 */
export function tool(definition) {
  if (definition === null || typeof definition !== 'object') throw new TypeError('a tool is an object')
  if (definition[TOOL]) return definition
  const { name, description = '', inputSchema, outputSchema, readOnly = false, execute } = definition
  if (typeof name !== 'string' || name === '') throw new TypeError('a tool needs a `name`')
  if (typeof execute !== 'function') throw new TypeError(`the tool \`${name}\` needs an \`execute\` function`)
  if (typeof description !== 'string') throw new TypeError(`the description of \`${name}\` is a string`)
  const input = schemaOf(inputSchema ?? { type: 'object', properties: {} }, `the input schema of \`${name}\``)
  const output = outputSchema === undefined ? undefined : schemaOf(outputSchema, `the output schema of \`${name}\``)
  const parse = isZod(inputSchema) ? zodParser(inputSchema, name) : undefined
  return Object.freeze({
    [TOOL]: true,
    name,
    description,
    inputSchema: input,
    outputSchema: output,
    readOnly: Boolean(readOnly),
    execute: parse ? (args, context) => execute(parse(args), context) : execute,
  })
}

function isZod(schema) {
  return schema !== null && typeof schema === 'object' && '_zod' in schema
}

/** A JSON Schema, as given or from a zod 4 schema. */
function schemaOf(schema, what) {
  if (isZod(schema)) {
    if (typeof schema.toJSONSchema !== 'function') throw new TypeError(`${what}: a zod schema needs zod 4.1 or newer`)
    const { $schema: _, ...rest } = schema.toJSONSchema()
    return rest
  }
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new TypeError(`${what} is a JSON Schema object or a zod schema`)
  }
  return schema
}

function zodParser(schema, name) {
  return (args) => {
    const parsed = schema.safeParse(args)
    if (parsed.success) return parsed.data
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`)
    throw new TypeError(`the input of \`${name}\` does not match its schema: ${issues.join('; ')}`)
  }
}

/** The tools as the addon reads them. */
export function toolSpecs(tools) {
  return tools.map((given) => ({
    name: given.name,
    description: given.description,
    schema: JSON.stringify(given.inputSchema),
    outputSchema: given.outputSchema === undefined ? undefined : JSON.stringify(given.outputSchema),
    readOnly: given.readOnly,
  }))
}

/** What a tool is told of its call; its `signal` is made when first asked for (most tools never do). */
class CallContext {
  #controller
  #abandoned = false

  constructor(about) {
    this.execId = about.exec_id
    this.call = about.call
    this.callId = about.call_id
    this.depth = about.depth
  }

  /** Aborted when the script no longer waits for the call. */
  get signal() {
    this.#controller ??= new AbortController()
    if (this.#abandoned) this.#abort()
    return this.#controller.signal
  }

  abandon() {
    this.#abandoned = true
    if (this.#controller) this.#abort()
  }

  #abort() {
    if (!this.#controller.signal.aborted) {
      this.#controller.abort(new DOMException('the script no longer waits for this call', 'AbortError'))
    }
  }
}

/**
 * The dispatcher of a session: `(call, role, input, about)` runs the tool of index `role` (or
 * the approver, or the input handler) with the input, and settles the call with what it
 * returns or throws. A CANCEL for a call aborts its context's signal.
 */
export function dispatcher(tools, approver, inputHandler) {
  const running = new Map()
  return (call, role, inputText, aboutText) => {
    if (role === CANCEL) {
      running.get(call)?.abandon()
      running.delete(call)
      return
    }
    let outcome
    try {
      const input = JSON.parse(inputText)
      if (role === APPROVER) outcome = approver(input)
      else if (role === INPUT) outcome = inputHandler(input)
      else {
        const context = new CallContext(JSON.parse(aboutText))
        running.set(call, context)
        outcome = currentCall.run(context, tools[role].execute, input, context)
      }
    } catch (thrown) {
      running.delete(call)
      return settleCall(call, false, describeThrown(thrown))
    }
    if (outcome !== null && typeof outcome === 'object' && typeof outcome.then === 'function') {
      outcome.then(
        (value) => settle(running, call, value),
        (thrown) => {
          running.delete(call)
          settleCall(call, false, describeThrown(thrown))
        },
      )
    } else {
      settle(running, call, outcome)
    }
  }
}

function settle(running, call, value) {
  running.delete(call)
  let text
  try {
    text = plainJson(value, MAX_VALUE_BYTES)
  } catch (refused) {
    return settleCall(call, false, `TypeError: the tool returned ${refused.message}`)
  }
  settleCall(call, true, text)
}
