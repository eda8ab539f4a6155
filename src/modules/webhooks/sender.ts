import https from 'node:https';
import { http } from '../../lib/node-http.ts';
import { checkDestination, DestinationRefused, pinnedLookup, type Resolver } from './destination.ts';

/** What one HTTP try gave: an answer (status, the first 1 KiB of its body) or an error; never throws. */
export interface SendResult {
  status?: number;
  retryAfter?: string;
  /** At most RESPONSE_BODY_LIMIT bytes of the answer, decoded as UTF-8. */
  body?: string;
  error?: string;
  durationMs: number;
}

export const RESPONSE_BODY_LIMIT = 1024;

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  resolve?: Resolver;
}

/**
 * One POST. The destination is checked (resolved, every address vetted) right before connecting and
 * the socket goes to a checked address. Redirects are not followed (a 3xx is a failure); the whole try
 * (connect, headers, the first 1 KiB of the body) must fit in the timeout; the rest of the body is never read.
 */
export async function send(url: string, headers: Record<string, string>, body: string, opts: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { error: 'invalid URL', durationMs: elapsed() };
  }
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await checkDestination(target, opts.allowPrivate, opts.resolve);
  } catch (err) {
    return { error: err instanceof DestinationRefused ? err.message : `destination check failed: ${(err as Error).message}`, durationMs: elapsed() };
  }
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<SendResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, durationMs: elapsed() });
    };
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinnedLookup(addresses),
        // A fresh connection per try: a pooled one could outlive the check of the address it was opened to.
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
        const done = () => {
          const text = Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8');
          finish({ status: res.statusCode, ...(retryAfter !== undefined ? { retryAfter } : {}), body: text });
          res.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= RESPONSE_BODY_LIMIT) done(); // enough: the rest is neither read nor stored
        });
        res.on('end', done);
        res.on('error', done);
        res.on('close', done);
      },
    );
    const timer = setTimeout(() => {
      finish({ error: `timeout: no answer within ${opts.timeoutMs / 1000} s` });
      req.destroy();
    }, opts.timeoutMs);
    req.on('error', (err: Error & { code?: string }) => finish({ error: `${err.code ?? 'ERROR'}: ${err.message}`.slice(0, 500) }));
    req.end(body);
  });
}
