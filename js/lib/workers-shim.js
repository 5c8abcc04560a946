// `cloudflare:workers` outside Workers, as much of it as codemode's modules need to load:
// the base classes they extend. Nothing here runs a Worker.

/** A Worker's entry point: its context and bindings. */
export class WorkerEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx
    this.env = env
  }
}

/** A Durable Object: its state and bindings. */
export class DurableObject {
  constructor(ctx, env) {
    this.ctx = ctx
    this.env = env
  }
}

/** An object passed by reference over Workers RPC; a plain object here. */
export class RpcTarget {}

/** The bindings of the Worker: none outside Workers. */
export const env = {}
