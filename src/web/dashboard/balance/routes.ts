import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { exportRange } from '../../../lib/csv.ts';
import { queryParam } from '../../forms.ts';
import { render } from '../../render.ts';
import { merchantOf, requirePerson } from '../../session.ts';
import { dateStart, LEDGER_KIND_LABELS, money, refusalMessage, type TimeView, timeView } from '../format.ts';

/**
 * Balance: the balance, the ledger a page at a time (GET /balance's service call), and CSV downloads of
 * the ledger and of the deliveries of a date range, with the balance at both ends of it. Read-only for
 * every role: nothing here changes money.
 */

export interface BalanceView {
  title: string;
  balance: string;
  mode: string;
  entries: Array<{ at: TimeView; kind: string; amount: string; balanceAfter: string; transferHref: string | null; note: string | null; credit: boolean }>;
  nextHref: string | null;
  firstHref: string | null;
  range: { from: string; to: string; tz: string };
  change: { opening: string; closing: string; change: string } | null;
  error: string | null;
}

export async function balancePages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('merchant'));
  const s = app.services;

  /** The form's calendar dates (to inclusive) as the export's [from, to) instants; both required. */
  function range(request: FastifyRequest): { from: string; to: string } {
    const tz = queryParam(request, 'tz');
    const from = dateStart(queryParam(request, 'from'), tz, 'from');
    const to = dateStart(queryParam(request, 'to'), tz, 'to', true);
    exportRange({ from, to }); // refuse an empty or reversed range before any byte of the file is sent
    return { from, to };
  }

  async function page(request: FastifyRequest, reply: FastifyReply, error: string | null, status = 200) {
    const me = merchantOf(request);
    const cursor = queryParam(request, 'cursor');
    const r = { from: queryParam(request, 'from'), to: queryParam(request, 'to'), tz: queryParam(request, 'tz') };
    let change: BalanceView['change'] = null;
    if (!error && r.from && r.to) {
      try {
        const c = await s.merchants.balanceChange(me.merchantId, range(request));
        change = { opening: money(c.opening, c.currency), closing: money(c.closing, c.currency), change: money(c.change, c.currency) };
      } catch (err) {
        error = refusalMessage(err);
        status = 400;
      }
    }
    let ledger: Awaited<ReturnType<typeof s.merchants.balancePage>>;
    try {
      ledger = await s.merchants.balancePage(me.merchantId, { limit: 50, cursor: cursor || undefined });
    } catch (err) {
      error = refusalMessage(err);
      status = 400;
      ledger = await s.merchants.balancePage(me.merchantId, { limit: 50 });
    }
    const cur = ledger.merchant.currency;
    const keep = new URLSearchParams(Object.entries(r).filter(([, v]) => v !== ''));
    const href = (c?: string) => {
      const q = new URLSearchParams(keep);
      if (c) q.set('cursor', c);
      const text = q.toString();
      return `/dashboard/balance${text ? `?${text}` : ''}`;
    };
    return render<BalanceView>(
      reply,
      'dashboard/balance/balance.eta',
      {
        title: 'Balance',
        balance: money(ledger.merchant.balance, cur),
        mode: ledger.merchant.mode,
        entries: ledger.entries.map((e) => ({
          at: timeView(e.createdAt),
          kind: LEDGER_KIND_LABELS[e.kind] ?? e.kind,
          amount: money(e.amount, cur),
          balanceAfter: money(e.balanceAfter, cur),
          transferHref: e.transferId ? `/dashboard/deliveries/${e.transferId}` : null,
          note: e.note,
          credit: e.amountMinor > 0,
        })),
        nextHref: ledger.nextCursor ? href(ledger.nextCursor) : null,
        firstHref: cursor ? href() : null,
        range: r,
        change,
        error,
      },
      status,
    );
  }

  app.get('/', async (request, reply) => page(request, reply, null));

  async function download(request: FastifyRequest, reply: FastifyReply, kind: 'ledger' | 'deliveries') {
    const me = merchantOf(request);
    let r: { from: string; to: string };
    try {
      r = range(request);
    } catch (err) {
      return page(request, reply, refusalMessage(err), 400);
    }
    const lines = kind === 'ledger' ? s.merchants.ledgerCsv(me.merchantId, r) : s.transfers.exportCsv(me.merchantId, r);
    const name = `${kind}-${queryParam(request, 'from')}-to-${queryParam(request, 'to')}.csv`;
    return reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${name.replace(/[^\w.-]/g, '')}"`)
      .send(Readable.from(lines));
  }

  app.get('/ledger.csv', async (request, reply) => download(request, reply, 'ledger'));
  app.get('/deliveries.csv', async (request, reply) => download(request, reply, 'deliveries'));
}
