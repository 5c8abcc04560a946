// The guest component, transpiled by jco and instantiated once per case.
//
// `jco transpile` turns a component into a JavaScript module plus its core WebAssembly
// modules. In `instantiation: 'sync'` mode the module exports `instantiate(getCoreModule,
// imports)`, which builds a new, independent instance of the whole component from the
// import object it is given, synchronously. So each case gets a fresh guest with its own
// host imports, while the core modules (1.6 MB of QuickJS) are compiled only once.

import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { transpile } from '@bytecodealliance/jco';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';

/**
 * Transpiles the component in `wasmPath` into `buildDir` and loads it.
 *
 * Returns `{ instantiate(hostImports), sha256, jcoVersion }`: `instantiate` makes a
 * fresh instance whose `exec-host:sandbox` imports are `hostImports` and whose WASI
 * imports come from preview2-shim; `sha256` is the guest file's digest.
 */
export async function loadGuest(wasmPath, buildDir) {
  const bytes = readFileSync(wasmPath);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const { files } = await transpile(bytes, {
    name: 'guest',
    instantiation: 'sync',
    noTypescript: false, // the .d.ts files document the JS shapes of every WIT type
    quiet: true,
  });

  // Written out so the generated bindings can be imported, and read when debugging
  // (`guest.js`, `guest.d.ts`, `interfaces/*.d.ts`). One directory per guest, so two
  // runs on different guests do not write over each other's files.
  const outDir = join(buildDir, sha256.slice(0, 16));
  for (const [name, data] of Object.entries(files)) {
    const path = join(outDir, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, data);
  }
  const { instantiate } = await import(pathToFileURL(join(outDir, 'guest.js')).href);

  // Compile each core module once; every instance shares the compiled code.
  const modules = new Map();
  const getCoreModule = (name) => {
    if (!modules.has(name)) modules.set(name, new WebAssembly.Module(files[name]));
    return modules.get(name);
  };

  return {
    sha256,
    jcoVersion: jcoVersion(),
    instantiate: (hostImports) => instantiate(getCoreModule, { ...wasiImports(), ...hostImports }),
  };
}

/** The version of jco in use, from its package.json (which its `exports` do not list). */
function jcoVersion() {
  // createRequire rather than import.meta.resolve, which early Node 20 releases hide
  // behind a flag. The entry point is dist/api.js, next to which is ../package.json.
  const api = createRequire(import.meta.url).resolve('@bytecodealliance/jco');
  return JSON.parse(readFileSync(join(dirname(api), '../package.json'), 'utf8')).version;
}

/**
 * WASI for the guest, as the Rust host gives it (a default `WasiCtx`): no environment
 * variables, no arguments beyond the program name, real seeds; stderr goes to this
 * process's stderr (the guest writes there only when it panics). The host's imports
 * replace the wall clock with one that follows the run's virtual time (host.mjs).
 */
function wasiImports() {
  const wasi = new WASIShim({ sandbox: { env: {}, args: ['exec-guest'] } }).getImportObject();
  // preview2-shim's `exit` ends this Node process; a guest that exits ends its own run
  // only, as a trap.
  wasi['wasi:cli/exit'] = {
    exit(status) {
      throw new Error(`the guest called wasi:cli/exit (${status?.tag ?? status})`);
    },
  };
  return wasi;
}

/**
 * `run`'s result in the case format (`expect.result`), from what jco's `run` returned
 * or threw.
 *
 * jco returns the `ok` side of the top-level `result<option<string>, script-error>`:
 * the JSON text, or `undefined` for `none`. It throws a `ComponentError` for `err`, whose
 * `payload` is the `script-error` variant: `{ tag: 'syntax', val: { message, position,
 * unclosed } }` (`position` is `undefined` for `none`), `{ tag: 'thrown', val: { error,
 * frames } }` (each frame `{ function, position: { line, column } }`), the same for
 * `unserializable`, or `{ tag: 'never-settles' }` (no payload). Any other exception is a trap (a WebAssembly
 * `RuntimeError`, a stack overflow `RangeError`, or an error thrown by a host import);
 * its text is kept in `detail`, which is printed but not compared.
 */
export function resultOf(outcome) {
  if ('returned' in outcome) {
    const json = outcome.returned;
    return json === undefined ? { kind: 'undefined' } : { kind: 'value', value: JSON.parse(json) };
  }
  const e = outcome.threw;
  const payload = e !== null && typeof e === 'object' && Object.hasOwn(e, 'payload') ? e.payload : undefined;
  if (payload && typeof payload.tag === 'string') {
    if (payload.tag === 'never-settles') return { kind: 'never-settles' };
    if (payload.tag === 'syntax') return syntaxResult(payload.val);
    return uncaughtResult(payload.tag, payload.val);
  }
  return { kind: 'trap', detail: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
}

/** A `syntax-error` record in the case format: its position flat, `unclosed` only when set. */
function syntaxResult({ message, position, unclosed }) {
  const result = { kind: 'syntax', message };
  if (position !== undefined) {
    result.line = position.line;
    result.column = position.column;
  }
  if (unclosed) result.unclosed = true;
  return result;
}

/** An `uncaught` record in the case format: its frames flat. */
function uncaughtResult(kind, { error, frames }) {
  return {
    kind,
    error,
    frames: frames.map((frame) => ({ function: frame.function, line: frame.position.line, column: frame.position.column })),
  };
}
