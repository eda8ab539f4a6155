import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { styleText } from 'node:util';
import { MerchantDeliveryClient, MerchantDeliveryError, type RequestEvent, type ResponseEvent } from '../packages/sdk/src/index.ts';
import { formatMinor } from '../src/lib/money.ts';
import { freePort, runMds, type ServerChild, ServerStartError, startServer, stopCommands } from './lib/server-process.ts';

const OPENING_BALANCE = '5000';
const TOTAL_STEPS = 17;

const bold = (s: string) => styleText('bold', s);
const dim = (s: string) => styleText('dim', s);
const cyan = (s: string) => styleText('cyan', s);
const green = (s: string) => styleText('green', s);
const red = (s: string) => styleText('red', s);

// ---- masking: every secret we learn is registered, and every printed line is scrubbed of it ----

const secrets = new Set<string>();
const mask = (value: string): string => `${value.slice(0, 6)}…`;
function secret(value: string): string {
  if (value.length > 8) secrets.add(value);
  return value;
}
function scrub(text: string): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join(mask(s));
  return out;
}
const SECRET_FIELDS = new Set(['access_token', 'client_secret', 'clientSecret']);
function maskFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskFields);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELDS.has(k) && typeof v === 'string' ? mask(v) : maskFields(v)]));
  }
  return value;
}
const print = (text = '') => process.stdout.write(`${scrub(text)}\n`);
const indent = (text: string, by = '    ') =>
  text
    .split('\n')
    .map((l) => by + l)
    .join('\n');
const pretty = (body: unknown) => JSON.stringify(maskFields(body), null, 2);

let stepNo = 0;
function step(title: string, explain: string): void {
  stepNo++;
  print();
  print(bold(cyan(`Step ${stepNo}/${TOTAL_STEPS}: ${title}`)));
  print(dim(indent(explain, '  ')));
  print();
}

class StepFailed extends Error {}

// ---- the operator CLI ----

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  print(`${green('$')} mds ${args.map((a) => (/\s/.test(a) ? `"${a}"` : a)).join(' ')}`);
  const r = await runMds(args, env, 30_000);
  if (r.code !== 0) throw new StepFailed(`mds ${args[0]} ${args[1]} failed: ${r.stderr || `exit ${r.code}`}`);
  return r.stdout;
}

// ---- HTTP ----

const SHOWN_RESPONSE_HEADERS = ['content-type', 'location', 'link', 'cache-control', 'idempotent-replayed', 'x-request-id'];

interface Exchange {
  status: number;
  headers: Headers;
  body: any;
}

function printRequest(method: string, path: string, headers: Record<string, string>, body: unknown): void {
  print(`${bold('→')} ${bold(`${method} ${path}`)}`);
  for (const [name, value] of Object.entries(headers)) {
    if (name === 'accept' || name === 'user-agent') continue;
    print(dim(`    ${name}: ${value}`));
  }
  if (body !== undefined) print(indent(pretty(body)));
}

function printResponse(
  status: number,
  statusText: string,
  ok: boolean,
  ms: number,
  header: (name: string) => string | null,
  body: unknown,
  sameAs?: { what: string; body: unknown },
): void {
  const statusLine = `${status} ${statusText}`;
  print(`${bold('←')} ${ok ? green(statusLine) : red(statusLine)} ${dim(`(${ms.toFixed(0)} ms)`)}`);
  for (const name of SHOWN_RESPONSE_HEADERS) {
    const value = header(name);
    if (value !== null) print(dim(`    ${name}: ${value}`));
  }
  if (sameAs && JSON.stringify(body) === JSON.stringify(sameAs.body)) {
    print(indent(`{ …the same ${Object.keys(body as object).length} fields as ${sameAs.what}… }`));
  } else {
    print(indent(typeof body === 'string' ? body : pretty(body)));
  }
}

// ---- the merchant SDK: its debug hooks print every exchange (it masks tokens and secrets itself) ----

/** Set before an SDK call whose answer should be printed as "the same fields as ..." */
let sameAsNext: { what: string; body: unknown } | undefined;
/** The response headers of the SDK's last exchange (to show the idempotent replay). */
let lastSdkResponse: ResponseEvent | undefined;

function merchantSdk(base: string, clientId: string, clientSecret: string): MerchantDeliveryClient {
  return new MerchantDeliveryClient({
    baseUrl: base,
    clientId,
    clientSecret,
    onRequest: (e: RequestEvent) => {
      const url = new URL(e.url);
      printRequest(e.method, url.pathname + url.search, e.headers, e.body);
    },
    onResponse: (e: ResponseEvent) => {
      lastSdkResponse = e;
      printResponse(e.status, e.statusText, e.status < 400, e.durationMs, (name) => e.headers[name] ?? null, e.body, sameAsNext);
      sameAsNext = undefined;
    },
  });
}

/** An SDK call of a step: an error (after the SDK's own retries) fails the step. */
async function sdk<T>(what: string, promise: PromiseLike<T>): Promise<T> {
  try {
    return await promise;
  } catch (err) {
    if (err instanceof MerchantDeliveryError) throw new StepFailed(`${what}: ${err.message}`);
    throw err;
  }
}

async function call(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string>; expect: number; sameAs?: { what: string; body: unknown } },
): Promise<Exchange> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  Object.assign(headers, opts.headers);
  if (opts.body !== undefined) headers['content-type'] = 'application/json';

  printRequest(method, path, { ...headers, ...(opts.token ? { authorization: `Bearer ${mask(opts.token)}` } : {}) }, opts.body);

  const started = performance.now();
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const ms = performance.now() - started;
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: print as is
  }
  if (body && typeof body === 'object' && 'access_token' in body && typeof body.access_token === 'string') secret(body.access_token);

  const ok = res.status === opts.expect;
  printResponse(res.status, res.statusText, ok, ms, (name) => res.headers.get(name), body, opts.sameAs);
  if (!ok) throw new StepFailed(`${method} ${path}: expected ${opts.expect}, got ${res.status}`);
  return { status: res.status, headers: res.headers, body };
}

// ---- the walk-through ----

async function demo(tmp: string): Promise<void> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: `sqlite:${join(tmp, 'demo.sqlite')}`,
    SIGNING_KEYS_FILE: join(tmp, 'keys.json'),
  };
  // Whatever the caller's shell had, the demo uses its own keys file and database.
  delete env.TOKEN_SIGNING_KEYS;
  delete env.DATABASE_SCHEMA;

  print(bold('Merchant delivery service: a guided tour'));
  print(dim(`Throw-away database: ${env.DATABASE_URL}`));
  print(dim('Access tokens and client secrets are masked in this output (first 6 characters + …).'));

  step('Start the service', 'The operator runs `mds serve`. It creates the SQLite database, applies migrations and listens.');
  print(`${green('$')} PORT=${port} DATABASE_URL=${env.DATABASE_URL} mds serve &`);
  server = startServer({ env });
  const base = await server.ready;
  print(`Listening on ${base} (API docs at ${base}/docs)`);

  step('Create a merchant (operator CLI)', `The operator creates a merchant with an opening balance and gets its first credential set.`);
  const created = JSON.parse(await cli(['merchants', 'create', '--name', 'Demo shop', '--balance', OPENING_BALANCE, '--json'], env)) as {
    merchant: { id: string; balance: string; currency: string };
    clientId: string;
    clientSecret: string;
  };
  secret(created.clientSecret);
  print(indent(pretty(created)));
  const merchantId = created.merchant.id;

  step(
    'Exchange the client credentials for an access token',
    'OAuth 2.0 client credentials grant, made by the merchant SDK (packages/sdk): it caches the token, refreshes it before it expires\nand retries once on ACCESS_TOKEN_EXPIRED. The token is a bearer token valid for one hour.',
  );
  const mds = merchantSdk(base, created.clientId, secret(created.clientSecret));
  await sdk('POST /auth/token', mds.authenticate());

  step('Create a pickup warehouse', 'Every following request carries `Authorization: Bearer <token>` (the cached token); every POST an Idempotency-Key.');
  const warehouse = await sdk(
    'POST /warehouses',
    mds.warehouses.create({
      name: 'Demo shop warehouse',
      nameInt: 'demo-shop-warehouse',
      address: 'Tverskaya St 1, Moscow',
      contactPhone: '+7 495 000-00-00',
      contactEmail: 'warehouse@example.com',
      locationMetadata: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
    }),
  );

  step('List the warehouses', 'Only the warehouses of the merchant the token belongs to.');
  await sdk('GET /warehouses', mds.warehouses.list());

  step('Ask for delivery options (a quote)', 'Prices every delivery product for this parcel and destination; the quote is pending until `expiresAt`.');
  const destinationLocation = { lat: 55.7339, lng: 37.5886, display_name: 'Komsomolsky Ave 24, Moscow', city: 'Moscow' };
  const quote = await sdk(
    'POST /options',
    mds.quotes.create({
      warehouseId: warehouse.id,
      destinationLocation,
      parcelSize: 'SMALL',
      isFragile: false,
      isPerishable: false,
      deliveryType: 'DOOR_TO_DOOR',
    }),
  );
  const productKey = Object.keys(quote.products).find((k) => quote.products[k].status === 'AVAILABLE');
  if (!productKey) throw new StepFailed('the quote has no AVAILABLE product');

  step(
    'Create and pay the transfer',
    `Consumes the quote, charges the "${productKey}" price to the balance and creates the delivery, in one transaction.\nThe Idempotency-Key makes a retry safe: the same key and body replay the first answer.`,
  );
  const idempotencyKey = `demo-${randomUUID()}`;
  const transferBody = {
    matchmakingId: quote.id,
    productKey,
    description: 'Two books',
    recipientInfo: { firstName: 'Anna', lastName: 'Ivanova', phone: '+7 900 000-00-00' },
  };
  const transfer = await sdk('POST /transfer', mds.transfers.create(transferBody, { idempotencyKey }));
  const sameAs = { what: 'the POST /transfer response above', body: transfer };
  print();
  print(dim('  A network hiccup? Retrying with the same Idempotency-Key replays the answer and charges nothing more'));
  print(dim('  (the SDK does this by itself when a connection fails; here the call is repeated with the key it was given):'));
  print();
  sameAsNext = sameAs;
  const replay = await sdk('POST /transfer (retry)', mds.transfers.create(transferBody, { idempotencyKey }));
  if (lastSdkResponse?.headers['idempotent-replayed'] !== 'true' || replay.id !== transfer.id) throw new StepFailed('the retry was not replayed');

  step('Look the transfer up', 'Every field of the creation response, for the merchant that created it.');
  sameAsNext = sameAs;
  await sdk('GET /transfer/{id}', mds.transfers.get(transfer.id));

  step('Create a courier (operator CLI)', 'Couriers are the second kind of actor, with client credentials of their own.');
  const courier = JSON.parse(await cli(['couriers', 'create', '--name', 'Ivan Petrov', '--phone', '+7 900 111-22-33', '--json'], env)) as {
    clientId: string;
    clientSecret: string;
  };
  secret(courier.clientSecret);
  print(indent(pretty(courier)));

  step(
    'The courier gets a token and goes online near the warehouse',
    "The same token endpoint; the token says it is a courier's, so merchant routes refuse it (403 WRONG_ACTOR).",
  );
  const courierToken = (
    await call(base, 'POST', '/auth/token', {
      body: { grant_type: 'client_credentials', client_id: courier.clientId, client_secret: courier.clientSecret },
      expect: 200,
    })
  ).body.access_token as string;
  await call(base, 'PUT', '/courier/status', { token: courierToken, body: { online: true, lat: 55.7601, lng: 37.6187 }, expect: 200 });

  step(
    'The courier looks for jobs nearby and accepts this one',
    'Open jobs show where to collect, the destination area and the payout; nothing about the recipient. Exactly one courier wins a job.',
  );
  const jobs = (await call(base, 'GET', '/courier/jobs?radiusKm=5', { token: courierToken, expect: 200 })).body as Array<{ transferId: string }>;
  if (!jobs.some((j) => j.transferId === transfer.id)) throw new StepFailed('the paid transfer is not among the open jobs');
  await call(base, 'POST', `/courier/jobs/${transfer.id}/accept`, { token: courierToken, expect: 200 });

  step('Pickup: the warehouse shows the transferCode', 'The courier enters the code shown at the warehouse; a wrong one counts, five lock the job.');
  await call(base, 'POST', `/courier/jobs/${transfer.id}/pickup`, { token: courierToken, body: { transferCode: transfer.transferCode }, expect: 200 });

  step('Delivery: the recipient gives the deliveryPin', 'The merchant passed the PIN to the recipient; couriers never see it.');
  await call(base, 'POST', `/courier/jobs/${transfer.id}/deliver`, { token: courierToken, body: { deliveryPin: transfer.deliveryPin }, expect: 200 });

  step("The merchant follows the delivery's timeline", 'Every change is an event with a gapless sequence; webhooks deliver the same events.');
  const events = await sdk('GET /transfer/{id}/events', mds.transfers.events(transfer.id));
  if (events.at(-1)?.type !== 'transfer.delivered') throw new StepFailed('the timeline does not end with transfer.delivered');

  step(
    'Cancel another delivery before pickup and get the money back',
    'No courier has accepted it yet, so the whole price is refunded, in the same transaction.',
  );
  const second = await sdk(
    'POST /options',
    mds.quotes.create({ warehouseId: warehouse.id, destinationLocation, parcelSize: 'SMALL', deliveryType: 'DOOR_TO_DOOR' }),
  );
  const toCancel = await sdk('POST /transfer', mds.transfers.create({ ...transferBody, matchmakingId: second.id }));
  await sdk('POST /transfer/{id}/cancel', mds.transfers.cancel(toCancel.id, { reason: 'CUSTOMER_REQUESTED' }));

  step('The balance and its ledger (merchant API)', 'Top-up, two charges and one refund: the balance is always the sum of its ledger.');
  await sdk('GET /balance', mds.balance.get());

  step('Check the balance (operator CLI)', 'The operator sees the same ledger.');
  const shown = await cli(['balance', 'show', '--merchant', merchantId], env);
  print(indent(shown.trimEnd()));
  const expected = formatMinor(Number(OPENING_BALANCE) * 100 - Math.round(transfer.totalPrice * 100));
  if (!shown.includes(`balance ${expected} `)) throw new StepFailed(`expected the balance to be ${expected}: one delivery paid, one refunded`);

  print();
  print(
    green(
      bold(
        `Done: ${OPENING_BALANCE}.00 - ${transfer.totalPrice.toFixed(2)} (delivered) = ${expected} ${created.merchant.currency}. Every step answered as expected.`,
      ),
    ),
  );
}

let server: ServerChild | undefined;
const tmp = mkdtempSync(join(tmpdir(), 'mds-demo-'));
const cleanup = async () => {
  // SIGTERM (graceful: the server finishes in-flight requests and closes the database), SIGKILL after 5 s.
  await Promise.all([server?.stop(5_000), stopCommands(5_000)]);
  rmSync(tmp, { recursive: true, force: true });
};
process.once('SIGINT', () => {
  cleanup().finally(() => process.exit(130));
});

try {
  await demo(tmp);
} catch (err) {
  print();
  print(
    red(
      bold(
        `Demo failed at step ${stepNo}: ${err instanceof StepFailed || err instanceof ServerStartError ? err.message : ((err as Error).stack ?? String(err))}`,
      ),
    ),
  );
  const serverLog = server?.log().trim();
  if (serverLog) {
    print(dim('Last server log lines:'));
    print(indent(serverLog.split('\n').slice(-20).join('\n')));
  }
  process.exitCode = 1;
} finally {
  await cleanup();
}
