#!/usr/bin/env node
// Runs the `exec-host:sandbox` conformance cases (../README.md) against the guest
// component, transpiled by jco, on Node.js: a second host for the WIT world, independent
// of the Rust one.
//
//   node run.mjs [--guest FILE.wasm] [--cases DIR] [NAME...]
//
// --guest  the component (default: ../../host/artefacts/exec-guest.wasm)
// --cases  the directory of NAME.js + NAME.json (default: ../cases); the run options'
//          defaults are DIR/../defaults.json, or ../defaults.json when DIR has none
// NAME...  run only these cases (default: all)
//
// Prints one line per case (PASS / FAIL / SKIP), what differs for each failure, and a
// count; exits 1 when a case fails or none ran, 2 on a usage error.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadGuest, resultOf } from './guest.mjs';
import { makeHost } from './host.mjs';
import { brief, differences } from './json.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// The `run-options` record: WIT field name → jco's field name, and whether it is a u64
// (a BigInt in jco), a u32 (a Number) or a string.
const RUN_OPTIONS = {
  'heap-bytes': { field: 'heapBytes', u64: true },
  'stack-bytes': { field: 'stackBytes', u64: false },
  'argument-bytes': { field: 'argumentBytes', u64: true },
  'argument-depth': { field: 'argumentDepth', u64: false },
  'log-line-chars': { field: 'logLineChars', u64: false },
  'random-seed': { field: 'randomSeed', u64: true },
  'time-zone': { field: 'timeZone', string: true },
};

async function main() {
  let args;
  try {
    args = parseArgs({
      options: {
        guest: { type: 'string' },
        cases: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
  } catch (e) {
    return usage(e.message);
  }
  if (args.values.help) return usage();
  const guestPath = resolve(args.values.guest ?? join(here, '../../host/artefacts/exec-guest.wasm'));
  const casesDir = resolve(args.values.cases ?? join(here, '../cases'));
  if (!existsSync(guestPath)) return usage(`no guest at ${guestPath}`);
  if (!existsSync(casesDir)) return usage(`no cases directory at ${casesDir}`);

  const defaultsPath = [join(casesDir, '../defaults.json'), join(here, '../defaults.json')].find(existsSync);
  if (!defaultsPath) return usage(`no defaults.json next to ${casesDir} or to this script`);
  const defaults = JSON.parse(readFileSync(defaultsPath, 'utf8'));

  let names = readdirSync(casesDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => basename(f, '.json'))
    .sort();
  if (args.positionals.length > 0) {
    const unknown = args.positionals.filter((n) => !names.includes(n));
    if (unknown.length > 0) return usage(`no such case in ${casesDir}: ${unknown.join(', ')}`);
    names = names.filter((n) => args.positionals.includes(n));
  }

  const started = performance.now();
  const guest = await loadGuest(guestPath, join(here, 'build'));
  const transpiled = performance.now();
  console.log(
    `guest ${guestPath} (sha256 ${guest.sha256.slice(0, 12)}), transpiled by jco ${guest.jcoVersion} ` +
      `in ${seconds(transpiled - started)}`,
  );
  console.log(`cases ${casesDir}, defaults ${defaultsPath}`);

  const counts = { pass: 0, fail: 0, skip: 0 };
  for (const name of names) {
    const report = runCase(guest, casesDir, name, defaults);
    counts[report.status]++;
    if (report.status === 'pass') console.log(`PASS ${name}`);
    else if (report.status === 'skip') console.log(`SKIP ${name} (${report.why})`);
    else {
      console.log(`FAIL ${name}`);
      for (const line of report.lines) console.log(`    ${line}`);
    }
  }

  const total = performance.now() - started;
  console.log(
    `${counts.pass} passed, ${counts.fail} failed, ${counts.skip} skipped, of ${names.length} cases ` +
      `(${seconds(total)}, of which transpiling ${seconds(transpiled - started)})`,
  );
  if (counts.pass + counts.fail === 0) console.log('no case ran');
  return counts.fail > 0 || counts.pass + counts.fail === 0 ? 1 : 0;
}

/**
 * Runs case `name` on a fresh instance of the guest and compares it with its `expect`.
 * Returns `{ status: 'pass' }`, `{ status: 'skip', why }` or `{ status: 'fail', lines }`.
 */
function runCase(guest, casesDir, name, defaults) {
  let data, script, options;
  try {
    data = JSON.parse(readFileSync(join(casesDir, `${name}.json`), 'utf8'));
    script = readFileSync(join(casesDir, `${name}.js`), 'utf8');
    // A case with `host` limits checks how a host ends or refuses a script; this host
    // enforces no limits, so it passes such a case over (as the case format says).
    if (data.host !== undefined) return { status: 'skip', why: 'needs host limits' };
    checkAnswers(data);
    options = runOptions({ ...defaults, ...data.options });
  } catch (e) {
    return { status: 'fail', lines: [`bad case: ${e.message}`] };
  }

  const { imports, events } = makeHost(data);
  let outcome;
  try {
    const instance = guest.instantiate(imports);
    instance.init();
    outcome = { returned: instance.run(script, data.tools ?? [], options) };
  } catch (e) {
    outcome = { threw: e };
  }
  let result;
  try {
    result = resultOf(outcome);
  } catch (e) {
    result = { kind: 'bad-json', detail: `run returned text that is not JSON: ${e.message}` };
  }
  const { detail, ...compared } = result;

  if (data.expect === undefined) {
    return {
      status: 'fail',
      lines: [
        'no "expect" in the case (not blessed yet); this host got:',
        `  events: ${brief(events, 2000)}`,
        `  result: ${brief(compared, 2000)}`,
        ...(detail ? [`  (${detail})`] : []),
      ],
    };
  }
  const expectedResult = data.expect.result;
  const diffs = differences(data.expect.events ?? [], events, 'events');
  if (expectedResult?.kind !== compared.kind) {
    // A different kind of ending: the whole results say more than their fields do.
    diffs.push({ path: 'result', expected: expectedResult, got: compared });
  } else {
    diffs.push(...differences(expectedResult, compared, 'result'));
  }
  if (diffs.length === 0) return { status: 'pass' };
  const lines = diffs.map((d) => `${d.path}: expected ${brief(d.expected)}, got ${brief(d.got)}`);
  if (events.length !== (data.expect.events ?? []).length) {
    lines.push(`(expected ${(data.expect.events ?? []).length} events, got ${events.length})`);
  }
  if (detail) lines.push(`(${compared.kind}: ${detail})`);
  return { status: 'fail', lines };
}

/** jco's `run-options` record from the options by WIT name (defaults already merged). */
function runOptions(byWitName) {
  const record = {};
  for (const [name, value] of Object.entries(byWitName)) {
    const spec = RUN_OPTIONS[name];
    if (!spec) throw new Error(`unknown run option "${name}"`);
    if (spec.string) {
      if (typeof value !== 'string') throw new Error(`run option "${name}" is not a string: ${JSON.stringify(value)}`);
      record[spec.field] = value;
      continue;
    }
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new Error(`run option "${name}" is not a non-negative integer: ${JSON.stringify(value)}`);
    }
    record[spec.field] = spec.u64 ? BigInt(value) : value;
  }
  const missing = Object.keys(RUN_OPTIONS).filter((n) => !(RUN_OPTIONS[n].field in record));
  if (missing.length > 0) throw new Error(`run options missing: ${missing.join(', ')}`);
  return record;
}

/** Rejects answers the host could not give, before the guest meets them. */
function checkAnswers(data) {
  for (const a of data.answers ?? []) {
    const kinds = ['value', 'text', 'error', 'never'].filter((k) => k in a);
    if (typeof a.tool !== 'string' || kinds.length !== 1) {
      throw new Error(`an answer needs a "tool" and one of value/text/error/never: ${JSON.stringify(a)}`);
    }
    if (a.after_ms !== undefined && !(Number.isSafeInteger(a.after_ms) && a.after_ms >= 0)) {
      throw new Error(`"after_ms" is not a non-negative integer: ${JSON.stringify(a)}`);
    }
  }
  for (const s of data.searches ?? []) {
    if (['ok', 'error'].filter((k) => k in s).length !== 1) {
      throw new Error(`a search answer needs one of ok/error: ${JSON.stringify(s)}`);
    }
  }
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}

function usage(problem) {
  const text = 'usage: node run.mjs [--guest FILE.wasm] [--cases DIR] [NAME...]';
  if (problem) {
    console.error(`${problem}\n${text}`);
    return 2;
  }
  console.log(text);
  return 0;
}

// Piped into `head` and the like: stop quietly once the reader has gone.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 1);
  throw e;
});
process.exitCode = await main();
