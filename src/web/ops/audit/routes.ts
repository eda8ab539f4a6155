import type { FastifyInstance } from 'fastify';
import { dateStart, refusalMessage, type TimeView, timeView } from '../../dashboard/format.ts';
import { queryParam } from '../../forms.ts';
import { render } from '../../render.ts';
import { requirePerson } from '../../session.ts';
import { CAN } from '../operator.ts';

/** The audit log: every operator action (console and CLI), newest first, searchable; read-only (there is no route that changes it). */

export interface OpsAuditView {
  title: string;
  q: string;
  filters: { from: string; to: string; tz: string; operator: string };
  operators: Array<{ id: string; label: string }>;
  rows: Array<{ at: TimeView; who: string; action: string; subject: string; subjectHref: string | null; reason: string; before: string; after: string }>;
  nextHref: string | null;
  error: string | null;
}

const SUBJECT_PAGES: Record<string, string> = { transfer: '/ops/transfers/', merchant: '/ops/merchants/' };

export async function opsAuditPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('operator', CAN.read));

  app.get('/', async (request, reply) => {
    const q = queryParam(request, 'q').slice(0, 200);
    const filters = {
      from: queryParam(request, 'from'),
      to: queryParam(request, 'to'),
      tz: queryParam(request, 'tz'),
      operator: queryParam(request, 'operator'),
    };
    const operators = (await app.services.accounts.listOperators()).map((p) => ({ id: p.id, label: `${p.name} (${p.role})` }));
    let rows: OpsAuditView['rows'] = [];
    let nextHref: string | null = null;
    let error: string | null = null;
    try {
      const page = await app.services.audit.search({
        q,
        operatorId: operators.some((o) => o.id === filters.operator) ? filters.operator : undefined,
        from: filters.from ? dateStart(filters.from, filters.tz, 'From') : undefined,
        to: filters.to ? dateStart(filters.to, filters.tz, 'To', true) : undefined,
        cursor: queryParam(request, 'cursor') || undefined,
        limit: 50,
      });
      rows = page.items.map((e) => ({
        at: timeView(e.occurredAt),
        who: e.operator.label,
        action: e.action,
        subject: `${e.subjectType}${e.subjectId ? ` ${e.subjectId}` : ''}`,
        subjectHref: e.subjectId && SUBJECT_PAGES[e.subjectType] ? `${SUBJECT_PAGES[e.subjectType]}${e.subjectId}` : null,
        reason: e.reason ?? '',
        before: e.before === null ? '' : JSON.stringify(e.before).slice(0, 400),
        after: e.after === null ? '' : JSON.stringify(e.after).slice(0, 400),
      }));
      if (page.nextCursor) nextHref = `/ops/audit?${new URLSearchParams({ q, ...filters, cursor: page.nextCursor })}`;
    } catch (err) {
      error = refusalMessage(err);
    }
    return render<OpsAuditView>(reply, 'ops/audit/audit.eta', { title: 'Audit log', q, filters, operators, rows, nextHref, error }, error ? 400 : 200);
  });
}
