// The addon, and the operations it runs off the JavaScript thread. Each operation gets an id;
// the addon delivers its outcome to `settle` as an envelope ({ok: true, value} or {ok: false,
// kind, message}), which becomes the promise's value or error. While any operation is
// pending, one timer keeps the event loop alive (the addon's own handles do not); at exit,
// the addon cancels what runs and stops what it started.

import { ResumeError, SessionError } from './errors.js'

const addon = await import('../native.js').catch((error) => {
  throw new Error(
    `exec-host's addon is not built here: run \`npm ci && npm run build\` in the package's folder (js/ of a clone) (${error.message})`,
    { cause: error },
  )
})

const pending = new Map()
let lastId = 0
// Referenced only while something is pending.
const keepAlive = setInterval(() => {}, 1 << 30)
keepAlive.unref()

addon.init(settle)

function settle(id, text) {
  const operation = pending.get(id)
  if (operation === undefined) return
  pending.delete(id)
  if (pending.size === 0) keepAlive.unref()
  operation.signal?.removeEventListener('abort', operation.onAbort)
  const envelope = JSON.parse(text)
  if (envelope.ok) operation.resolve(envelope.value)
  else operation.reject(faultError(envelope, operation.signal))
}

// Exiting with Execs in flight: they are aborted, and their commands and servers stopped.
process.once('exit', () => addon.shutdown(200))

function nextId() {
  do lastId = lastId >= 0xffffffff ? 1 : lastId + 1
  while (pending.has(lastId))
  return lastId
}

/** Starts `start(id)` and gives the promise of its outcome; `signal` cancels it. */
export function operation(start, signal) {
  if (signal?.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    const id = nextId()
    const entry = { resolve, reject, signal, onAbort: undefined }
    if (signal) {
      entry.onAbort = () => addon.cancel(id)
      signal.addEventListener('abort', entry.onAbort, { once: true })
    }
    pending.set(id, entry)
    if (pending.size === 1) keepAlive.ref()
    try {
      start(id)
    } catch (error) {
      // The addon refused the call itself (a value of the wrong type): nothing was started.
      pending.delete(id)
      if (pending.size === 0) keepAlive.unref()
      if (signal) signal.removeEventListener('abort', entry.onAbort)
      reject(new TypeError(error.message))
      return
    }
    // A short operation's outcome, caught by a brief spin of this thread (the addon decides
    // when), spares the event loop's wake-up.
    const text = addon.awaitBriefly(id)
    if (text != null) settle(id, text)
  })
}

/** The value of an envelope a method answered at once, or its error thrown. */
export function unwrap(text) {
  const envelope = JSON.parse(text)
  if (envelope.ok) return envelope.value
  throw faultError(envelope)
}

function faultError(envelope, signal) {
  switch (envelope.kind) {
    case 'aborted':
      return signal?.reason ?? new DOMException('the operation was aborted', 'AbortError')
    case 'resume':
      return new ResumeError(envelope.message)
    case 'invalid':
      return new TypeError(envelope.message)
    default:
      return new SessionError(envelope.message)
  }
}

export const { NativeSession, settleCall, MAX_VALUE_BYTES, privateStore: nativePrivateStore } = addon
