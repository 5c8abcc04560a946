// The Worker that drives @cloudflare/codemode's own executor (DynamicWorkerExecutor over the
// Worker Loader) for the benchmark: POST {code, n, concurrent} runs the code n times (one
// after another, or all at once) and answers the results. Bundled by peers.mjs with esbuild.
import { DynamicWorkerExecutor } from '@cloudflare/codemode'

const fns = { add: async ({ a, b }) => ({ sum: a + b }) }

export default {
  async fetch(request, env) {
    const { code, n, concurrent } = await request.json()
    const executor = new DynamicWorkerExecutor({ loader: env.LOADER })
    const run = () => executor.execute(code, [{ name: 'codemode', fns }])
    const results = concurrent
      ? await Promise.all(Array.from({ length: n }, run))
      : await (async () => {
          const out = []
          for (let i = 0; i < n; i++) out.push(await run())
          return out
        })()
    return Response.json(results.map((result) => result.error ?? result.result))
  },
}
