/**
 * node:http for the service's own code. Not `import ... from 'node:http'`: importing it as an ES module
 * makes Node read every export for the module namespace, and its lazy WebSocket, CloseEvent and
 * MessageEvent load Node's bundled undici (about 8 MiB of RSS at start, never released; docs/benchmarks.md,
 * "Idle memory, second pass"). process.getBuiltinModule returns the same module without that.
 * Type-only imports of node:http are free and stay as they are.
 */
export const http = process.getBuiltinModule('node:http');
