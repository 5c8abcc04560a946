// The TypeScript declarations type-check as a user's program uses them (test/usage.ts).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

const here = dirname(fileURLToPath(import.meta.url))

test('the declarations type-check against a program that uses them', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const checked = spawnSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json')], { encoding: 'utf8' })
  assert.equal(checked.status, 0, checked.stdout + checked.stderr)
})
