// Module resolution hooks that give `cloudflare:workers` the shim beside this file.
const shim = new URL('./workers-shim.js', import.meta.url).href

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'cloudflare:workers') return { url: shim, shortCircuit: true }
  return nextResolve(specifier, context)
}
