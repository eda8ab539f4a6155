import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cliActor } from '../src/cli/context.ts';
import { describeEachStore, type Merchant, type TestApp, warehouseBody } from './helpers/app.ts';
import { BIN, type CliResult, mds, run } from './helpers/cli.ts';
import { paidTransfer, setup, WAREHOUSE_META } from './helpers/flow.ts';
import { withSchemaLock } from './helpers/stores.ts';

const getTransfer = async (t: TestApp, m: Merchant, id: string) => (await t.as(m, { method: 'GET', url: `/transfer/${id}` })).json();

const json = (r: CliResult) => {
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
};

describeEachStore(
  'mds CLI (the real binary)',
  (ctx) => {
    test('merchants create prints working credentials once; merchants list shows the merchant', async () => {
      const t = ctx();
      const human = await mds(t, 'merchants', 'create', '--name', 'Acme Books', '--balance', '1250.50');
      assert.equal(human.code, 0, human.stderr);
      assert.match(human.stdout, /Merchant created: Acme Books/);
      assert.match(human.stdout, /balance: +1250\.50 RUB/);
      assert.match(human.stdout, /client secret: +sk_[\w-]{43}/);
      assert.match(human.stdout, /shown only this once/);

      const created = json(await mds(t, 'merchants', 'create', '--name', 'Json Shop', '--json'));
      assert.match(created.clientId, /^cli_[0-9a-f]{24}$/);
      assert.match(created.clientSecret, /^sk_[\w-]{43}$/);
      assert.equal(created.merchant.name, 'Json Shop');
      assert.equal(created.merchant.balance, '0.00');
      const token = await t.token({ clientId: created.clientId, clientSecret: created.clientSecret });
      assert.equal((await t.as(token, { method: 'GET', url: '/warehouses' })).statusCode, 200);

      const list = json(await mds(t, 'merchants', 'list', '--json'));
      assert.ok(list.merchants.some((m: { id: string; name: string }) => m.id === created.merchant.id && m.name === 'Json Shop'));
      assert.equal(JSON.stringify(list).includes(created.clientSecret), false, 'secrets are never listed');
    });

    test('credentials issue, list, revoke, delete; revoke and delete are seen by the next request', async () => {
      const t = ctx();
      const m = await t.merchant('Rotating');
      const issued = json(await mds(t, 'credentials', 'issue', '--merchant', m.merchantId, '--json'));
      assert.equal(issued.merchantId, m.merchantId);
      const list = json(await mds(t, 'credentials', 'list', '--merchant', m.merchantId, '--json'));
      assert.deepEqual(
        list.credentials.map((c: { clientId: string; status: string }) => [c.clientId, c.status]).sort(),
        [
          [issued.clientId, 'ACTIVE'],
          [m.clientId, 'ACTIVE'],
        ].sort(),
      );
      assert.equal(JSON.stringify(list).includes('sk_'), false);

      const oldToken = await t.token(m);
      const newToken = await t.token({ ...issued });
      const revoked = await mds(t, 'credentials', 'revoke', m.clientId);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal(revoked.stdout.trim(), `Revoked ${m.clientId}`);
      assert.equal((await t.as(oldToken, { method: 'GET', url: '/warehouses' })).json().type, 'CREDENTIALS_REVOKED');
      assert.equal((await t.as(newToken, { method: 'GET', url: '/warehouses' })).statusCode, 200);
      const listed = json(await mds(t, 'credentials', 'list', '--merchant', m.merchantId, '--json'));
      assert.equal(listed.credentials.find((c: { clientId: string }) => c.clientId === m.clientId).status, 'REVOKED');

      assert.deepEqual(json(await mds(t, 'credentials', 'delete', issued.clientId, '--json')), { clientId: issued.clientId, status: 'DELETED' });
      assert.equal((await t.as(newToken, { method: 'GET', url: '/warehouses' })).json().type, 'CREDENTIALS_NOT_FOUND');
    });

    test('balance top-up and show: the ledger explains the balance', async () => {
      const t = ctx();
      const m = await t.merchant('Payer', '10');
      const up = await mds(t, 'balance', 'top-up', '--merchant', m.merchantId, '--amount', '99.99', '--note', 'invoice 42');
      assert.equal(up.code, 0, up.stderr);
      assert.equal(up.stdout.trim(), 'Topped up 99.99 RUB; balance is now 109.99 RUB');
      const show = json(await mds(t, 'balance', 'show', '--merchant', m.merchantId, '--json'));
      assert.equal(show.merchant.balance, '109.99');
      assert.equal(show.ledgerSum, '109.99');
      assert.deepEqual(
        show.entries.map((e: { kind: string; amount: string; balanceAfter: string; note: string | null }) => [e.kind, e.amount, e.balanceAfter, e.note]),
        [
          ['TOP_UP', '10.00', '10.00', 'opening balance'],
          ['TOP_UP', '99.99', '109.99', 'invoice 42'],
        ],
      );
      const text = await mds(t, 'balance', 'show', '--merchant', m.merchantId);
      assert.match(text.stdout, /^Payer: balance 109\.99 RUB$/m);
    });

    test('balance adjust: a signed correction with a reason, audited as cli; below zero is refused and changes nothing', async () => {
      const t = ctx();
      const m = await t.merchant('Corrected', '50');
      const down = await mds(t, 'balance', 'adjust', '--merchant', m.merchantId, '--amount', '-12.50', '--reason', 'Mistaken top-up 9');
      assert.equal(down.code, 0, down.stderr);
      assert.equal(down.stdout.trim(), 'Adjusted by -12.50 RUB; balance is now 37.50 RUB');
      const up = json(await mds(t, 'balance', 'adjust', '--merchant', m.merchantId, '--amount', '2.5', '--reason', 'Rounding', '--json'));
      assert.deepEqual({ balance: up.merchant.balance, amount: up.amount }, { balance: '40.00', amount: '2.50' });
      const tooMuch = await mds(t, 'balance', 'adjust', '--merchant', m.merchantId, '--amount', '-40.01', '--reason', 'Too much', '--json');
      assert.equal(tooMuch.code, 1);
      assert.deepEqual(JSON.parse(tooMuch.stdout), {
        error: 'INSUFFICIENT_BALANCE',
        message: 'An adjustment cannot take the balance below zero: it is 40.00',
      });
      const noReason = await mds(t, 'balance', 'adjust', '--merchant', m.merchantId, '--amount', '-1');
      assert.equal(noReason.code, 2);
      assert.match(noReason.stderr, /--reason/);
      const show = json(await mds(t, 'balance', 'show', '--merchant', m.merchantId, '--json'));
      assert.equal(show.ledgerSum, '40.00');
      assert.deepEqual(
        show.entries.map((e: { kind: string; amount: string; balanceAfter: string; note: string | null; createdBy: string | null }) => [
          e.kind,
          e.amount,
          e.balanceAfter,
          e.note,
          e.createdBy,
        ]),
        [
          ['TOP_UP', '50.00', '50.00', 'opening balance', null],
          ['ADJUSTMENT', '-12.50', '37.50', 'Mistaken top-up 9', `cli (${userInfo().username})`],
          ['ADJUSTMENT', '2.50', '40.00', 'Rounding', `cli (${userInfo().username})`],
        ],
      );
      const audit = (await t.services.audit.search({ action: 'merchant.adjust', subjectId: m.merchantId })).items;
      assert.deepEqual(
        audit.map((a) => [a.operator.label, a.reason, a.before, a.after]),
        [
          [`cli (${userInfo().username})`, 'Rounding', { balance: '37.50' }, { balance: '40.00', amount: '2.50' }],
          [`cli (${userInfo().username})`, 'Mistaken top-up 9', { balance: '50.00' }, { balance: '37.50', amount: '-12.50' }],
        ],
      );
    });

    test('transfers list, show, events, assign, advance and cancel: support moves any transfer, audited as operator events with the reason', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const list = json(await mds(t, 'transfers', 'list', '--merchant', m.merchantId, '--json'));
      assert.deepEqual(list.transfers, [await getTransfer(t, m, tr.id)]);
      const text = await mds(t, 'transfers', 'list', '--merchant', m.merchantId);
      assert.match(text.stdout, new RegExp(`^${tr.id}  ${tr.createdAt}  inProgress +516 RUB$`, 'm'));
      const shown = json(await mds(t, 'transfers', 'show', tr.id, '--json'));
      assert.deepEqual(shown, { ...tr, merchantId: m.merchantId });

      // An assignment names its courier: advance refuses it and points to assign.
      const advanced = await mds(t, 'transfers', 'advance', tr.id, '--to', 'courierAssigned', '--reason', 'x', '--json');
      assert.deepEqual(JSON.parse(advanced.stdout), {
        error: 'VALIDATION_FAILED',
        message: 'Assign a courier with mds transfers assign ID --courier COURIER_ID --reason TEXT',
      });
      const courier = await t.courier('Ivan Petrov');
      const assigned = await mds(t, 'transfers', 'assign', tr.id, '--courier', courier.courierId, '--reason', 'regular courier of this shop');
      assert.equal(assigned.stdout.trim(), `Transfer ${tr.id} is now courierAssigned (courier Ivan)`);
      const [assignedEvent] = (await t.services.transfers.events(undefined, tr.id)).filter((e) => e.type === 'transfer.courier_assigned');
      const user = (cliActor() as { machineUser: string }).machineUser;
      assert.deepEqual(
        { actor: assignedEvent.actor, data: assignedEvent.data },
        {
          // The CLI's changes name it with the machine user running it; the courier is in data.
          actor: { type: 'operator', id: `cli:${user}`, name: `cli (${user})` },
          data: {
            previousState: 'inProgress',
            courier: { firstName: 'Ivan' },
            comment: 'regular courier of this shop',
            estimatedPickupAt: (assignedEvent.data as Record<string, unknown>).estimatedPickupAt,
            estimatedDeliveryAt: (assignedEvent.data as Record<string, unknown>).estimatedDeliveryAt,
          },
        },
      );
      const picked = await mds(t, 'transfers', 'advance', tr.id, '--to', 'pickedUp', '--reason', 'scanned at the warehouse');
      assert.equal(picked.stdout.trim(), `Transfer ${tr.id} is now pickedUp`);
      const refused = await mds(t, 'transfers', 'advance', tr.id, '--to', 'inProgress', '--reason', 'Courier asked', '--json');
      assert.equal(refused.code, 1);
      assert.deepEqual(JSON.parse(refused.stdout), {
        error: 'TRANSITION_NOT_ALLOWED',
        message: `Transfer ${tr.id} is pickedUp; from there it can move to: delivered, returning, cancelled`,
      });
      // After pickup only support can cancel: a full refund.
      const cancelled = await mds(t, 'transfers', 'cancel', tr.id, '--reason', 'parcel lost, refunded by support');
      assert.equal(cancelled.stdout.trim(), `Transfer ${tr.id} is now cancelled (refunded 516 RUB)`);
      const got = await getTransfer(t, m, tr.id);
      assert.deepEqual(got.cancellation, {
        reason: 'OPERATOR',
        comment: 'parcel lost, refunded by support',
        actor: 'operator',
        refundAmount: 516,
        cancelledAt: got.updatedAt,
      });
      const balance = json(await mds(t, 'balance', 'show', '--merchant', m.merchantId, '--json'));
      assert.deepEqual(
        balance.entries.map((e: { kind: string; amount: string; transferId: string | null }) => [e.kind, e.amount, e.transferId]),
        [
          ['TOP_UP', '1000.00', null],
          ['CHARGE', '-516.00', tr.id],
          ['REFUND', '516.00', tr.id],
        ],
      );
      const events = json(await mds(t, 'transfers', 'events', tr.id, '--json')).events;
      assert.deepEqual(
        events.slice(2).map((e: { type: string; actor: { type: string }; data: Record<string, unknown> }) => [e.type, e.actor.type, e.data.comment]),
        [
          ['transfer.courier_assigned', 'operator', 'regular courier of this shop'],
          ['transfer.picked_up', 'operator', 'scanned at the warehouse'],
          ['transfer.cancelled', 'operator', 'parcel lost, refunded by support'],
        ],
      );
      const bad = await mds(t, 'transfers', 'advance', tr.id, '--to', 'flying', '--reason', 'x');
      assert.equal(bad.code, 2);
      assert.match(
        bad.stderr,
        /option '--to <state>' argument 'flying' is invalid\. Allowed choices are inProgress, courierAssigned, pickedUp, delivered, returning, returned, cancelled/,
      );
      assert.match((await mds(t, 'transfers', 'cancel', tr.id)).stderr, /required option '--reason <text>' not specified/);
    });

    test('merchants create --sandbox makes a sandbox merchant whose transfers the simulated courier drives', async () => {
      const t = ctx();
      const created = json(await mds(t, 'merchants', 'create', '--name', 'Play shop', '--balance', '1000', '--sandbox', '--json'));
      assert.equal(created.merchant.mode, 'sandbox');
      const human = await mds(t, 'merchants', 'create', '--name', 'Play shop 2', '--sandbox');
      assert.match(human.stdout, /Merchant created: Play shop 2 \(SANDBOX: play money, simulated courier\)/);
      const m = { merchantId: created.merchant.id, clientId: created.clientId, clientSecret: created.clientSecret };
      const w = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ locationMetadata: WAREHOUSE_META }) })).json();
      const tr = await paidTransfer(t, m, w.id);
      assert.equal(tr.sandbox, true);
      const res = await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to: 'courierAssigned' } });
      assert.equal(res.json().state, 'courierAssigned');
    });

    test('tariffs show and set; an invalid file is rejected with its problems and changes nothing', async () => {
      const t = ctx();
      const shown = json(await mds(t, 'tariffs', 'show', '--json'));
      assert.ok(shown.document.products.standard);
      const dir = mkdtempSync(join(tmpdir(), 'mds-tariff-'));
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, JSON.stringify({ ...shown.document, parcelSizeFactors: { SMALL: '1' } }));
      const refused = await mds(t, 'tariffs', 'set', bad);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /Invalid tariff:/);
      assert.match(refused.stderr, /\/parcelSizeFactors\/MEDIUM is required/);
      assert.deepEqual(json(await mds(t, 'tariffs', 'show', '--json')), shown, 'nothing changed');
      const notJson = join(dir, 'x.json');
      writeFileSync(notJson, '{nope');
      const unreadable = await mds(t, 'tariffs', 'set', notJson);
      assert.equal(unreadable.code, 1);
      assert.match(unreadable.stderr, /cannot read .* as JSON/);

      const good = join(dir, 'good.json');
      const doc = structuredClone(shown.document);
      doc.products.standard.serviceFee = 3100;
      writeFileSync(good, JSON.stringify(doc));
      const set = json(await mds(t, 'tariffs', 'set', good, '--json'));
      assert.equal(set.version, shown.version + 1);
      const now = json(await mds(t, 'tariffs', 'show', '--json'));
      assert.equal(now.version, set.version);
      assert.equal(now.document.products.standard.serviceFee, 3100);
      writeFileSync(good, JSON.stringify(shown.document)); // restore
      json(await mds(t, 'tariffs', 'set', good, '--json'));
    });

    test('migrate and keys generate', async () => {
      const t = ctx();
      // Under the schema lock on PostgreSQL: the migrator introspects every schema (see stores.ts).
      const migrated = json(t.store.name === 'postgres' ? await withSchemaLock(() => mds(t, 'migrate', '--json')) : await mds(t, 'migrate', '--json'));
      assert.deepEqual(migrated, { applied: [] }, 'already at the latest version');
      const key = json(await mds(t, 'keys', 'generate', '--json'));
      assert.match(key.key, /^[A-Za-z0-9_-]+:[A-Za-z0-9_-]{43}$/);
    });

    test('bad arguments print a clear message and exit non-zero', async () => {
      const t = ctx();
      const cases: Array<[string[], number, RegExp]> = [
        [['merchants', 'create'], 2, /required option '--name <name>' not specified/],
        [['merchants', 'create', '--name', 'X', '--balance', '12.345'], 2, /at most two decimals/],
        [['merchants', 'create', '--name', 'X', '--balance', '-5'], 2, /amount must look like 1250 or 1250\.50/],
        [['merchants', 'create', '--name', 'X', '--balance', '80000000000000'], 2, /amount 80000000000000 is too large: at most 9999999999999\.99/],
        [['merchants', 'create', '--name', 'a\nb'], 1, /Merchant name must be 1 to 200 characters without control characters/],
        [['merchants', 'explode'], 2, /unknown command 'explode'/],
        [['merchants', 'lst'], 2, /unknown command 'lst'\n\(Did you mean list\?\)/],
        [['merchants', 'create', '--name', 'X', '--balanse', '5'], 2, /unknown option '--balanse'\n\(Did you mean --balance\?\)/],
        [['merchants', 'list', '--frobnicate'], 2, /unknown option '--frobnicate'/],
        [['balance', 'top-up', '--merchant', '01a20058-cb4a-7657-ba2b-fa105300957e', '--amount', '5'], 1, /No merchant 01a20058-cb4a-7657-ba2b-fa105300957e/],
        [['credentials', 'revoke', 'cli_nobody'], 1, /No credential with client id cli_nobody/],
        [['credentials', 'revoke'], 2, /missing required argument 'clientId'/],
        [['balance', 'top-up', '--merchant', 'x', '--amount', '0'], 1, /Top-up amount must be positive/],
      ];
      for (const [args, code, message] of cases) {
        const r = await mds(t, ...args);
        assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, message, args.join(' '));
      }
      // --json: every error is one JSON object on stdout with a stable code (nothing else there).
      const jsonCases: Array<[string[], { error: string; message: string | RegExp }]> = [
        [['credentials', 'delete', 'cli_nobody', '--json'], { error: 'CLIENT_NOT_FOUND', message: 'No credential with client id cli_nobody' }],
        [['merchants', 'create', '--name', 'X', '--balance', '-5', '--json'], { error: 'USAGE', message: /amount must look like/ }],
        [['merchants', 'lst', '--json'], { error: 'USAGE', message: /unknown command 'lst'/ }],
        [['merchants', 'create', '--name', 'a\tb', '--json'], { error: 'VALIDATION_FAILED', message: /without control characters/ }],
      ];
      for (const [args, expected] of jsonCases) {
        const r = await mds(t, ...args);
        const body = JSON.parse(r.stdout);
        assert.deepEqual(Object.keys(body), ['error', 'message'], args.join(' '));
        assert.equal(body.error, expected.error, args.join(' '));
        if (typeof expected.message === 'string') assert.equal(body.message, expected.message);
        else assert.match(body.message, expected.message);
      }
      const listed = await mds(t, 'merchants', 'list', '--json');
      assert.match(listed.stderr, /^mds: database (\/|postgres:\/\/)\S+/m, 'which database a command opened, on stderr');
      const perCommand = await mds(t, 'merchants', 'create', '--help');
      assert.equal(perCommand.code, 0);
      assert.match(perCommand.stdout, /Usage: mds merchants create \[options\][\s\S]*--sandbox/);
      const helpCommand = await mds(t, 'help', 'transfers');
      assert.equal(helpCommand.code, 0);
      assert.match(helpCommand.stdout, /Usage: mds transfers \[options\] \[command\][\s\S]*advance/);
      const help = await mds(t, '--help');
      assert.equal(help.code, 0);
      assert.match(help.stdout, /Usage: mds \[options\] \[command\]/);
      // Asking for help is not a usage error; a group without its subcommand, or no command at all, is.
      const helpAlone = await mds(t, 'help');
      assert.equal(helpAlone.code, 0);
      assert.equal(helpAlone.stdout, help.stdout);
      const groupAlone = await mds(t, 'transfers');
      assert.equal(groupAlone.code, 2);
      assert.match(groupAlone.stderr, /Usage: mds transfers \[options\] \[command\]/);
      assert.equal((await mds(t)).code, 2);
    });

    test('invalid configuration fails fast with every problem listed', async () => {
      const t = ctx();
      const r = await run(process.execPath, [BIN, 'merchants', 'list'], {
        env: { ...process.env, ...t.store.env, PORT: 'eighty', CURRENCY: 'rub', DATABASE_URL: 'mysql://x' },
      }).catch((e) => e);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /Invalid configuration:/);
      assert.match(r.stderr, /PORT must be a whole number from 0 to 65535, got "eighty"/);
      assert.match(r.stderr, /CURRENCY must be an ISO 4217 code/);
      assert.match(r.stderr, /DATABASE_URL must start with sqlite:, file:, postgres:\/\/ or postgresql:\/\//);
    });
  },
  { AUTH_CACHE_TTL_MS: '0' }, // the CLI is another process: with no cache the next request sees its change at once
);
