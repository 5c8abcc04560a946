// An executor for Cloudflare's `@cloudflare/codemode` backed by exec-host, for plain Node.js
// (and anything else that is not a Worker): `createCodeTool({ tools, executor: new
// ExecHostExecutor() })`, the rest of a codemode program unchanged. Outside Workers,
// codemode's modules import `cloudflare:workers`: load `exec-host/codemode/register` first
// (`node --import exec-host/codemode/register app.js`, or import it at the top of the entry
// module) so that import resolves.

import { Session, tool } from './index.js'

/** What codemode's own executor answers when a script runs out of time. */
const TIMED_OUT = 'Execution timed out'

/** The names codemode reserves for itself in the sandbox. */
const RESERVED = new Set(['__dispatchers', '__logs', 'console', 'Promise', 'setTimeout', 'Error', 'tools'])
const IDENTIFIER = /^[a-zA-Z_$][a-zA-Z0-9_$]*$/

/** A tool name as codemode's sandbox sees it (as `sanitizeToolName` of codemode makes it). */
let sanitize

/** How many sessions (one per layout of providers and tool names) an executor keeps open. */
export const MAX_SESSIONS = 16

/**
 * Runs codemode's scripts in exec-host's WebAssembly sandbox. `options` are `Session.open`'s
 * (limits, approver, workspace, ...) and `timeout`, the milliseconds a script may take in
 * all (30 000 by default, as codemode's own executor). Every tool function codemode hands it
 * becomes an exec-host tool, allowed to run. Scripts whose providers have the same names and
 * tool names share a session, the functions of each script bound to it alone; at most
 * MAX_SESSIONS are kept, the least recently used idle one closed first.
 */
export class ExecHostExecutor {
  #options
  #timeout
  /** Layout → { opening, running }, least recently used first. */
  #sessions = new Map()
  /** Exec id → the functions of its script, by host tool name. */
  #functions = new Map()
  #next = 0

  constructor({ timeout = 30_000, ...options } = {}) {
    this.#options = options
    this.#timeout = timeout
  }

  /** Runs `code` (an async arrow function) with the providers' functions; never throws. */
  async execute(code, providersOrFns, options) {
    try {
      if (options?.connectors?.length) {
        return { result: undefined, error: 'this executor does not run codemode connectors (they need Workers RPC)' }
      }
      const providers = Array.isArray(providersOrFns) ? providersOrFns : [{ name: 'codemode', fns: providersOrFns ?? {} }]
      sanitize ??= (await import('@cloudflare/codemode')).sanitizeToolName
      const { layout, functions, error } = laidOut(providers)
      if (error) return { result: undefined, error }
      const entry = this.#sessionFor(layout)
      entry.running++
      const id = `codemode-${++this.#next}`
      this.#functions.set(id, functions)
      try {
        const session = await entry.opening
        const script = [...namespaces(layout), ...providers.filter((p) => p.prelude).map((p) => p.prelude)]
        script.push(`return await (${code})();`)
        const signal = AbortSignal.timeout(this.#timeout)
        let result
        try {
          result = await session.exec(script.join('\n'), { id, signal })
        } catch (aborted) {
          if (signal.aborted) return { result: undefined, error: TIMED_OUT }
          throw aborted
        }
        if (result.ok) return { result: result.value ?? undefined, logs: result.logs }
        return { result: undefined, error: result.error?.message ?? result.text, logs: result.logs }
      } finally {
        this.#functions.delete(id)
        entry.running--
      }
    } catch (error) {
      return { result: undefined, error: error instanceof Error ? error.message : String(error) }
    }
  }

  /** Closes the sessions this executor opened. */
  async close() {
    const entries = [...this.#sessions.values()]
    this.#sessions.clear()
    await Promise.all(entries.map((entry) => close(entry)))
  }

  /** The session of `layout`, opened on first use; the least recently used idle one past MAX_SESSIONS is closed. */
  #sessionFor(layout) {
    const key = JSON.stringify(layout)
    let entry = this.#sessions.get(key)
    if (entry) {
      this.#sessions.delete(key)
    } else {
      entry = { opening: this.#open(layout), running: 0 }
    }
    this.#sessions.set(key, entry)
    for (const [old, kept] of this.#sessions) {
      if (this.#sessions.size <= MAX_SESSIONS) break
      if (kept.running > 0 || kept === entry) continue
      this.#sessions.delete(old)
      void close(kept)
    }
    return entry
  }

  #open(layout) {
    const tools = []
    for (const [provider, members] of layout) {
      for (const visible of members) {
        const hostName = `${provider}__${visible}`
        tools.push(
          tool({
            name: hostName,
            description: `${provider}.${visible}`,
            inputSchema: { type: 'object' },
            execute: (input, call) => {
              const fn = this.#functions.get(call.execId)?.get(hostName)
              if (!fn) throw new Error(`${provider}.${visible} is not a function of this script`)
              return fn(input)
            },
          }),
        )
      }
    }
    return Session.open({ ...this.#options, tools, allow: [...(this.#options.allow ?? []), ...tools.map((given) => given.name)] })
  }
}

async function close(entry) {
  try {
    await (await entry.opening).close()
  } catch {
    // A session that did not open has nothing to close.
  }
}

/**
 * The providers as codemode's sandbox lays them out: `layout`, each provider's name and its
 * tools' sanitized names (what a session is made for), and `functions`, the function of each
 * host tool; or the `error` codemode's own executor gives for the same providers.
 */
function laidOut(providers) {
  const seen = new Set()
  const layout = []
  const functions = new Map()
  for (const provider of providers) {
    if (RESERVED.has(provider.name)) return { error: `Provider name "${provider.name}" is reserved` }
    if (!IDENTIFIER.test(provider.name)) return { error: `Provider name "${provider.name}" is not a valid JavaScript identifier` }
    if (seen.has(provider.name)) return { error: `Duplicate provider name "${provider.name}"` }
    seen.add(provider.name)
    const own = new Map()
    for (const [name, fn] of Object.entries(provider.fns)) {
      const visible = sanitize(name)
      if (own.has(visible)) {
        return { error: `Tool names "${own.get(visible)}" and "${name}" both sanitize to "${visible}" in provider "${provider.name}"` }
      }
      own.set(visible, name)
      functions.set(`${provider.name}__${visible}`, fn)
    }
    layout.push([provider.name, [...own.keys()]])
  }
  return { layout, functions }
}

/** The statements that give the script each provider's namespace, as codemode's sandbox does. */
function namespaces(layout) {
  return layout.map(([provider, members]) => {
    const calls = members.map((visible) => `${JSON.stringify(visible)}: (input) => tools[${JSON.stringify(`${provider}__${visible}`)}](input)`)
    return `const ${provider} = { ${calls.join(', ')} };`
  })
}
