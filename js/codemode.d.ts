// An executor for `@cloudflare/codemode` backed by exec-host. See docs/typescript.md.
import type { SessionOptions } from './index.js'

type Fns = Record<string, (...args: unknown[]) => Promise<unknown>>

/** How many sessions (one per layout of providers and tool names) an executor keeps open. */
export declare const MAX_SESSIONS: number

/** Runs codemode's scripts in exec-host's sandbox: codemode's `Executor`. */
export declare class ExecHostExecutor {
  /** `timeout`: the milliseconds a script may take in all (30 000 by default). */
  constructor(options?: Omit<SessionOptions, 'tools'> & { timeout?: number })
  execute(
    code: string,
    providersOrFns: Array<{ name: string; fns: Fns; prelude?: string }> | Fns,
    options?: { connectors?: unknown[] },
  ): Promise<{ result: unknown; error?: string; logs?: string[] }>
  /** Closes the sessions this executor opened. */
  close(): Promise<void>
}
