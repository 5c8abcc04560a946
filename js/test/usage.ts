// Type-checked by types.test.mjs (never run): the declarations describe the API as used.
import { generateText, tool as aiTool } from 'ai'
import { z } from 'zod'
import { codeMode } from 'exec-host/ai'
import { ExecHostExecutor } from 'exec-host/codemode'
import { type ExecResult, ResumeError, Session, tool } from 'exec-host'

const add = tool({
  name: 'add',
  description: 'Adds.',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  readOnly: true,
  execute: ({ a, b }: { a: number; b: number }, { execId, signal }) => (signal.aborted ? 0 : a + b + (execId ? 0 : 0)),
})

export async function main(): Promise<void> {
  const session = await Session.open({
    tools: [add],
    limits: { budgetMs: 1000, maxNestedWaitMs: 5000 },
    approver: async (request) => (request.tool === 'add' ? 'once' : { deny: 'no' }),
    inputHandler: () => 'decline',
  })
  const result: ExecResult = await session.exec('return await tools.add({a: 1, b: 2})', { signal: AbortSignal.timeout(1000) })
  if (result.paused) await session.resume(result.paused.handle, { approve: 'all', deny: { 1: 'no' } })
  const found: string = session.search('add')[0].signature
  const turn = await session.call({ id: 't1', name: 'Exec', input: { code: 'return 1' } })
  console.log(found, turn.results[0].ok, session.declaration().inputSchema, session.permissionMode, ResumeError.name)
  await session.close()

  const weather = aiTool({ description: 'Weather.', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => city })
  const code = await codeMode({ tools: { weather }, toolApproval: { weather: 'user-approval' } })
  type Model = Parameters<typeof generateText>[0]['model']
  const model = null as unknown as Model
  await generateText({ model, tools: code.tools, toolApproval: code.toolApproval, prompt: 'x' })
  await code.close()

  const executor = new ExecHostExecutor({ timeout: 1000 })
  const executed = await executor.execute('async () => 1', [{ name: 'codemode', fns: {} }])
  console.log(executed.error ?? executed.result)
}
