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

/**
 * Runs codemode's scripts in exec-host's WebAssembly sandbox. `options` are `Session.open`'s
 * (limits, approver, workspace, ...) and `timeout`, the milliseconds a script may take in
 * all (30 000 by default, as codemode's own executor). Every tool function codemode hands it
 * becomes an exec-host tool, allowed to run; each set of providers opens one session, kept
 * for the next script of the same code tool.
 */
export class ExecHostExecutor {
  #options
  #timeout
  #sessions = new WeakMap()
  #open = new Set()

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
      const { session, names, error } = await this.#sessionFor(providersOrFns, providers)
      if (error) return { result: undefined, error }
      const script = [...namespaces(providers, names), ...providers.filter((p) => p.prelude).map((p) => p.prelude)]
      script.push(`return await (${code})();`)
      const signal = AbortSignal.timeout(this.#timeout)
      let result
      try {
        result = await session.exec(script.join('\n'), { signal })
      } catch (aborted) {
        if (signal.aborted) return { result: undefined, error: TIMED_OUT }
        throw aborted
      }
      if (result.ok) return { result: result.value ?? undefined, logs: result.logs }
      return { result: undefined, error: result.error?.message ?? result.text, logs: result.logs }
    } catch (error) {
      return { result: undefined, error: error instanceof Error ? error.message : String(error) }
    }
  }

  /** Closes the sessions this executor opened. */
  async close() {
    const open = [...this.#open]
    this.#open.clear()
    await Promise.all(open.map(async (opening) => (await opening).session?.close()))
  }

  #sessionFor(key, providers) {
    const cached = typeof key === 'object' && key !== null ? this.#sessions.get(key) : undefined
    if (cached) return cached
    const opening = this.#openFor(providers)
    if (typeof key === 'object' && key !== null) this.#sessions.set(key, opening)
    this.#open.add(opening)
    return opening
  }

  async #openFor(providers) {
    sanitize ??= (await import('@cloudflare/codemode')).sanitizeToolName
    const seen = new Set()
    const tools = []
    const names = new Map()
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
        const hostName = `${provider.name}__${visible}`
        tools.push(tool({ name: hostName, description: `${provider.name}.${visible}`, inputSchema: { type: 'object' }, execute: (input) => fn(input) }))
      }
      names.set(provider.name, [...own.keys()])
    }
    const session = await Session.open({
      ...this.#options,
      tools,
      allow: [...(this.#options.allow ?? []), ...tools.map((given) => given.name)],
    })
    return { session, names }
  }
}

/** The statements that give the script each provider's namespace, as codemode's sandbox does. */
function namespaces(providers, names) {
  return providers.map((provider) => {
    const members = names
      .get(provider.name)
      .map((visible) => `${JSON.stringify(visible)}: (input) => tools[${JSON.stringify(`${provider.name}__${visible}`)}](input)`)
    return `const ${provider.name} = { ${members.join(', ')} };`
  })
}
