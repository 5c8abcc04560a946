// What the framework adapters (`exec-host/ai`, `exec-host/codemode`) decide alike: the
// state store they park in when given none, and finding the parked Exec of a model's call.

import { nativePrivateStore, unwrap } from './native.js'

/**
 * The state store an adapter parks in when given none: a folder of this process (0700) with
 * a new key (0600), the same for every adapter, removed at exit. A script parked there
 * resumes only in this process.
 */
export function privateStore() {
  const { state_store: stateStore, state_key_file: stateKeyFile } = unwrap(nativePrivateStore())
  return { stateStore, stateKeyFile }
}

/** The session options an adapter opens with: the user's, parking in the private store by default. */
export function withStore(options) {
  return options.stateStore == null ? { ...options, ...privateStore() } : options
}

/** The parked Exec a model's tool call waits in (it ran with the call's id), or null. */
export async function parkedFor(session, execId) {
  return (await session.parkedExecs()).find((paused) => paused.execId === execId) ?? null
}

/** One line a person reads about the calls a parked Exec waits for. */
export function describePending(paused) {
  return paused.approvals.map((approval) => `${approval.tool}(${JSON.stringify(approval.input)})`).join(', ')
}
