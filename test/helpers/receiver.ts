import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a webhook receiver saw: one entry per request, in arrival order. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the whole body had arrived. */
  at: number;
  /** The parsed body. */
  json: any;
}

export type Responder = (r: Received, res: ServerResponse) => void | Promise<void>;

/** A real HTTP webhook receiver on 127.0.0.1 (a random port). `respond` decides each answer (default 204). */
export interface Receiver {
  url: string;
  received: Received[];
  respond: Responder;
  /** Resolves once `n` requests have arrived (rejects after timeoutMs). */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(respond: Responder = (_r, res) => void res.writeHead(204).end()): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const r: Receiver = {
    url: '',
    received,
    respond,
    async waitFor(n, timeoutMs = 10_000) {
      if (received.length >= n) return;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver: ${received.length} of ${n} requests after ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {}
      const entry = { headers: req.headers, body, at: Date.now(), json };
      received.push(entry);
      for (const w of [...waiters]) {
        if (received.length >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
      Promise.resolve(r.respond(entry, res)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return r;
}
