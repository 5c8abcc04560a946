// exec-host for Node.js: the public API. See docs/typescript.md.

/** A JSON value: what crosses between a script, its tools and you. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** What a tool is told of the call it serves. */
export interface CallContext {
  /** The id of the Exec whose script made the call (as `exec(code, { id })` gave it), or null for a direct call. */
  execId: string | null
  /** The call's place among the script's calls (from 0), or null for a direct call. */
  call: number | null
  /** A direct call's id. */
  callId?: string
  /** How many Execs deep the calling script runs (0: started by you). */
  depth: number
  /** Aborted when the script no longer waits for the call (it was aborted, or timed out). */
  signal: AbortSignal
}

/** A JSON Schema, or a zod 4 schema (turned into JSON Schema; it also parses the input). */
export type InputSchema = Record<string, unknown> | { _zod: unknown; toJSONSchema(): Record<string, unknown> }

/** What `tool()` takes. */
export interface ToolDefinition<Input = any, Output = unknown> {
  /** The name a script calls it by: `tools.<name>(input)`. */
  name: string
  /** What it does, for the model (ToolSearch shows it). */
  description?: string
  /** The input it takes: an object. */
  inputSchema?: InputSchema
  /** What it returns, when known. */
  outputSchema?: InputSchema
  /** It changes nothing: permission modes let it run without asking. */
  readOnly?: boolean
  /** Runs the call; sync or async. What it returns must be plain data. */
  execute(input: Input, context: CallContext): Output | Promise<Output>
}

/** A tool of a session, as `tool()` made it. */
export interface Tool {
  readonly name: string
  readonly description: string
  readonly inputSchema: Record<string, unknown>
  readonly outputSchema?: Record<string, unknown>
  readonly readOnly: boolean
}

/** Checks a tool definition and makes it a tool; `Session.open` does so with what it is given. */
export declare function tool<Input = any, Output = unknown>(definition: ToolDefinition<Input, Output>): Tool

/** How many Execs deep a tool's own Exec may nest. */
export declare const MAX_EXEC_DEPTH: number
/** How large a value a tool returns may be (bytes of its strings and 8 for every other part). */
export declare const MAX_VALUE_BYTES: number

/** An error of exec-host (the base of the others). */
export declare class ExecHostError extends Error {}
/** A session could not be opened, or was asked what it cannot do (it is closed, say). */
export declare class SessionError extends ExecHostError {}
/** A parked Exec could not be resumed, listed or discarded. */
export declare class ResumeError extends ExecHostError {}

/** A call that asks before it runs. */
export interface ApprovalRequest {
  tool: string
  input: Json
  /** Why it asks: the rule and its file, or the mode. */
  why: string
  /** The rule 'always' would save. */
  rule: string
  /** For a script's call, the id of its Exec. */
  execId: string | null
  /** For a script's call, its place among the script's calls. */
  call: number | null
}

/** An approver's answer: run it once, always, park the Exec (it needs a state store), or deny. */
export type Answer = 'once' | 'always' | 'park' | 'deny' | { deny: string }

/** An MCP server's question during a call: a form to fill, or a page to open. */
export interface InputRequest {
  server: string
  message: string
  kind: 'form' | 'url' | 'other'
  schema?: Record<string, unknown>
  url?: string
}

/** An input handler's answer: the values of the form (accept), or 'decline' or 'cancel'. */
export type InputAnswer = Record<string, Json> | 'decline' | 'cancel'

/** What one Exec may take; each left out keeps the library's default. */
export interface Limits {
  /** The script's own running time (waiting on tools does not count). */
  budgetMs?: number
  /** Nested calls. */
  maxCalls?: number
  maxLogChars?: number
  maxResultChars?: number
  maxImages?: number
  /** The sandbox's memory. */
  maxMemoryBytes?: number
  /** How long it may wait on its tools in all. */
  maxNestedWaitMs?: number
  /** One call's arguments. */
  maxArgumentBytes?: number
}

export interface SessionOptions {
  /** The folder the builtin tools (read_file, glob, Bash, ...) work in; none by default. */
  workspace?: string | null
  /** Your functions as tools (see `tool`). */
  tools?: Array<Tool | ToolDefinition>
  /** A configuration file in the `mcpServers` format, or its contents (with or without the `mcpServers` key); it may hold `apis` too. */
  mcpServers?: string | Record<string, unknown>
  /**
   * HTTP APIs described by OpenAPI, by name, each as in a configuration file
   * (`{ github: { spec: 'github.json', auth: { type: 'bearer', token } } }`, see docs/http-apis.md):
   * each operation is a tool `api__<name>__<operation>`.
   */
  apis?: Record<string, Record<string, unknown>>
  /** A settings layer (the settings files' format) that outranks every file. */
  settings?: Record<string, unknown>
  /** Settings files to read, lowest first. */
  settingsFiles?: string[]
  /** 'default', 'acceptEdits', 'plan', 'dontAsk' or 'bypassPermissions'. */
  permissionMode?: string
  /** Permission rules added to `settings`: 'add', 'Bash(git *)', 'mcp__github__*'. */
  allow?: string[]
  deny?: string[]
  ask?: string[]
  /** true offers Bash (confined to the workspace), false keeps it off whatever the settings say. */
  bash?: boolean
  limits?: Limits
  /** A folder or `redis://HOST:PORT/DB` where Execs park and scripts' `store()` values are kept. */
  stateStore?: string
  /** The key that seals them (by default this machine's, made when missing). */
  stateKeyFile?: string
  /** The id parked Execs and stored values belong to (a new one by default). */
  conversation?: string
  /** Called for each call that asks; without one, such a call is refused with the rule that would let it run. */
  approver?: (request: ApprovalRequest) => Answer | Promise<Answer>
  /** Called when an MCP server asks a question during a call. */
  inputHandler?: (request: InputRequest) => InputAnswer | Promise<InputAnswer>
}

/** A call of a parked Exec that waits for an answer. */
export interface PendingApproval {
  /** What `resume` answers. */
  id: number
  tool: string
  input: Json
  why: string
}

/** An Exec that parked. */
export interface Paused {
  /** What `resume` takes (good in this conversation, from any process with the same store). */
  handle: string
  approvals: PendingApproval[]
  /** The id of the Exec, as `exec(code, { id })` gave it. */
  execId: string | null
}

/** One nested call of an Exec. */
export interface CallDetail {
  name: string
  ok: boolean
  stage: string | null
  ms: number
  note: string | null
}

/** What one Exec (or one tool call) came to; a script that fails is `ok: false`, not a rejection. */
export interface ExecResult {
  ok: boolean
  /** The script's returned value. */
  value: Json
  /** What a model reads. */
  text: string
  /** The console lines. */
  logs: string[]
  images: Array<{ mimeType: string; base64: string }>
  /** The nested calls' tools, in order. */
  calls: string[]
  callDetails: CallDetail[]
  /** One line for a UI. */
  summary: string
  error: { stage: string | null; message: string } | null
  /** Set when it parked: see `Session.resume`. */
  paused: Paused | null
  /** What the calls' hooks reported. */
  messages: string[]
}

/** A turn's tool calls run. */
export interface Turn {
  results: ExecResult[]
  /** The tool results, then what the calls' hooks reported: append them to the history. */
  messages: Json[]
}

export type Provider = 'anthropic' | 'openai-responses' | 'openai-chat'

/** One agent's sandbox and tools. */
export declare class Session {
  /** Opens a session; rejects with TypeError for options it does not take, SessionError when it cannot start. */
  static open(options?: SessionOptions): Promise<Session>
  /** The conversation this session's parked Execs and stored values belong to. */
  readonly conversation: string | null
  /** Why each MCP server that did not start did not, one sentence each. */
  readonly startFailures: string[]
  /** The permission mode in force. */
  readonly permissionMode: string
  /** Runs `code` (the body of an async function) as one Exec; `signal` aborts it. */
  exec(code: string, options?: { id?: string; signal?: AbortSignal }): Promise<ExecResult>
  /** Continues a parked Exec, with no call made twice; a call left unanswered parks again. */
  resume(
    handle: string,
    answers?: { approve?: number[] | 'all'; always?: number[]; deny?: number[] | Record<number, string>; signal?: AbortSignal },
  ): Promise<ExecResult>
  /** What the parked Exec `handle` waits for. */
  parked(handle: string): Promise<Paused>
  /** Every parked Exec of this conversation. */
  parkedExecs(): Promise<Paused[]>
  /** Drops a parked Exec: the calls it waits for never run. */
  discard(handle: string): Promise<void>
  /** The `Exec` tool as a model is offered it, with the catalogue of the tools its scripts reach. */
  declaration(): { name: string; description: string; inputSchema: Record<string, unknown> }
  /** A TypeScript declaration file of everything a script reaches now. */
  declarationFile(): string
  /** The tools that match `query`, as a script's `tools.ToolSearch` finds them. */
  search(query: string, limit?: number): Array<{ name: string; description: string; signature: string }>
  /** What the next model request needs, from the history (the library's neutral messages). */
  prepare(
    history: Json[],
    provider?: Provider,
  ): {
    append: Json[]
    declarations: Json[]
    deferred: Json[]
    guidance: string
    tools?: Json
    request?: Record<string, any>
  }
  /** A provider's response body as a neutral message, its tool calls and why it stopped. */
  reply(
    body: Json,
    provider: Provider,
  ): { message: Json; toolCalls: Array<{ type: 'tool_use'; id: string; name: string; input: Json }>; stop: string; skipped: Json }
  /** Runs a turn's tool calls through the same permission and hook funnel as an Exec's nested calls. */
  call(
    toolCalls: { id: string; name: string; input?: Json } | Array<{ id: string; name: string; input?: Json }>,
    options?: { signal?: AbortSignal },
  ): Promise<Turn>
  /** Closes the session: its MCP servers and their children are stopped. */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}
