import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { createLogger, logCompletion } from '../src/http/request-logger.ts';
import { logDestination, prettyLogs } from '../src/lib/log-output.ts';
import { describeEachStore, warehouseBody, whileWarehouseListFails } from './helpers/app.ts';

/** Sends raw bytes (what fetch would refuse to send) and returns the whole answer. */
function rawRequest(base: string, text: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let answer = '';
    socket.on('data', (d) => {
      answer += d.toString();
    });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describeEachStore(
  'logs never contain secrets',
  (ctx) => {
    test('client secrets, access tokens and Authorization headers appear in no log line', async () => {
      const t = ctx();
      const m = await t.merchant();
      const token = await t.token(m);
      // Exercise every way a secret reaches the service, successful and failing.
      await t.request({
        method: 'POST',
        url: '/auth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=client_credentials&client_id=${m.clientId}&client_secret=${m.clientSecret}`,
      });
      await t.request({
        method: 'POST',
        url: '/auth/token',
        headers: { authorization: `Basic ${Buffer.from(`${m.clientId}:${m.clientSecret}`).toString('base64')}` },
        payload: { grant_type: 'client_credentials' },
      });
      await t.request({
        method: 'POST',
        url: '/auth/token',
        payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: `${m.clientSecret}x` },
      });
      await t.as(token, { method: 'POST', url: '/warehouses', payload: warehouseBody() });
      await t.as(token, { method: 'GET', url: '/warehouses?limit=0' });
      await t.as(`${token}x`, { method: 'GET', url: '/warehouses' });
      await whileWarehouseListFails(t, 'boom', () => t.as(token, { method: 'GET', url: '/warehouses' }));

      // Over real sockets: a secret in the query string (a client mistake), and headers too large for
      // Node's parser (its raw bytes, Authorization included, must not be logged either).
      const base = await t.listen();
      await fetch(`${base}/auth/token?grant_type=client_credentials&client_id=${m.clientId}&client_secret=${m.clientSecret}`, { method: 'POST' });
      await fetch(`${base}/warehouses?access_token=${token}`);
      const overflow = await rawRequest(base, `GET /warehouses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`);
      assert.match(overflow, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      assert.match(overflow, /\r\nContent-Type: application\/problem\+json; charset=utf-8\r\n/);
      assert.match(overflow, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
      const problem = JSON.parse(overflow.slice(overflow.indexOf('\r\n\r\n') + 4));
      assert.deepEqual(
        { ...problem, requestId: '' },
        {
          type: 'HEADERS_TOO_LARGE',
          title: 'Request headers too large',
          status: 431,
          detail: 'The request headers are larger than the limit',
          requestId: '',
        },
      );

      const all = t.logs.join('\n');
      assert.ok(t.logs.length > 10, 'trace logging captured the requests');
      const [, payload, signature] = token.split('.');
      for (const secret of [m.clientSecret, token, payload, signature, Buffer.from(`${m.clientId}:${m.clientSecret}`).toString('base64')]) {
        assert.equal(all.includes(secret), false, `a secret leaked into the logs: ${secret.slice(0, 8)}…`);
      }
      assert.doesNotMatch(all, /Bearer /i);
    });
  },
  { LOG_LEVEL: 'trace' },
);

for (const level of ['warn', 'info'] as const) {
  describeEachStore(
    `request log lines carry their request id (LOG_LEVEL=${level})`,
    (ctx) => {
      test('a request writes its lines with its reqId, and only at enabled levels', async () => {
        const t = ctx();
        const m = await t.merchant();
        const token = await t.token(m);
        const linesOf = (id: string) => t.logs.map((l) => JSON.parse(l)).filter((l) => l.reqId === id);

        const ok = await t.as(token, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'quiet-one' } });
        assert.equal(ok.statusCode, 200);
        // At info, Fastify's "incoming request" and "request completed"; at warn, nothing at all.
        assert.deepEqual(
          linesOf('quiet-one').map((l) => l.msg),
          level === 'info' ? ['incoming request', 'request completed'] : [],
        );
        if (level === 'info') {
          const [incoming, completed] = linesOf('quiet-one');
          assert.deepEqual(incoming.req, { method: 'GET', url: '/warehouses', host: incoming.req.host, remoteAddress: incoming.req.remoteAddress });
          assert.equal(typeof incoming.req.host, 'string');
          assert.equal(typeof incoming.req.remoteAddress, 'string');
          assert.deepEqual(completed.res, { statusCode: 200 });
          assert.equal(typeof completed.responseTime, 'number');
        }

        // A request Fastify refuses before any hook runs (a bad %-escape) still logs with its request id, both lines.
        const badUrl = await t.as(token, { method: 'GET', url: '/warehouses/%zz', headers: { 'x-request-id': 'bad-url' } });
        assert.equal(badUrl.statusCode, 400);
        assert.equal(badUrl.headers['x-request-id'], 'bad-url');
        assert.deepEqual(
          linesOf('bad-url').map((l) => l.msg),
          level === 'info' ? ['incoming request', 'request completed'] : [],
        );
        if (level === 'info') {
          const completed = linesOf('bad-url')[1];
          assert.deepEqual(completed.res, { statusCode: 400 });
          assert.ok(typeof completed.responseTime === 'number' && completed.responseTime >= 0, JSON.stringify(completed));
        }

        const failed = await whileWarehouseListFails(t, 'boom', () =>
          t.as(token, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'loud-one' } }),
        );
        assert.equal(failed.statusCode, 500);
        const failedLines = linesOf('loud-one');
        const errors = failedLines.filter((l) => l.level >= 50);
        assert.ok(errors.length >= 1, 'the failure is logged at error with its request id');
        assert.ok(errors.some((l) => l.err?.message === 'boom'));
        if (level === 'warn')
          assert.ok(
            failedLines.every((l) => l.level >= 40),
            'nothing below warn is written',
          );
        else assert.equal(failedLines[0].msg, 'incoming request');
      });
    },
    { LOG_LEVEL: level },
  );
}

test('logs are pretty on a developer terminal (stdout a TTY, NODE_ENV development or unset) and JSON lines everywhere else', async () => {
  assert.equal(prettyLogs(true, undefined), true);
  assert.equal(prettyLogs(true, ''), true);
  assert.equal(prettyLogs(true, 'development'), true);
  for (const env of ['production', 'test', 'staging']) assert.equal(prettyLogs(true, env), false, env);
  for (const env of [undefined, 'development', 'production']) {
    assert.equal(prettyLogs(false, env), false, `not a TTY, ${env}`);
    assert.equal(prettyLogs(undefined, env), false, `stdout closed or redirected, ${env}`);
  }
  assert.equal(await logDestination('development', false), undefined, 'JSON lines on plain stdout');
  assert.equal(await logDestination('production', true), undefined);
});

test('the pretty stream prints readable lines, with the same redaction as the JSON lines', async () => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d) => {
    text += d.toString();
  });
  const dest = await logDestination('development', true, out);
  assert.ok(dest, 'a pretty stream on a development TTY');
  const log = pino({ redact: { paths: ['req.headers.authorization'], censor: '[REDACTED]' } }, dest);
  log.info({ req: { headers: { authorization: 'Bearer secret-token-value' } } }, 'ready: http://127.0.0.1:3000');
  await new Promise((r) => setImmediate(r));
  assert.match(text, /INFO/);
  assert.match(text, /ready: http:\/\/127\.0\.0\.1:3000/);
  assert.doesNotMatch(text, /^\{/, 'not a JSON line');
  assert.doesNotMatch(text, /secret-token-value/);
  assert.match(text, /\[REDACTED\]/);
});

test('an answer refused before any hook is logged as Fastify logs the others: "request errored" with the error when its response fails', () => {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
  });
  const log = createLogger('info', stream);
  const answer = (statusCode: number) => {
    const raw = new EventEmitter();
    const reply = { raw, log, statusCode };
    logCompletion({ server: { log } } as never, reply as never);
    return raw;
  };
  const failed = answer(400);
  failed.emit('error', new Error('socket hung up'));
  failed.emit('finish'); // too late: the request already has its line
  answer(400).emit('finish');
  return new Promise<void>((resolve) =>
    setImmediate(() => {
      assert.deepEqual(
        lines.map(({ level, msg, res, err }) => ({ level, msg, res, err: (err as { message?: string } | undefined)?.message })),
        [
          { level: 50, msg: 'request errored', res: { statusCode: 400 }, err: 'socket hung up' },
          { level: 30, msg: 'request completed', res: { statusCode: 400 }, err: undefined },
        ],
      );
      assert.ok(lines.every((l) => typeof l.responseTime === 'number'));
      resolve();
    }),
  );
});
