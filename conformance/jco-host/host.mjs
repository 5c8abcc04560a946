// The exec-host side of one run: the four `exec-host:sandbox` interfaces the guest
// imports (`tools`, `tool-search`, `console`, `state`), answered from a case's scripted
// `answers`, `searches` and `stored` values, on a VIRTUAL clock, recording the events the case compares; and the
// guest's wall clock, which follows the virtual one.
//
// The host is synchronous, as the WIT is: `wait-next` is a blocking import, and here it
// never blocks for real. The clock `now` (milliseconds, from 0) only moves in
// `wait-next`, which jumps it to the next thing due. So a case that races a 60 ms call
// against a 10 ms `setTimeout` runs in no time and always in the same order.
//
// Values cross in jco's representation (see the generated `interfaces/*.d.ts`):
// - a variant or a `result` inside a value is `{ tag, val }` (`{ tag }` for a case
//   without payload); an enum is its case name as a string ('log', 'warn', ...);
// - an import whose own return type is `result<T, E>` (`search`, `start-timer`) may
//   return `{ tag: 'ok' | 'err', val }` explicitly; jco also takes a plain return as
//   `ok` and a throw as `err` (the thrown value's `payload`, or the thrown value itself
//   when it is not an Error; an Error without `payload` is a trap). This host always
//   returns the explicit form, so an `ok` payload can never be mistaken for a result;
// - u32 is a Number, u64 a BigInt (`cut-units`);
// - an `option<string>` is the string or `undefined`.
// A JavaScript exception thrown from an import that does not return a `result`
// (`wait-next` here) is a trap: it unwinds out of the guest and ends the run.

import { jsonEqual } from './json.mjs';

const ok = (val) => ({ tag: 'ok', val });
const err = (val) => ({ tag: 'err', val });

/**
 * Keeps a script that never ends (a timer that re-arms itself for ever) from hanging the
 * runner: more `wait-next` calls than this in one run end it as a trap.
 */
const MAX_WAITS = 100_000;

/**
 * Makes the imports for one run of `caseData` (a parsed `NAME.json`).
 *
 * Returns `{ imports, events }`: `imports` maps the interface names, as jco's
 * instantiation mode looks them up (without the `@version`), to their functions, and
 * replaces preview2-shim's `wasi:clocks/wall-clock`; `events` fills up with the case's
 * events as the guest calls the imports.
 */
export function makeHost(caseData) {
  const events = [];
  // Answers still available; a `once` answer leaves this list when it is used.
  const answers = [...(caseData.answers ?? [])];
  const searches = [...(caseData.searches ?? [])];

  let now = 0; // virtual milliseconds since the run started
  let seq = 0; // start order of calls and timers, to break ties between equal due times
  let nextCallId = 1;
  let nextTimerId = 1;
  let waits = 0;
  // Started calls not yet yielded: { id, due, seq, outcome }; `due` is Infinity for a
  // call answered `never`.
  const calls = [];
  // Pending timers: { id, due, seq }.
  const timers = [];

  // `tools.call`: records the event, then answers at once (`done`)
  // or later (`pending`, yielded by `wait-next` when due).
  function call(name, argsJson) {
    const args = parseArgs(argsJson);
    events.push({ call: name, args });
    const answer = take(answers, (a) => a.tool === name, args);
    if (!answer) return { tag: 'done', val: err(`no answer is scripted for ${name}`) };
    if (answer.never === true) {
      const id = nextCallId++;
      calls.push({ id, due: Infinity, seq: seq++, outcome: null });
      return { tag: 'pending', val: id };
    }
    const outcome = toolOutcome(answer);
    if (answer.after_ms !== undefined) {
      const id = nextCallId++;
      calls.push({ id, due: now + answer.after_ms, seq: seq++, outcome });
      return { tag: 'pending', val: id };
    }
    return { tag: 'done', val: outcome };
  }

  // `tools.cancel-call`: the call still finishes, now, with the error of its cancellation
  // (yielded by `wait-next` like any finished call); an unknown or finished id is ignored.
  function cancelCall(id) {
    const call = calls.find((c) => c.id === id);
    if (call) {
      call.due = now;
      call.outcome = err('the call was cancelled by the script');
    }
  }

  function startTimer(delayMs) {
    // This host sets no bound on pending timers (that is a `host` limit), so never `err`.
    const id = nextTimerId++;
    timers.push({ id, due: now + delayMs, seq: seq++ });
    return ok(id);
  }

  function cancelTimer(id) {
    const i = timers.findIndex((t) => t.id === id);
    if (i >= 0) timers.splice(i, 1); // an unknown (or already yielded) id is ignored
  }

  function waitNext() {
    if (calls.length === 0 && timers.length === 0) return [];
    let next = Infinity;
    for (const x of [...calls, ...timers]) next = Math.min(next, x.due);
    if (next === Infinity) {
      // Only calls answered `never` are in flight: a real host would block until its
      // budget ends the run. This host has no budget, so it ends the run as a trap.
      throw new Error('wait-next would block for ever: only calls answered `never` are in flight');
    }
    if (++waits > MAX_WAITS) {
      throw new Error(`wait-next called more than ${MAX_WAITS} times: the script does not end`);
    }
    now = Math.max(now, next);
    const byDue = (a, b) => a.due - b.due || a.seq - b.seq;
    const dueCalls = calls.filter((c) => c.due <= now).sort(byDue);
    const dueTimers = timers.filter((t) => t.due <= now).sort(byDue);
    for (const c of dueCalls) calls.splice(calls.indexOf(c), 1);
    for (const t of dueTimers) timers.splice(timers.indexOf(t), 1);
    return [
      ...dueCalls.map((c) => ({ tag: 'call', val: { id: c.id, outcome: c.outcome } })),
      ...dueTimers.map((t) => ({ tag: 'timer', val: t.id })),
    ];
  }

  function search(argsJson) {
    const args = parseArgs(argsJson);
    events.push({ search: args });
    const answer = take(searches, () => true, args);
    if (!answer) return err('no answer is scripted for the search');
    if ('ok' in answer) return ok(JSON.stringify(answer.ok));
    if ('error' in answer) return err(String(answer.error));
    throw new Error(`a search answer has neither "ok" nor "error": ${JSON.stringify(answer)}`);
  }

  // The cases check the engine's own messages, so no call is named (`none`), as the Rust
  // host's scripted tools answer too.
  function explainNotAFunction(_line, _column) {
    return undefined;
  }

  function write(level, message, cutUnits) {
    const event = { console: level, message };
    if (cutUnits !== 0n) event.cut_units = Number(cutUnits);
    events.push(event);
  }

  // `state`: the conversation's kept values, JSON text by key, starting from the case's
  // `stored`. This host sets no bounds on them (those are a host's own).
  const kept = new Map(Object.entries(caseData.stored ?? {}).map(([key, value]) => [key, JSON.stringify(value)]));

  function load(key) {
    events.push({ load: key });
    return ok(kept.get(key));
  }

  function store(key, valueJson) {
    if (valueJson === undefined) {
      events.push({ store: key });
      kept.delete(key);
    } else {
      events.push({ store: key, value: parseArgs(valueJson) });
      kept.set(key, valueJson);
    }
    return ok(undefined);
  }

  // `wasi:clocks/wall-clock`, which the guest reads for `Date.now()`: the real time
  // plus the virtual time that has passed, so that a script that measures a timer sees
  // it take (at least) its delay, while time the script spends computing still counts.
  const wallClock = {
    now() {
      const ms = Date.now() + now;
      return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1_000_000 };
    },
    resolution() {
      return { seconds: 0n, nanoseconds: 1_000_000 };
    },
  };

  const tools = {
    call,
    cancelCall,
    startTimer,
    cancelTimer,
    waitNext,
  };

  return {
    events,
    imports: {
      'exec-host:sandbox/tools': tools,
      'exec-host:sandbox/tool-search': { search, explainNotAFunction },
      'exec-host:sandbox/console': { write },
      'exec-host:sandbox/state': { load, store },
      'wasi:clocks/wall-clock': wallClock,
    },
  };
}

/**
 * The first entry of `list` that `fits` and whose `args`, when it has them, equal `args`
 * as JSON values. A `once` entry is removed from `list` when it is taken.
 */
function take(list, fits, args) {
  const i = list.findIndex((a) => fits(a) && (a.args === undefined || jsonEqual(a.args, args)));
  if (i < 0) return undefined;
  const answer = list[i];
  if (answer.once === true) list.splice(i, 1);
  return answer;
}

/** What a scripted answer gives the script: `result<tool-value, string>`. */
function toolOutcome(answer) {
  if ('value' in answer) return ok({ tag: 'json', val: JSON.stringify(answer.value) });
  if ('text' in answer) return ok({ tag: 'text', val: String(answer.text) });
  if ('error' in answer) return err(String(answer.error));
  throw new Error(`an answer has none of "value", "text", "error": ${JSON.stringify(answer)}`);
}

/** `args-json` parsed; when it is not JSON, the raw text in an object no answer matches. */
function parseArgs(argsJson) {
  try {
    return JSON.parse(argsJson);
  } catch {
    return { 'unparsable args-json': argsJson };
  }
}
