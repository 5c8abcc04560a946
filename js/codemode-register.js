// `node --import exec-host/codemode/register`: lets `@cloudflare/codemode` load outside
// Workers by resolving its `cloudflare:workers` imports to a shim of the classes it extends.
import { register } from 'node:module'

register('./lib/workers-hooks.js', import.meta.url)
