// exec-host for Node.js: a Session runs model-written JavaScript ("Exec" scripts) in a
// WebAssembly sandbox, its `tools.<name>(...)` calls reaching your JavaScript functions, MCP
// servers, the workspace's builtin tools and a confined Bash, every call through one
// permission and hook funnel. The sandbox runs off the JavaScript thread: no Exec blocks the
// event loop. See docs/typescript.md.

import { SessionError } from './lib/errors.js'
import { NativeSession, operation, unwrap } from './lib/native.js'
import { pausedFrom, resultFrom } from './lib/results.js'
import { MAX_EXEC_DEPTH, currentCall, dispatcher, tool, toolSpecs } from './lib/tools.js'

export { ExecHostError, ResumeError, SessionError } from './lib/errors.js'
export { MAX_EXEC_DEPTH, tool } from './lib/tools.js'
export { MAX_VALUE_BYTES } from './lib/native.js'

const LIMIT_KEYS = {
  budgetMs: ['budget', 1000],
  maxCalls: ['max_calls', 1],
  maxLogChars: ['max_log_chars', 1],
  maxResultChars: ['max_result_chars', 1],
  maxImages: ['max_images', 1],
  maxMemoryBytes: ['max_memory_bytes', 1],
  maxNestedWaitMs: ['max_nested_wait', 1000],
  maxArgumentBytes: ['max_argument_bytes', 1],
}

const OPTION_KEYS = [
  'workspace',
  'tools',
  'mcpServers',
  'apis',
  'settings',
  'settingsFiles',
  'permissionMode',
  'allow',
  'deny',
  'ask',
  'bash',
  'limits',
  'stateStore',
  'stateKeyFile',
  'conversation',
  'approver',
  'inputHandler',
]

/** The limits as the addon reads them (times in seconds). */
function limitsOption(limits) {
  if (limits == null) return undefined
  const out = {}
  for (const [key, value] of Object.entries(limits)) {
    const known = LIMIT_KEYS[key]
    if (!known) throw new TypeError(`limits.${key} is not a limit (${Object.keys(LIMIT_KEYS).join(', ')})`)
    if (value === undefined) continue
    if (typeof value !== 'number') throw new TypeError(`limits.${key} is a number`)
    out[known[0]] = value / known[1]
  }
  return out
}

/** An approver's answer as the host reads it. */
function approverAnswer(answer) {
  if (answer === 'once' || answer === 'always' || answer === 'park' || answer === 'deny') return answer
  if (answer !== null && typeof answer === 'object' && typeof answer.deny === 'string') return { deny: answer.deny }
  return answer ?? null
}

/** An input handler's answer: an object of values accepts; 'decline' and 'cancel' say so. */
function inputAnswer(answer) {
  if (answer === 'decline' || answer === 'cancel') return answer
  if (answer !== null && typeof answer === 'object' && !Array.isArray(answer)) return { accept: answer }
  return 'decline'
}

function approvalRequest(asked) {
  return {
    tool: asked.tool,
    input: asked.input,
    why: asked.why,
    rule: asked.rule,
    execId: asked.exec_id ?? null,
    call: asked.call ?? null,
  }
}

function asyncAnswer(outcome, read) {
  return outcome !== null && typeof outcome === 'object' && typeof outcome.then === 'function'
    ? outcome.then(read)
    : read(outcome)
}

/** One agent's sandbox and tools. Open it with `await Session.open(options)`. */
export class Session {
  #native
  #closed = false

  constructor(native) {
    if (!(native instanceof NativeSession)) throw new TypeError('open a session with Session.open(options)')
    this.#native = native
  }

  /** Opens a session; see `SessionOptions` in index.d.ts. */
  static async open(options = {}) {
    const unknown = Object.keys(options).filter((key) => !OPTION_KEYS.includes(key))
    if (unknown.length > 0) {
      throw new TypeError(`unknown option ${unknown.map((key) => `\`${key}\``).join(', ')} (the options are ${OPTION_KEYS.join(', ')})`)
    }
    const tools = (options.tools ?? []).map(tool)
    const names = new Set()
    for (const { name } of tools) {
      if (names.has(name)) throw new TypeError(`two tools are named \`${name}\``)
      names.add(name)
    }
    const { approver, inputHandler } = options
    if (approver != null && typeof approver !== 'function') throw new TypeError('the approver is a function')
    if (inputHandler != null && typeof inputHandler !== 'function') throw new TypeError('the input handler is a function')
    let mcpServers = options.mcpServers
    if (mcpServers != null && typeof mcpServers === 'object' && !('mcpServers' in mcpServers) && !('apis' in mcpServers)) {
      mcpServers = { mcpServers }
    }
    const given = {
      workspace: options.workspace ?? undefined,
      mcp_servers: mcpServers ?? undefined,
      apis: options.apis ?? undefined,
      settings: options.settings ?? undefined,
      settings_files: options.settingsFiles ?? undefined,
      permission_mode: options.permissionMode ?? undefined,
      allow: options.allow ?? undefined,
      deny: options.deny ?? undefined,
      ask: options.ask ?? undefined,
      bash: options.bash ?? undefined,
      limits: limitsOption(options.limits),
      state_store: options.stateStore ?? undefined,
      state_key_file: options.stateKeyFile ?? undefined,
      conversation: options.conversation ?? undefined,
    }
    const dispatch = dispatcher(
      tools,
      approver && ((asked) => asyncAnswer(approver(approvalRequest(asked)), approverAnswer)),
      inputHandler && ((asked) => asyncAnswer(inputHandler(asked), inputAnswer)),
    )
    let native
    try {
      native = new NativeSession(JSON.stringify(given), toolSpecs(tools), approver != null, inputHandler != null, dispatch)
    } catch (error) {
      throw new TypeError(error.message)
    }
    await operation((id) => native.open(id))
    return new Session(native)
  }

  #open() {
    if (this.#closed) throw new SessionError('the session is closed')
    return this.#native
  }

  #about() {
    return unwrap(this.#native.about())
  }

  /** The conversation this session's parked Execs and stored values belong to. */
  get conversation() {
    return this.#about().conversation
  }

  /** Why each MCP server that did not start did not, one sentence each. */
  get startFailures() {
    return this.#about().start_failures
  }

  /** The permission mode in force. */
  get permissionMode() {
    this.#open()
    return this.#about().permission_mode
  }

  /**
   * Runs `code` (the body of an async JavaScript function) as one Exec, to its result; a
   * script that fails is a result with `ok` false, not a rejection. `signal` aborts it.
   */
  async exec(code, { id, signal } = {}) {
    const native = this.#open()
    if (typeof code !== 'string') throw new TypeError('the code is a string')
    const depth = (currentCall.getStore()?.depth ?? -1) + 1
    if (depth > MAX_EXEC_DEPTH) throw new SessionError(`an Exec started by a tool may nest at most ${MAX_EXEC_DEPTH} deep`)
    return resultFrom(await operation((op) => native.exec(op, code, depth, id ?? null), signal))
  }

  /**
   * Continues the parked Exec `handle` where it stopped, with no call made twice: the calls
   * of `approve` run once ('all': every call it waits for), those of `always` run and are
   * allowed from then on, those of `deny` are refused (an object gives each a reason).
   */
  async resume(handle, { approve = [], always = [], deny = [], signal } = {}) {
    const native = this.#open()
    const answers = {}
    if (approve === 'all') approve = (await this.parked(handle)).approvals.map((approval) => approval.id)
    for (const id of approve) answers[id] = 'once'
    for (const id of always) answers[id] = 'always'
    const denied = Array.isArray(deny) ? deny.map((id) => [id, 'denied']) : Object.entries(deny)
    for (const [id, reason] of denied) answers[id] = { deny: String(reason) }
    return resultFrom(await operation((op) => native.resume(op, handle, JSON.stringify(answers)), signal))
  }

  /** What the parked Exec `handle` waits for. */
  async parked(handle) {
    const native = this.#open()
    return pausedFrom(await operation((op) => native.parked(op, handle)))
  }

  /** Every parked Exec of this conversation. */
  async parkedExecs() {
    const native = this.#open()
    return (await operation((op) => native.parkedList(op))).map(pausedFrom)
  }

  /** Drops the parked Exec `handle`: the calls it waits for never run. */
  async discard(handle) {
    const native = this.#open()
    await operation((op) => native.discard(op, handle))
  }

  /** The `Exec` tool as a model is offered it: `name`, `description`, `inputSchema`. */
  declaration() {
    const declared = unwrap(this.#open().declaration())
    return { name: declared.name, description: declared.description, inputSchema: declared.input_schema }
  }

  /** A TypeScript declaration file (`.d.ts`) of everything a script reaches now. */
  declarationFile() {
    return unwrap(this.#open().declarationFile())
  }

  /** The tools that match `query`, as a script's `tools.ToolSearch` finds them. */
  search(query, limit) {
    return unwrap(this.#open().search(String(query), limit ?? null)).matches
  }

  /**
   * What the next model request needs, from the history (messages in the library's neutral
   * format); with `provider` ('anthropic', 'openai-responses', 'openai-chat') also `tools`
   * and `request` in its own format.
   */
  prepare(history, provider) {
    return unwrap(this.#open().prepare(JSON.stringify(history), provider ?? null))
  }

  /** A provider's response body as `message`, `toolCalls`, `stop` and `skipped`. */
  reply(body, provider) {
    const read = unwrap(this.#open().reply(JSON.stringify(body), provider))
    return { message: read.message, toolCalls: read.tool_calls, stop: read.stop, skipped: read.skipped }
  }

  /**
   * Runs a turn's tool calls (`{id, name, input}` each, or one alone) through the same
   * permission and hook funnel as an Exec's nested calls: each result, and the messages to
   * append to the history.
   */
  async call(toolCalls, { signal } = {}) {
    const native = this.#open()
    const calls = Array.isArray(toolCalls) ? toolCalls : [toolCalls]
    const turn = await operation((op) => native.callTurn(op, JSON.stringify(calls)), signal)
    return { results: turn.results.map(resultFrom), messages: turn.messages }
  }

  /** Closes the session: its MCP servers and their children are stopped. Closing again does nothing. */
  async close() {
    if (this.#closed) return
    this.#closed = true
    await operation((op) => this.#native.close(op))
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}
